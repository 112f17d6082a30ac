package supervisor

import (
	"context"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/host"
	"github.com/permwrap/permwrap/supervisor/receive"
)

// The floor: the command launched exactly as Run launches it (watchdog,
// Landlock, the same filter derived from the same table and policy, the
// same hand-off), with every notification answered CONTINUE by a receiving
// pool of the supervisor's size whose workers keep the receiving role
// while the target calls serially (receive.Role) and wait blind
// (notify.Listener.SetBlindWait), as permwrap's pool does: the cheapest
// receiver measured for a CONTINUE-only supervisor (docs/kernel.md, "The
// receiver", "The fourth round"). What it costs is the kernel's round
// trip alone, the floor scripts/bench measures permwrap against. It
// enforces nothing beyond Landlock and the filter's refusals: a benchmark
// tool, not a sandbox.

// FloorOptions choose how the floor answers.
type FloorOptions struct {
	// SyncWakeUp sets SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP on the listener.
	SyncWakeUp bool
	// Emulate answers open, openat and creat the cheapest way an
	// emulating supervisor can: read the path, open it (through the
	// target's /proc/PID/cwd or /proc/PID/fd/N when relative), install
	// the fd with ADDFD|SEND. Every other call is continued. It judges
	// nothing and re-resolves strings the target can change: the price
	// of emulation alone, not a sound supervisor.
	Emulate bool
}

// RunFloor runs cfg.Argv as Run does, answering every notification with
// CONTINUE.
func RunFloor(ctx context.Context, cfg Config, o FloorOptions) (int, error) {
	cfg.SyncWakeUp = o.SyncWakeUp
	cfg.serve = func(l *notify.Listener) {
		receive.BlindWait(l) // as permwrap's pool waits
		var wg sync.WaitGroup
		var r receive.Role
		for range receive.Workers() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answer := func(n *notify.Notif, _ *notify.Quiet) bool { _ = l.Continue(n.ID); return true }
				if o.Emulate {
					answer = func(n *notify.Notif, q *notify.Quiet) bool { floorEmulate(l, n, q); return true }
				}
				receive.Loop(l, &r, floorKeepsRole, answer, func(error) {})
			}()
		}
		wg.Wait()
	}
	cfg.NoRelay = true
	return Run(ctx, cfg)
}

// floorKeepsRole is keepsRole for the floor, which verifies no exec: its
// verification stop is a bare CONTINUE like any other call, so the role
// is kept for it (a worker woken per spawn cost the floor 6–8% on 300 ×
// /bin/true; keeping it through the exec itself did not help).
func floorKeepsRole(n *notify.Notif) bool {
	return isExecStop(n.Nr) || keepsRole(n)
}

// floorEmulate answers one notification for the emulating floor.
// q: as permwrap's pool installs an fd (notify.Quiet).
func floorEmulate(l *notify.Listener, n *notify.Notif, q *notify.Quiet) {
	row := rows[n.Nr]
	if row == nil || row.open == nil {
		_ = l.Continue(n.ID)
		return
	}
	// The row says where the open's arguments are (creat has no dirfd
	// and no flags).
	a := row.open
	dirfd, flags := unix.AT_FDCWD, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC
	if a.dirfd != argNone {
		dirfd = int(int32(n.Args[a.dirfd]))
	}
	if a.flags != argNone {
		flags = int(n.Args[a.flags])
	}
	addr, mode := n.Args[a.path], uint32(n.Args[a.mode])
	p, err := notify.ReadString(int(n.Pid), addr, unix.PathMax)
	if err != nil || p == "" {
		_ = l.Continue(n.ID)
		return
	}
	if p[0] != '/' {
		pid := strconv.Itoa(int(n.Pid))
		if dirfd == unix.AT_FDCWD {
			p = "/proc/" + pid + "/cwd/" + p
		} else {
			p = "/proc/" + pid + "/fd/" + strconv.Itoa(dirfd) + "/" + p
		}
	}
	fd, err := host.Open(p, flags|unix.O_CLOEXEC, mode)
	if err != nil {
		_ = l.RespondError(n.ID, errnoOf(err))
		return
	}
	if _, err := l.AddFDQuiet(n.ID, fd, flags&unix.O_CLOEXEC != 0, q); err != nil {
		_ = l.RespondError(n.ID, unix.EIO)
	}
	host.Close(fd)
}
