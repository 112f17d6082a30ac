package supervisor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/permwrap/permwrap/internal/procfs"
	"github.com/permwrap/permwrap/notify/host"
	"golang.org/x/sys/unix"
)

// The watchdog is a small process between the supervisor and the sandboxed
// tree:
//
//	permwrap (supervisor, subreaper)
//	└── permwrap __permwrap_init watchdog   (outside the sandbox, subreaper)
//	    └── the command (was the sandbox stage) and everything it starts
//
// It exists so that no process of the tree outlives the supervisor. A
// subreaper inherits every orphan beneath it, so whatever the tree
// double-forks, setsids or daemonises stays a descendant of the watchdog.
// When the supervisor dies (kill -9 included) the watchdog sees its end of
// the life pipe close and SIGKILLs every descendant. Without it, processes
// that make no notified syscall (a busy loop, a daemon writing to an fd it
// already holds) would run on unsupervised.
//
// The watchdog also starts the sandbox stage, with Pdeathsig, from a thread
// that is locked for its whole life: Pdeathsig fires when the *thread* that
// forked the child exits, and Go ends a thread whose goroutine exits while
// locked (the supervisor does that on purpose, e.g. after unshare(CLONE_FS)
// for a bind). The supervisor itself sets no Pdeathsig on anything.
//
// The watchdog exits with the command's status (its exit code, or 128+N
// when it died of signal N), after the command has exited and every
// leftover descendant has been killed.

// lifeFd is the watchdog's end of the life pipe: the supervisor never
// writes to it, so a read returns only when the supervisor is gone.
const lifeFd = 5

// How the sandbox stage attaches to the terminal (the watchdog's
// argument).
const (
	attachGroup      = "pgrp"       // its own process group
	attachForeground = "foreground" // its own process group, made the terminal's foreground
	attachSession    = "session"    // its own session, fd 0 (the relayed pty) its controlling terminal
)

// runWatchdog is the watchdog stage; fds 0–2 are the command's stdio,
// handoffFd and specFd go to the sandbox stage, lifeFd is the life pipe.
func runWatchdog(args []string) int {
	// Locked for good: this goroutine forks the sandbox stage and returns
	// only for the process to exit, so the thread that is the sandbox
	// stage's parent never ends first.
	runtime.LockOSThread()
	// The life pipe is the watchdog's alone: the sandbox stage, and the
	// command after it, would otherwise inherit it (it came without
	// close-on-exec, as an inherited fd does), an fd a bare run lacks.
	unix.CloseOnExec(lifeFd)
	handoff := os.NewFile(handoffFd, "handoff")
	spec := os.NewFile(specFd, "spec")
	life := os.NewFile(lifeFd, "life")
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "permwrap: watchdog: "+format+"\n", a...)
		_, _ = host.Write(handoffFd, []byte{handoffFailed})
		return initExitInternal
	}
	if len(args) != 1 {
		return fail("bad arguments")
	}
	sys := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	switch args[0] {
	case attachGroup:
		sys.Setpgid = true
	case attachForeground:
		sys.Setpgid, sys.Foreground, sys.Ctty = true, true, 0
	case attachSession:
		sys.Setsid, sys.Setctty, sys.Ctty = true, true, 0
	default:
		return fail("bad arguments")
	}
	if err := host.Subreaper(); err != nil {
		return fail("becoming a subreaper: %v", err)
	}
	// Signals meant for the command reach it from the supervisor (or the
	// terminal); the watchdog must outlive the command to report its
	// status. Caught, not ignored: an ignored disposition would be
	// inherited by the command through exec — except for the signals
	// permwrap itself was started with ignored, which stay ignored for
	// the command too (host.Notify leaves them out).
	quiet := make(chan os.Signal, 8)
	host.Notify(quiet, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGPIPE)
	go func() {
		for range quiet {
		}
	}()
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, unix.SIGCHLD)
	lifeGone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, life)
		close(lifeGone)
	}()

	proc, err := os.StartProcess("/proc/self/exe", []string{"permwrap", InitArg, roleSandbox}, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, handoff, spec},
		Sys:   sys,
	})
	if err != nil {
		return fail("starting the sandbox stage: %v", err)
	}
	// Only the sandbox stage may hold these: the supervisor learns that it
	// failed when the hand-off socket closes.
	handoff.Close()
	spec.Close()
	main := proc.Pid
	_ = proc.Release() // reaped with wait4 below (orphans too)

	for {
		select {
		case <-chld:
			if status := reapAll(main); status >= 0 {
				killTree()
				return status
			}
		case <-lifeGone:
			// The supervisor is gone: nothing may run on unsupervised.
			killTree()
			return initExitInternal
		}
	}
}

// reapAll collects every exited child (orphans included) and returns the
// main child's exit status once it has exited, -1 while it runs.
func reapAll(main int) int {
	status := -1
	for {
		p, ws, err := host.Wait(-1, true)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || p <= 0 {
			return status
		}
		if p == main {
			status = exitStatus(ws)
		}
	}
}

// killTree SIGKILLs every descendant of this process and reaps what
// comes back to it, until none is left. The caller must be a subreaper, so
// that a descendant whose parent is killed is re-parented here (and found
// in the next round) rather than escaping to init. Each round kills every
// process alive when it was listed; what those forked before the kill
// landed is listed in the next one. SIGKILL also ends a stopped process.
func killTree() {
	for {
		if killRound() == 0 {
			return
		}
		// At least one child existed (every descendant has an ancestor
		// among the children) and was just killed: wait for one, then
		// collect whatever else is already gone.
		if _, _, err := host.Wait(-1, false); errors.Is(err, unix.ECHILD) {
			return
		}
		reapAll(-1)
	}
}

// killRound lists the descendants of this process and SIGKILLs them, and
// returns how many it found. A pid read from /proc is only a number, and
// a process of the tree may reap a child and have its pid handed to an
// unrelated process before the kill: so each one is pinned with a pidfd
// and proved to be the child of a process already proved to be in the
// tree (its parent still alive, its pid still its own) before anything
// is sent to it.
func killRound() int {
	killedByNumber := 0
	type node struct {
		pid int
		fd  int // pidfd; -1 for this process
	}
	var found []node
	defer func() {
		for _, n := range found {
			host.Close(n.fd)
		}
	}()
	queue := []node{{pid: os.Getpid(), fd: -1}}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, c := range procfs.Children(parent.pid) {
			fd, err := host.PidfdOpen(c)
			if errors.Is(err, unix.ENOSYS) {
				// No pidfds (before Linux 5.3; permwrap needs 5.14 for
				// its hand-off, so not expected): kill by number.
				_ = host.Kill(c, unix.SIGKILL)
				killedByNumber++
				continue
			}
			if err != nil {
				continue // gone already
			}
			if ppidOf(c) != parent.pid || !host.PidfdAlive(fd) || (parent.fd >= 0 && !host.PidfdAlive(parent.fd)) {
				host.Close(fd)
				continue
			}
			n := node{pid: c, fd: fd}
			found = append(found, n)
			queue = append(queue, n)
		}
	}
	for _, n := range found {
		_ = host.PidfdKill(n.fd)
	}
	return len(found) + killedByNumber
}

// ppidOf reads the parent pid of pid from /proc/PID/stat; -1 if it cannot.
func ppidOf(pid int) int {
	s, err := procfs.ReadStat(pid)
	if err != nil {
		return -1
	}
	return s.PPID
}
