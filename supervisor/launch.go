package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
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

	// Orphans of the sandboxed tree are re-parented to us, so we can reap
	// them and make sure none outlives the run.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return ExitInternal, fmt.Errorf("becoming a subreaper: %w", err)
	}

	floor := cfg.Policy.LandlockFloor()
	spec := initSpec{
		Argv:            cfg.Argv,
		Env:             os.Environ(),
		WriteDirs:       floor.WriteDirs,
		WriteAnywhere:   floor.WriteAnywhere,
		RequireLandlock: cfg.RequireLandlock,
		Filter: notify.FilterOptions{
			// The syscall table's rules. A policy that allows every read
			// needs no notification for a plain read-only open (the
			// costliest kind of call).
			Rules: filterRules(cfg.Policy.ReadsAlwaysAllowed()),
			// No sandboxed process may ptrace another (or read and write
			// its memory that way).
			DenyPtrace: true,
		},
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return ExitInternal, err
	}

	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return ExitInternal, fmt.Errorf("socketpair: %w", err)
	}
	parentEnd := os.NewFile(uintptr(pair[0]), "handoff")
	childEnd := os.NewFile(uintptr(pair[1]), "handoff-child")
	defer parentEnd.Close()

	// Signals are caught before the child exists so none is lost.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGCHLD)
	defer signal.Stop(sigs)

	attr := &os.ProcAttr{
		Files: []*os.File{cfg.Stdin, cfg.Stdout, cfg.Stderr, childEnd},
		Env:   initEnv(),
		Sys: &syscall.SysProcAttr{
			// The child dies with us; its own children are covered by the
			// listener closing (their watched syscalls then fail) and by
			// the kill on exit below.
			Pdeathsig: syscall.SIGKILL,
			Setpgid:   true,
		},
	}
	// On a terminal, the command runs on a pseudo-terminal permwrap relays,
	// so a prompt can take the screen over a full-screen agent.
	var rl *relay
	if !cfg.NoRelay && isTerminal(cfg.Stdin) && isTerminal(cfg.Stdout) {
		if rl, err = newRelay(cfg.Stdin, cfg.Stdout); err != nil {
			return ExitInternal, fmt.Errorf("pseudo-terminal: %w", err)
		}
		attr.Files[0], attr.Files[1] = rl.pts, rl.pts
		if isTerminal(cfg.Stderr) {
			attr.Files[2] = rl.pts
		}
		attr.Sys = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setsid: true, Setctty: true, Ctty: 0}
		cfg.Notices = rl
	} else if isTerminal(cfg.Stdin) {
		// The command gets the terminal's foreground: ^C reaches it, not us.
		attr.Sys.Foreground = true
		attr.Sys.Ctty = 0
	}
	if cfg.NewDecider != nil {
		var screen authority.Screen
		if rl != nil {
			screen = rl
		}
		cfg.Decider = cfg.NewDecider(screen)
	}
	proc, err := os.StartProcess(self, []string{"permwrap", InitArg, string(specJSON)}, attr)
	childEnd.Close()
	if err != nil {
		return ExitInternal, fmt.Errorf("starting the init stage: %w", err)
	}
	pid := proc.Pid
	_ = proc.Release() // we reap with wait4 ourselves (we are a subreaper)

	lfd, handoff, err := receiveListener(parentEnd)
	if err != nil {
		// The init stage failed and said why on stderr; pass its status on.
		status := waitMain(pid)
		if status == 0 {
			status = ExitInternal
		}
		return status, nil
	}
	if rl != nil {
		if err := rl.start(); err != nil {
			_ = unix.Kill(pid, unix.SIGKILL)
			waitMain(pid)
			return ExitInternal, fmt.Errorf("terminal: %w", err)
		}
		defer rl.stop()
	}
	listener := notify.NewListener(lfd)
	sup := newSupervisor(cfg, listener, pid)
	sup.waitKillable = handoff&handoffWaitKillable != 0
	done := make(chan struct{})
	go func() {
		sup.serve()
		close(done)
	}()

	status := -1
	for status < 0 {
		select {
		case s := <-sigs:
			if s == unix.SIGCHLD {
				status = reap(pid)
				continue
			}
			if s == unix.SIGWINCH && rl != nil {
				rl.resize()
				continue
			}
			_ = unix.Kill(pid, s.(syscall.Signal))
		case <-ctx.Done():
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	// The command is gone: nothing it left behind may run on unsupervised.
	killDescendants()
	if rl != nil {
		// Let the last of the command's output reach the terminal.
		select {
		case <-rl.done:
		case <-time.After(2 * time.Second):
		}
	}
	listener.Close()
	sup.finish()
	return status, nil
}

// receiveListener waits for the init stage to hand over the listener fd
// and its flags byte. A message without an fd means the init stage failed.
func receiveListener(sock *os.File) (int, byte, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return -1, 0, fmt.Errorf("receiving the listener: %w", err)
		}
		if n == 0 || oobn == 0 {
			return -1, 0, errors.New("init stage failed before handing over the listener")
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return -1, 0, fmt.Errorf("bad control message: %v", err)
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return -1, 0, fmt.Errorf("bad listener hand-off: %v", err)
		}
		return fds[0], buf[0], nil
	}
}

// reap collects every exited child (orphans included) and returns the main
// child's exit status once it has exited, -1 while it runs.
func reap(main int) int {
	status := -1
	for {
		var ws unix.WaitStatus
		p, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
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

// waitMain blocks until the main child exits and returns its status.
func waitMain(pid int) int {
	for {
		var ws unix.WaitStatus
		p, err := unix.Wait4(pid, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return ExitInternal
		}
		if p == pid {
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

// killDescendants SIGKILLs every remaining child of this process (as a
// subreaper, the sandbox's orphans are our children) and reaps them.
func killDescendants() {
	for round := 0; round < 100; round++ {
		kids := childrenOf(os.Getpid())
		if len(kids) == 0 {
			return
		}
		for _, k := range kids {
			_ = unix.Kill(k, unix.SIGKILL)
		}
		for range kids {
			var ws unix.WaitStatus
			if _, err := unix.Wait4(-1, &ws, 0, nil); errors.Is(err, unix.ECHILD) {
				break
			}
		}
	}
}

// childrenOf lists the children of pid from /proc/PID/task/*/children.
func childrenOf(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
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
