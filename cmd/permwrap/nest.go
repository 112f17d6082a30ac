package main

// A permwrap started inside another one (docs/nesting.md). It does not
// supervise: only one seccomp listener can serve a filter chain. It
// hands its configuration to the permwrap above it, which judges the
// new node's subtree by both policies. Three processes:
//
//	permwrap --name reviewer -- CMD      the inner permwrap: loads its
//	│                                    configuration, opens its --log,
//	│                                    forwards signals, exits with
//	│                                    CMD's status
//	└── permwrap __nest-keeper           the keeper: knocks, registers the
//	    │                                node, is a child subreaper, writes
//	    │                                the records the root sends into
//	    │                                the --log, and lives until its
//	    │                                subtree is empty
//	    └── permwrap __nest-exec → CMD   enters a new Landlock domain (the
//	                                     inner policy's floor, signals
//	                                     scoped) and executes CMD
//
// Every child of the keeper is in the node; the keeper, the inner
// permwrap and whatever started them stay in the parent's node. Specs
// travel over inherited pipes, never argv (argv is world-readable).

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/forwarding"
	"github.com/permwrap/permwrap/supervisor"
)

// The hidden first arguments of the two helper stages.
const (
	nestKeeperArg = "__nest-keeper"
	nestExecArg   = "__nest-exec"
)

// Descriptors of the helper stages.
const (
	nestSpecFd   = 3 // the spec, JSON, closed by the writer
	nestStatusFd = 4 // keeper → inner permwrap: JSON lines
	nestLogFd    = 5 // the --log file, when there is one
)

// How long the keeper waits for the parent's handshake and answer.
const nestTalkTimeout = 30 * time.Second

// keeperSpec is what the inner permwrap tells its keeper.
type keeperSpec struct {
	Register        forwarding.Register
	Argv            []string
	Env             []string // the command's environment
	Floor           engine.Floor
	RequireLandlock bool
	Attach          string // "group" or "foreground"
	HasLog          bool
	Software        string
}

// execSpec is what the keeper tells the exec stage.
type execSpec struct {
	Argv            []string
	Env             []string
	Floor           engine.Floor
	RequireLandlock bool
}

// statusMsg is one line on the status pipe.
type statusMsg struct {
	Kind   string   `json:"kind"` // registered, warning, refused, error, status
	Label  string   `json:"label,omitempty"`
	Chain  []string `json:"chain,omitempty"`
	Text   string   `json:"text,omitempty"`
	Status int      `json:"status,omitempty"`
}

// Attach modes of the command (as the root's, supervisor/watchdog.go).
const (
	nestAttachGroup      = "group"      // its own process group
	nestAttachForeground = "foreground" // its own process group, the terminal's foreground
)

// parentState is what the knock probe found.
type parentState int

const (
	parentNone    parentState = iota // not under a filter, or nobody answered: supervise
	parentAnswers                    // a permwrap answered: nest
	parentBusy                       // a permwrap refused the knock
)

// probeParent knocks once and hangs up: does a permwrap supervise this
// process? A process under no seccomp filter at all is not supervised,
// and does not knock.
func probeParent() (parentState, error) {
	if mode, _, err := forwarding.SelfSeccomp(); err == nil && mode == 0 {
		return parentNone, nil
	}
	c, err := forwarding.Knock()
	switch {
	case err == nil:
		c.Close()
		return parentAnswers, nil
	case errors.Is(err, forwarding.ErrParentBusy):
		return parentBusy, err
	}
	return parentNone, nil
}

// nodeName is --name, or the command's base name made a valid name.
func nodeName(flag onceString, argv []string) (string, error) {
	if flag.set {
		if !forwarding.ValidName(flag.v) {
			return "", fmt.Errorf("--name %q: use 1 to %d letters, digits or ._+@:-", flag.v, forwarding.MaxNameBytes)
		}
		return flag.v, nil
	}
	return forwarding.SanitizeName(filepath.Base(argv[0])), nil
}

// runNested runs argv as a node of the permwrap above: the inner
// permwrap's side. It returns the command's exit status, or 125 when
// the node could not be set up (nothing ran).
func runNested(f *runFlags, ld loaded, argv []string, stdin io.Reader, stderr io.Writer) int {
	name, err := nodeName(f.name, argv)
	if err != nil {
		fmt.Fprintln(stderr, "permwrap:", err)
		return exitInternal
	}
	// The node's records go to the --log given. Neither the default log
	// nor the policy's log.path: the root writes every record of the tree
	// there already, and protects its own log from what it runs (the
	// same configuration names the same file).
	logPath := f.logPath.v
	var logFile *os.File
	if logPath != "" {
		if logFile, err = authority.OpenLogFile(logPath); err != nil {
			printErr(stderr, "permwrap: ", err)
			return exitInternal
		}
		defer logFile.Close()
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "permwrap: finding its own program:", err)
		return exitInternal
	}
	attach := nestAttachGroup
	var tty *os.File
	if sf, ok := stdin.(*os.File); ok && isTTY(sf) {
		attach, tty = nestAttachForeground, sf
		// The command takes the terminal's foreground; it comes back here
		// when it is done, for whoever started this permwrap.
		if fg, err := unix.IoctlGetInt(int(sf.Fd()), unix.TIOCGPGRP); err == nil && fg == unix.Getpgrp() {
			defer restoreForeground(tty, fg)
		}
	}
	spec := keeperSpec{
		Register:        forwarding.NewRegister(name, argv, ld.policy.Config(), ld.warnings, logFile != nil),
		Argv:            argv,
		Env:             os.Environ(),
		Floor:           ld.policy.LandlockFloor(),
		RequireLandlock: f.requireLandlock.v,
		Attach:          attach,
		HasLog:          logFile != nil,
		Software:        "permwrap " + version(),
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		fmt.Fprintln(stderr, "permwrap:", err)
		return exitInternal
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(stderr, "permwrap:", err)
		return exitInternal
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		fmt.Fprintln(stderr, "permwrap:", err)
		return exitInternal
	}
	defer statusR.Close()
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr, specR, statusW}
	if logFile != nil {
		files = append(files, logFile)
	}
	// Signals are caught before the keeper exists, so none is lost; they
	// are passed on to the command (through the keeper).
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)
	keeper, err := os.StartProcess(self, []string{"permwrap", nestKeeperArg}, &os.ProcAttr{Files: files, Env: stageEnv()})
	specR.Close()
	statusW.Close()
	if err != nil {
		specW.Close()
		fmt.Fprintln(stderr, "permwrap: starting the keeper:", err)
		return exitInternal
	}
	go func() {
		_, _ = specW.Write(specJSON)
		specW.Close()
	}()
	go func() {
		for s := range sigs {
			_ = keeper.Signal(s)
		}
	}()
	// The keeper outlives the command when something of its subtree
	// does; it is not waited for (it is re-parented when this exits).
	msgs := make(chan statusMsg)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(statusR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var m statusMsg
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				msgs <- m
			}
		}
	}()
	for m := range msgs {
		switch m.Kind {
		case "warning":
			printLines(stderr, "permwrap: warning: ", m.Text)
		case "refused", "error":
			printLines(stderr, "permwrap: ", m.Text)
			return exitInternal
		case "status":
			return m.Status
		}
	}
	// The keeper ended without a status: reap it and say so.
	st, _ := keeper.Wait()
	fmt.Fprintf(stderr, "permwrap: the nested keeper exited before the command's status was known (%v)\n", st)
	return exitInternal
}

// restoreForeground makes pgrp the terminal's foreground again (as a
// shell does after a job), ignoring the SIGTTOU a background group gets
// for asking.
func restoreForeground(tty *os.File, pgrp int) {
	signal.Ignore(unix.SIGTTOU)
	defer signal.Reset(unix.SIGTTOU)
	_ = unix.IoctlSetPointerInt(int(tty.Fd()), unix.TIOCSPGRP, pgrp)
}

// forwardedSignals are passed on to the command, as the root passes
// them on.
var forwardedSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2}

// stageEnv is the helper stages' own environment: TERM=dumb, so nothing
// in the program's start-up asks the terminal anything (see
// supervisor.initEnv). The command gets its real environment from the
// spec.
func stageEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TERM=") {
			env = append(env, kv)
		}
	}
	return append(env, "TERM=dumb")
}

func isTTY(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// readStageSpec reads a helper stage's spec from nestSpecFd.
func readStageSpec(v any) error {
	f := os.NewFile(nestSpecFd, "spec")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// runNestKeeper is the keeper stage (see the top of this file).
func runNestKeeper() int {
	status := os.NewFile(nestStatusFd, "status")
	say := func(m statusMsg) {
		b, _ := json.Marshal(m)
		_, _ = status.Write(append(b, '\n'))
	}
	fail := func(kind, format string, a ...any) int {
		say(statusMsg{Kind: kind, Text: fmt.Sprintf(format, a...)})
		return exitInternal
	}
	var spec keeperSpec
	if err := readStageSpec(&spec); err != nil {
		return fail("error", "nested keeper: reading its spec: %v", err)
	}
	if len(spec.Argv) == 0 {
		return fail("error", "nested keeper: no command")
	}
	// Orphans of the subtree come here, still beneath the node.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail("error", "nested keeper: becoming a subreaper: %v", err)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwardedSignals...)

	conn, err := forwarding.Knock()
	if err != nil {
		return fail("error", "nested under a permwrap that stopped answering: %v", err)
	}
	if _, err := conn.Handshake(nestTalkTimeout, spec.Software); err != nil {
		return fail("refused", "%v", err)
	}
	node, err := conn.Register(nestTalkTimeout, spec.Register)
	if err != nil {
		var pe *forwarding.ParentError
		if errors.As(err, &pe) && pe.Refused {
			return fail("refused", "the permwrap above refused this nested one: %s", pe.Reason)
		}
		return fail("refused", "registering with the permwrap above: %v", err)
	}
	for _, w := range node.Warnings {
		say(statusMsg{Kind: "warning", Text: w})
	}

	// The command: the exec stage, in its own Landlock domain.
	es, err := json.Marshal(execSpec{Argv: spec.Argv, Env: spec.Env, Floor: spec.Floor, RequireLandlock: spec.RequireLandlock})
	if err != nil {
		return fail("error", "nested keeper: %v", err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return fail("error", "nested keeper: %v", err)
	}
	sys := &syscall.SysProcAttr{Setpgid: true}
	if spec.Attach == nestAttachForeground {
		sys.Foreground, sys.Ctty = true, 0
	}
	self, err := os.Executable()
	if err != nil {
		return fail("error", "nested keeper: finding its own program: %v", err)
	}
	proc, err := os.StartProcess(self, []string{"permwrap", nestExecArg}, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, specR},
		Env:   stageEnv(),
		Sys:   sys,
	})
	specR.Close()
	if err != nil {
		specW.Close()
		return fail("error", "nested keeper: starting the command: %v", err)
	}
	go func() {
		_, _ = specW.Write(es)
		specW.Close()
	}()
	cmdPid := proc.Pid
	_ = proc.Release() // reaped with wait4 below, with every orphan
	// The command has the terminal or pipes now; the keeper, which may
	// outlive it, must not keep them open (a caller reading the inner
	// permwrap's output until EOF would wait for the subtree's last
	// process).
	dropStdio()
	say(statusMsg{Kind: "registered", Label: node.Label, Chain: node.Chain})

	// The records of the subtree, into the --log.
	logsDone := make(chan struct{})
	if spec.HasLog {
		lf := os.NewFile(nestLogFd, "log")
		go func() {
			defer close(logsDone)
			_ = conn.ServeLogs(lf)
		}()
	} else {
		close(logsDone)
	}

	cmdExited := false
	reaped := make(chan int, 64)
	go reapAll(reaped)
	for {
		select {
		case s := <-sigs:
			if !cmdExited {
				_ = unix.Kill(cmdPid, s.(syscall.Signal))
			}
		case st := <-reaped:
			if st == reapNoChildren {
				// The subtree is empty: the node's rules are no longer needed.
				_ = conn.Done()
				conn.CloseWrite()
				select {
				case <-logsDone:
				case <-time.After(5 * time.Second):
				}
				conn.Close()
				return exitOK
			}
			if st>>16 == cmdPid && !cmdExited {
				cmdExited = true
				say(statusMsg{Kind: "status", Status: st & 0xffff})
				status.Close()
			}
		}
	}
}

// dropStdio points the keeper's standard descriptors at /dev/null (or
// closes them, if it cannot be opened).
func dropStdio() {
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	for fd := 0; fd <= 2; fd++ {
		if err == nil {
			_ = unix.Dup3(null, fd, 0)
		} else {
			unix.Close(fd)
		}
	}
	if err == nil && null > 2 {
		unix.Close(null)
	}
}

// reapNoChildren is what reapAll sends when the keeper has no child left.
const reapNoChildren = -1

// reapAll waits for every child of the keeper (its command and every
// orphan re-parented to it) and sends pid<<16|status for each; then,
// once none is left, reapNoChildren.
func reapAll(out chan<- int) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.ECHILD) {
			out <- reapNoChildren
			return
		}
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		st := exitInternal
		switch {
		case ws.Exited():
			st = ws.ExitStatus()
		case ws.Signaled():
			st = 128 + int(ws.Signal())
		default:
			continue // stopped or continued: still running
		}
		out <- pid<<16 | st
	}
}

// runNestExec is the exec stage: the inner policy's Landlock floor with
// the signal scope, then the command (supervisor.ExecNested).
func runNestExec() int {
	var spec execSpec
	if err := readStageSpec(&spec); err != nil {
		fmt.Fprintln(os.Stderr, "permwrap: nested exec stage: reading its spec:", err)
		return exitInternal
	}
	return supervisor.ExecNested(spec.Argv, spec.Env, spec.Floor, spec.RequireLandlock)
}

// nestingReport is `permwrap doctor`'s nesting section: whether a
// permwrap supervises this process, and in which node. It reports true
// when one does.
func nestingReport(w func(string, ...any)) bool {
	mode, filters, err := forwarding.SelfSeccomp()
	if err == nil && mode == 0 {
		w("nesting: not under any seccomp filter; permwrap here supervises by itself (the root)")
		return false
	}
	c, kerr := forwarding.Knock()
	switch {
	case errors.Is(kerr, forwarding.ErrParentBusy):
		w("nesting: inside a permwrap that refuses more nesting connections right now (too many pending); a permwrap started here exits 125")
		return true
	case kerr != nil:
		w("nesting: under %d seccomp filter(s) that do not answer permwrap's knock (a container runtime, a permwrap without nesting, another supervisor)", filters)
		w("         permwrap here tries to supervise by itself; if that is refused it exits 125 rather than run with fewer rules")
		return false
	}
	defer c.Close()
	wel, err := c.Handshake(5*time.Second, "permwrap "+version()+" doctor")
	if err != nil {
		w("nesting: inside a permwrap, which did not complete the handshake: %v", err)
		return true
	}
	w("nesting: inside a permwrap (protocol %d); this process is in node %s", wel.Version, wel.Parent)
	w("         a permwrap started here registers a node beneath %s: both policies judge its subtree, and its asks", wel.Parent)
	w("         go to the outermost permwrap's reviewers and prompt (docs/nesting.md)")
	return true
}
