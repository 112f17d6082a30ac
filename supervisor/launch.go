package supervisor

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/host"
	"github.com/permwrap/permwrap/notify/pin"
)

// Config is one run of a command under the sandbox.
type Config struct {
	Policy  *engine.Policy
	Argv    []string // the command and its arguments
	Decider Decider  // who answers asks; nil means every ask is denied ("confirmation unavailable")
	// NewDecider, when set, builds the Decider once the terminal is known:
	// screen is the relayed terminal a prompt can borrow, or nil when
	// permwrap has no terminal (stdin and stdout must both be one).
	NewDecider func(screen authority.Screen) Decider
	Log        Logger // where decisions are recorded; nil records nothing

	RequireLandlock bool
	Stdin           *os.File
	Stdout, Stderr  *os.File
	// Notices receives the one-line denial notices meant for a person
	// (rate-limited); nil means Stderr.
	Notices io.Writer
	// NoRelay keeps the command on permwrap's own terminal (no pty, no
	// prompt).
	NoRelay bool
	// Self is the permwrap binary re-executed for the init stage; empty
	// means /proc/self/exe.
	Self string

	// SyncWakeUp sets SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP on the listener
	// (an experiment; docs/kernel.md, "Performance").
	SyncWakeUp bool

	// serve, when set, serves the listener instead of the supervisor
	// (RunServed).
	serve func(l *notify.Listener)
}

// Exit codes for permwrap's own failures, shared with cmd/permwrap.
const ExitInternal = 125

// Run starts cfg.Argv under the sandbox, serves it until it exits, and
// returns the exit status to use (the command's, 128+N when it died of
// signal N, 125 for permwrap's own failures, 126/127 as env(1) does).
func Run(ctx context.Context, cfg Config) (int, error) {
	if cfg.Policy == nil || len(cfg.Argv) == 0 {
		return ExitInternal, errors.New("supervisor: no policy or no command")
	}
	// The index of the programs the policy names is built while the
	// command starts (identity.go).
	ids := newProgramIDs(cfg.Policy, os.Getenv("PATH"))
	if cfg.Stdin == nil {
		cfg.Stdin = os.Stdin
	}
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Notices == nil {
		cfg.Notices = cfg.Stderr
	}
	self := cfg.Self
	if self == "" {
		self = "/proc/self/exe"
	}

	// Were the watchdog killed, the tree's orphans would be re-parented
	// to us, so we can make sure none outlives the run.
	if err := host.Subreaper(); err != nil {
		return ExitInternal, fmt.Errorf("becoming a subreaper: %w", err)
	}

	floor := cfg.Policy.LandlockFloor()
	spec := initSpec{
		Argv:            cfg.Argv,
		Env:             os.Environ(),
		WriteDirs:       floor.WriteDirs,
		WriteAnywhere:   floor.WriteAnywhere,
		RequireLandlock: cfg.RequireLandlock,
		Underscore:      underscoreNamesSelf(os.Environ()),
		// The syscall table's filter. A policy that allows every read
		// needs no notification for a plain read-only open (the costliest
		// kind of call).
		Filter: filterOptions(cfg.Policy.ReadsAlwaysAllowed()),
	}

	// Three channels to the helper stages, all inherited file descriptors
	// (argv is world-readable; the spec holds the environment):
	//   - the hand-off socket, over which the sandbox stage says where its
	//     seccomp listener is (receiveListener takes it);
	//   - the spec pipe, which carries the spec to the sandbox stage;
	//   - the life pipe, which we never write: the watchdog reads EOF on
	//     it when we are gone, however we died.
	pair, err := host.SeqpacketPair()
	if err != nil {
		return ExitInternal, fmt.Errorf("socketpair: %w", err)
	}
	parentEnd := os.NewFile(uintptr(pair[0]), "handoff")
	childEnd := os.NewFile(uintptr(pair[1]), "handoff-child")
	defer parentEnd.Close()
	specR, specW, err := os.Pipe()
	if err != nil {
		childEnd.Close()
		return ExitInternal, fmt.Errorf("pipe: %w", err)
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		childEnd.Close()
		specR.Close()
		specW.Close()
		return ExitInternal, fmt.Errorf("pipe: %w", err)
	}
	// Open for as long as Run runs; closing it early would make the
	// watchdog kill the tree.
	defer lifeW.Close()

	// Signals are caught before the child exists so none is lost.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGCHLD)
	defer signal.Stop(sigs)

	// The watchdog gets the command's stdio and passes it on; it sets the
	// command up on the terminal as attach says.
	stdio := []*os.File{cfg.Stdin, cfg.Stdout, cfg.Stderr}
	attach := attachGroup
	// On a terminal, the command runs on a pseudo-terminal permwrap relays,
	// so a prompt can take the screen over a full-screen agent.
	var rl *relay
	if !cfg.NoRelay && isTerminal(cfg.Stdin) && isTerminal(cfg.Stdout) {
		if rl, err = newRelay(cfg.Stdin, cfg.Stdout); err != nil {
			childEnd.Close()
			specR.Close()
			specW.Close()
			lifeR.Close()
			return ExitInternal, fmt.Errorf("pseudo-terminal: %w", err)
		}
		stdio[0], stdio[1] = rl.pts, rl.pts
		if isTerminal(cfg.Stderr) {
			stdio[2] = rl.pts
		}
		attach = attachSession
		cfg.Notices = rl
	} else if isTerminal(cfg.Stdin) {
		// The command gets the terminal's foreground: ^C reaches it, not us.
		attach = attachForeground
	}
	if cfg.NewDecider != nil {
		var screen authority.Screen
		if rl != nil {
			screen = rl
		}
		cfg.Decider = cfg.NewDecider(screen)
	}
	notices := newNoticer(cfg.Notices)
	// The egress proxy (netlaunch.go): the command finds it in its
	// environment, so it runs before the command starts.
	egressNet := &egressRun{}
	if cfg.Policy.Settings().Proxy != "off" {
		egressNet = startEgress(cfg, notices)
	}
	defer egressNet.stop()
	spec.Env = egressNet.environ(spec.Env)
	specJSON, err := json.Marshal(spec)
	if err != nil {
		childEnd.Close()
		specR.Close()
		specW.Close()
		lifeR.Close()
		return ExitInternal, err
	}
	// No Pdeathsig: the watchdog must outlive us to clean up, and a
	// Pdeathsig would follow the thread that happens to run this call, not
	// this process (Go retires threads; issue 10).
	wd, err := os.StartProcess(self, []string{"permwrap", InitArg, roleWatchdog, attach}, &os.ProcAttr{
		Files: append(stdio, childEnd, specR, lifeR),
		Env:   initEnv(),
	})
	childEnd.Close()
	specR.Close()
	lifeR.Close()
	if err != nil {
		specW.Close()
		return ExitInternal, fmt.Errorf("starting the watchdog: %w", err)
	}
	watchdog := wd.Pid
	_ = wd.Release() // reaped with wait4 below
	go func() {
		// A spec over the pipe's buffer is written as it is read; if the
		// stages die first, the write fails and the hand-off says so.
		_, _ = specW.Write(specJSON)
		specW.Close()
	}()

	lfd, handoff, pid, err := receiveListener(parentEnd)
	if err != nil {
		// A stage failed and said why on stderr; pass its status on.
		status := waitWatchdog(watchdog)
		if status == 0 {
			status = ExitInternal
		}
		return status, nil
	}
	if rl != nil {
		if err := rl.start(); err != nil {
			_ = host.Kill(pid, unix.SIGKILL)
			waitWatchdog(watchdog)
			return ExitInternal, fmt.Errorf("terminal: %w", err)
		}
		defer rl.stop()
	}
	listener := notify.NewListener(lfd)
	if cfg.SyncWakeUp {
		if err := listener.SetSyncWakeUp(); err != nil {
			fmt.Fprintf(cfg.Stderr, "permwrap: %v\n", err)
		}
	}
	sup := newSupervisor(cfg, listener, pid, notices, ids)
	sup.tree = &tree{watchdog: watchdog}
	sup.net.proxy, sup.net.peers = egressNet.proxy, egressNet.peers
	sup.waitKillable = handoff&handoffWaitKillable != 0
	// Inner permwraps register beneath the watchdog: the command's
	// parent, to which every orphan of the tree is re-parented.
	if err := sup.startNesting(watchdog); err != nil {
		sup.notices.line("permwrap: nesting unavailable (a permwrap started inside will refuse to run): " + err.Error())
	}
	done := make(chan struct{})
	go func() {
		if cfg.serve != nil {
			cfg.serve(listener)
		} else {
			sup.serve()
		}
		close(done)
	}()

	// The watchdog exits once the command has exited and everything it
	// left behind is killed; its exit code is the command's status.
	status := -1
	var runErr error
	cancelled := ctx.Done()
	for status < 0 {
		select {
		case s := <-sigs:
			if s == unix.SIGCHLD {
				status, runErr = reapWatchdog(watchdog)
				continue
			}
			if s == unix.SIGWINCH && rl != nil {
				rl.resize()
				continue
			}
			_ = host.Kill(pid, s.(syscall.Signal))
		case <-cancelled:
			_ = host.Kill(pid, unix.SIGKILL)
			cancelled = nil
		}
	}
	if runErr != nil {
		// The watchdog was killed: its orphans came to us.
		killTree()
	}
	if rl != nil {
		// Let the last of the command's output reach the terminal.
		select {
		case <-rl.done:
		case <-time.After(2 * time.Second):
		}
	}
	listener.Close()
	// Let the workers finish what they hold: an allowed call is answered
	// before it is recorded, so the last records of the run may still be
	// on their way to the log. (Every target is gone: a receiver cannot
	// wait long. The bound is for the unforeseen.)
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	sup.finish()
	return status, runErr
}

// receiveListener waits for the sandbox stage to say where its listener
// is (its flags byte, its pid and the fd number), takes the listener with
// pidfd_getfd, checks that it is a seccomp listener and tells the stage
// it may go on. A lone handoffFailed byte, or the socket closing, means a
// stage failed (and said why).
func receiveListener(sock *os.File) (fd int, flags byte, pid int, err error) {
	buf := make([]byte, 16)
	var n int
	for {
		n, err = host.Read(int(sock.Fd()), buf)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case err != nil:
		return -1, 0, 0, fmt.Errorf("receiving the listener: %w", err)
	case n == 0 || n == 1 && buf[0] == handoffFailed:
		return -1, 0, 0, errors.New("init stage failed before handing over the listener")
	case n != handoffLen:
		return -1, 0, 0, fmt.Errorf("bad listener hand-off (%d bytes)", n)
	}
	flags = buf[0]
	pid = int(binary.LittleEndian.Uint32(buf[1:5]))
	lfd := int(binary.LittleEndian.Uint32(buf[5:9]))
	f, err := pin.GetFd(pid, lfd)
	if err != nil {
		return -1, 0, 0, fmt.Errorf("taking the seccomp listener from pid %d: %w", pid, err)
	}
	if !notify.IsListener(f) {
		f.Close()
		return -1, 0, 0, fmt.Errorf("fd %d of pid %d is not a seccomp listener", lfd, pid)
	}
	if _, err := host.Write(int(sock.Fd()), []byte{handoffTaken}); err != nil {
		f.Close()
		return -1, 0, 0, fmt.Errorf("answering the init stage: %w", err)
	}
	// The Listener owns the raw fd from here on.
	nfd, err := host.DupCloexec(f)
	f.Close()
	if err != nil {
		return -1, 0, 0, fmt.Errorf("dup: %w", err)
	}
	return nfd, flags, pid, nil
}

// reapWatchdog collects the watchdog if it has exited: its exit code is
// the command's status. A watchdog that died of a signal was killed from
// outside: the command went with it (Pdeathsig), and the status says
// permwrap failed. -1 while it runs.
func reapWatchdog(watchdog int) (int, error) {
	for {
		p, ws, err := host.Wait(watchdog, true)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return ExitInternal, fmt.Errorf("waiting for the watchdog: %w", err)
		}
		if p != watchdog {
			return -1, nil
		}
		if ws.Signaled() {
			return ExitInternal, fmt.Errorf("the watchdog (pid %d) was killed by %s; the command and everything it started were killed", watchdog, unix.SignalName(ws.Signal()))
		}
		return exitStatus(ws), nil
	}
}

// waitWatchdog blocks until the watchdog exits and returns its status.
func waitWatchdog(watchdog int) int {
	for {
		p, ws, err := host.Wait(watchdog, false)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return ExitInternal
		}
		if p == watchdog {
			if ws.Signaled() {
				return ExitInternal
			}
			return exitStatus(ws)
		}
	}
}

func exitStatus(ws unix.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return ExitInternal
}

func isTerminal(f *os.File) bool {
	return host.IsTerminal(int(f.Fd()))
}

// initEnv is the init stage's own environment: the command's, with
// TERM=dumb. permwrap links bubbletea, whose package init asks the
// terminal for its colours (OSC 11 and a cursor report); in the init stage
// that terminal is the command's pty, and the terminal's answer would
// arrive as the command's first keystrokes. termenv asks nothing of a
// dumb terminal. The command itself gets its real environment (the spec).
func initEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TERM=") {
			env = append(env, kv)
		}
	}
	return append(env, "TERM=dumb")
}
