package supervisor

import (
	"context"

	"github.com/permwrap/permwrap/notify"
)

// For benchmark tools (internal/roundtrip): the launch without the
// supervisor, and the few facts of the syscall table a listener served
// without it needs. None of this is a sandbox.

// RunServed runs cfg.Argv exactly as Run does — the watchdog, Landlock,
// the same filter derived from the same table and policy, the same
// hand-off — but serve serves the listener instead of the supervisor,
// until the filter has no users left or the listener is closed. For
// benchmark tools: it enforces nothing beyond Landlock and the filter's
// refusals.
func RunServed(ctx context.Context, cfg Config, serve func(l *notify.Listener)) (int, error) {
	cfg.serve = serve
	return Run(ctx, cfg)
}

// KeepsRole reports whether the table lets a worker holding the receiving
// role keep it while it handles n: every call but an exec and its
// verification stop (IsExecStop). For benchmark tools; the supervisor
// also keeps the stop of an exec verified already.
func KeepsRole(n *notify.Notif) bool { return keepsRole(n) }

// IsExecStop reports whether nr is the exec verification stop, the call
// right after an exec that the supervisor verifies the exec at. For
// benchmark tools, which verify nothing.
func IsExecStop(nr int32) bool { return isExecStop(nr) }

// ArgNone is an argument position OpenArgs reports absent.
const ArgNone = argNone

// OpenArgs reports where the arguments of the open nr are (ArgNone: the
// call has no such argument: creat has no dirfd and no flags), and ok
// false when nr is no open the table knows to emulate (open, openat,
// creat). For benchmark tools that emulate opens.
func OpenArgs(nr int32) (dirfd, path, flags, mode int, ok bool) {
	r := rowOf(nr)
	if r == nil || r.open == nil {
		return ArgNone, ArgNone, ArgNone, ArgNone, false
	}
	a := r.open
	return a.dirfd, a.path, a.flags, a.mode, true
}
