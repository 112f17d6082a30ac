package supervisor

import (
	"context"
	"sync"
	"time"

	"github.com/permwrap/permwrap/notify"
)

// The floor: the command launched exactly as Run launches it (watchdog,
// Landlock, the same filter derived from the same table and policy, the
// same hand-off), with every notification answered CONTINUE by a receiving
// pool of the supervisor's size whose workers keep the receiving role
// while the target calls serially (role.go): the cheapest receiver
// measured for a CONTINUE-only supervisor, cheaper than the hand-off
// permwrap's own pool makes at every call (docs/kernel.md, "The
// receiver"). What it costs is the kernel's round trip alone, the floor
// scripts/bench measures permwrap against. It enforces
// nothing beyond Landlock and the filter's refusals: a benchmark tool, not
// a sandbox.

// FloorOptions choose how the floor answers.
type FloorOptions struct {
	// SyncWakeUp sets SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP on the listener.
	SyncWakeUp bool
}

// RunFloor runs cfg.Argv as Run does, answering every notification with
// CONTINUE.
func RunFloor(ctx context.Context, cfg Config, o FloorOptions) (int, error) {
	cfg.SyncWakeUp = o.SyncWakeUp
	cfg.serve = func(l *notify.Listener) {
		var wg sync.WaitGroup
		var r role
		for range workers() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				receiveLoop(l, &r, func(n *notify.Notif) bool { _ = l.Continue(n.ID); return true }, func(error) {}, time.Sleep)
			}()
		}
		wg.Wait()
	}
	cfg.NoRelay = true
	return Run(ctx, cfg)
}
