// Package roundtrip is the benchmark tool that measures the notification
// round trip alone: the command launched exactly as permwrap launches it
// (supervisor.RunServed: watchdog, Landlock, the same filter derived from
// the same table and policy, the same hand-off), with every notification
// answered CONTINUE by a receiving pool of the supervisor's size whose
// workers keep the receiving role while the target calls serially and
// wait blind, as permwrap's pool does (supervisor/receive): the cheapest
// receiver measured for a CONTINUE-only supervisor (docs/kernel.md, "The
// receiver: the pool and the receiving role"). What it costs is the
// kernel's round trip alone, what scripts/bench measures permwrap
// against (internal/cmd/roundtrip). It enforces nothing beyond Landlock
// and the filter's refusals: a benchmark tool, not a sandbox.
package roundtrip

import (
	"context"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/host"
	"github.com/permwrap/permwrap/notify/pin"
	"github.com/permwrap/permwrap/supervisor"
	"github.com/permwrap/permwrap/supervisor/receive"
)

// Options choose how the notifications are answered.
type Options struct {
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

// Run runs cfg.Argv as supervisor.Run does, on permwrap's own terminal,
// answering every notification with CONTINUE (or, with o.Emulate,
// emulating opens).
func Run(ctx context.Context, cfg supervisor.Config, o Options) (int, error) {
	cfg.SyncWakeUp = o.SyncWakeUp
	cfg.NoRelay = true
	return supervisor.RunServed(ctx, cfg, func(l *notify.Listener) { serve(l, o) })
}

// serve serves l until the filter has no users left: receive.Workers()
// workers taking turns at one receiving role, with no monitor (nothing
// it answers can take long).
func serve(l *notify.Listener, o Options) {
	receive.BlindWait(l) // as permwrap's pool waits
	var wg sync.WaitGroup
	var r receive.Role
	for range receive.Workers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answer := func(n *notify.Notif, _ *notify.Quiet) bool { _ = l.Continue(n.ID); return true }
			if o.Emulate {
				answer = func(n *notify.Notif, q *notify.Quiet) bool { emulate(l, n, q); return true }
			}
			receive.Loop(l, &r, keepsRole, answer, func(error) {})
		}()
	}
	wg.Wait()
}

// keepsRole is the table's KeepsRole for a server that verifies no exec:
// its verification stop is a bare CONTINUE like any other call, so the
// role is kept for it (a worker woken per spawn cost the round trip 6–8%
// on 300 × /bin/true; keeping it through the exec itself did not help).
func keepsRole(n *notify.Notif) bool {
	return supervisor.IsExecStop(n.Nr) || supervisor.KeepsRole(n)
}

// emulate answers one notification for the emulating server.
// q: as permwrap's pool installs an fd (notify.Quiet).
func emulate(l *notify.Listener, n *notify.Notif, q *notify.Quiet) {
	// The table says where the open's arguments are (creat has no dirfd
	// and no flags).
	adirfd, apath, aflags, amode, ok := supervisor.OpenArgs(n.Nr)
	if !ok {
		_ = l.Continue(n.ID)
		return
	}
	dirfd, flags := unix.AT_FDCWD, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC
	if adirfd != supervisor.ArgNone {
		dirfd = int(int32(n.Args[adirfd]))
	}
	if aflags != supervisor.ArgNone {
		flags = int(n.Args[aflags])
	}
	addr, mode := n.Args[apath], uint32(n.Args[amode])
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
		_ = l.RespondError(n.ID, pin.Errno(err))
		return
	}
	if _, err := l.AddFDQuiet(n.ID, fd, flags&unix.O_CLOEXEC != 0, q); err != nil {
		_ = l.RespondError(n.ID, unix.EIO)
	}
	host.Close(fd)
}
