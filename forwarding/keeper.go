package forwarding

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify/host"
)

// How long the keeper waits for the parent's handshake and answer.
const keeperTalkTimeout = 30 * time.Second

// keeperSpec is what the inner permwrap tells its keeper.
type keeperSpec struct {
	Register        Register
	Argv            []string
	Env             []string // the command's environment
	Floor           engine.Floor
	RequireLandlock bool
	Attach          string // attachGroup or attachForeground
	HasLog          bool
	Software        string
}

// statusMsg is one line on the status pipe, keeper → inner permwrap.
type statusMsg struct {
	Kind   string   `json:"kind"` // one of the status* kinds
	Label  string   `json:"label,omitempty"`
	Chain  []string `json:"chain,omitempty"`
	Text   string   `json:"text,omitempty"`
	Status int      `json:"status,omitempty"`
}

// Kinds of status messages.
const (
	statusRegistered = "registered" // the node exists: Label, Chain
	statusWarning    = "warning"    // the root's warning about the configuration: Text
	statusRefused    = "refused"    // the root refused the node: Text; nothing ran
	statusError      = "error"      // the keeper failed: Text; nothing ran
	statusExit       = "status"     // the command's exit status: Status
)

// RunKeeper is the keeper stage (stage.go): it knocks, registers the
// node, starts the exec stage as a child subreaper, passes signals on to
// the command, reports its status to the inner permwrap, writes the
// subtree's records into the --log, and returns once its subtree is
// empty.
func RunKeeper() int {
	status := keeperStatus{os.NewFile(stageStatusFd, "status")}
	spec, err := readKeeperSpec()
	if err != nil {
		return status.fail(err)
	}
	// Orphans of the subtree come here, still beneath the node.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return status.fail(keeperFailed(statusError, "nested keeper: becoming a subreaper: %v", err))
	}
	sigs := make(chan os.Signal, 16)
	host.Notify(sigs, forwardedSignals...)

	conn, node, err := registerNode(spec)
	if err != nil {
		return status.fail(err)
	}
	for _, w := range node.Warnings {
		status.say(statusMsg{Kind: statusWarning, Text: w})
	}
	cmdPid, err := startCommand(spec)
	if err != nil {
		return status.fail(err)
	}
	// The command has the terminal or pipes now; the keeper, which may
	// outlive it, must not keep them open (a caller reading the inner
	// permwrap's output until EOF would wait for the subtree's last
	// process).
	dropStdio()
	status.say(statusMsg{Kind: statusRegistered, Label: node.Label, Chain: node.Chain})

	logsDone := serveLogs(conn, spec.HasLog)
	keepUntilEmpty(status, sigs, cmdPid)
	// The subtree is empty: the node's rules are no longer needed.
	sayDone(conn, logsDone)
	return exitOK
}

// keeperStatus is the status pipe, keeper → inner permwrap.
type keeperStatus struct{ f *os.File }

// say writes one status line.
func (s keeperStatus) say(m statusMsg) {
	b, _ := json.Marshal(m)
	_, _ = s.f.Write(append(b, '\n'))
}

// fail says why the keeper stops before the command runs, and is the
// keeper's exit code.
func (s keeperStatus) fail(err error) int {
	m := statusMsg{Kind: statusError, Text: err.Error()}
	var kf *keeperFailure
	if errors.As(err, &kf) {
		m.Kind = kf.kind
	}
	s.say(m)
	return exitInternal
}

// keeperFailure is why the keeper stops before the command runs, with the
// kind of status message that says it (statusError or statusRefused).
type keeperFailure struct{ kind, text string }

func (e *keeperFailure) Error() string { return e.text }

func keeperFailed(kind, format string, a ...any) error {
	return &keeperFailure{kind: kind, text: fmt.Sprintf(format, a...)}
}

// readKeeperSpec reads what the inner permwrap tells its keeper.
func readKeeperSpec() (keeperSpec, error) {
	var spec keeperSpec
	if err := readStageSpec(&spec); err != nil {
		return spec, keeperFailed(statusError, "nested keeper: reading its spec: %v", err)
	}
	if len(spec.Argv) == 0 {
		return spec, keeperFailed(statusError, "nested keeper: no command")
	}
	return spec, nil
}

// registerNode knocks, says hello and registers the node with the
// permwrap above; the connection stays open for the node's life.
func registerNode(spec keeperSpec) (*Conn, Registered, error) {
	conn, err := Knock()
	if err != nil {
		return nil, Registered{}, keeperFailed(statusError, "nested under a permwrap that stopped answering: %v", err)
	}
	if _, err := conn.Handshake(keeperTalkTimeout, spec.Software); err != nil {
		return nil, Registered{}, keeperFailed(statusRefused, "%v", err)
	}
	node, err := conn.Register(keeperTalkTimeout, spec.Register)
	if err != nil {
		var pe *ParentError
		if errors.As(err, &pe) && pe.Refused {
			return nil, Registered{}, keeperFailed(statusRefused, "the permwrap above refused this nested one: %s", pe.Reason)
		}
		return nil, Registered{}, keeperFailed(statusRefused, "registering with the permwrap above: %v", err)
	}
	return conn, node, nil
}

// startCommand starts the command: the exec stage, in its own Landlock
// domain, its spec on a pipe. It returns the command's pid; the command
// is reaped with every orphan (reapAll).
func startCommand(spec keeperSpec) (int, error) {
	es, err := json.Marshal(ExecSpec{Argv: spec.Argv, Env: spec.Env, Floor: spec.Floor, RequireLandlock: spec.RequireLandlock})
	if err != nil {
		return 0, keeperFailed(statusError, "nested keeper: %v", err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return 0, keeperFailed(statusError, "nested keeper: %v", err)
	}
	sys := &syscall.SysProcAttr{Setpgid: true}
	if spec.Attach == attachForeground {
		sys.Foreground, sys.Ctty = true, 0
	}
	self, err := os.Executable()
	if err != nil {
		return 0, keeperFailed(statusError, "nested keeper: finding its own program: %v", err)
	}
	proc, err := startStage(self, ExecArg, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, specR},
		Env:   host.StageEnv(),
		Sys:   sys,
	}, es, specW, specR)
	if err != nil {
		return 0, keeperFailed(statusError, "nested keeper: starting the command: %v", err)
	}
	cmdPid := proc.Pid
	_ = proc.Release() // reaped with wait4 (reapAll), with every orphan
	return cmdPid, nil
}

// serveLogs writes the records of the subtree into the --log, when there
// is one; the channel is closed when the root hangs up. Without a --log
// the connection is still read to its end: the root checks, after the
// keeper says done, that the keeper has no children left, which it can
// only do while the keeper lives (a keeper that hung up at once was gone
// before that check about one run in thirty, and the run printed a
// protocol error).
func serveLogs(conn *Conn, hasLog bool) <-chan struct{} {
	logsDone := make(chan struct{})
	var w io.Writer = io.Discard
	if hasLog {
		w = os.NewFile(stageLogFd, "log")
	}
	go func() {
		defer close(logsDone)
		_ = conn.ServeLogs(w)
	}()
	return logsDone
}

// keepUntilEmpty reaps the keeper's children until it has none left,
// passing signals on to the command while it runs and reporting its exit
// status (the status pipe is closed then).
func keepUntilEmpty(status keeperStatus, sigs <-chan os.Signal, cmdPid int) {
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
				return
			}
			if st>>16 == cmdPid && !cmdExited {
				cmdExited = true
				status.say(statusMsg{Kind: statusExit, Status: st & 0xffff})
				status.f.Close()
			}
		}
	}
}

// sayDone tells the permwrap above that the keeper's subtree is empty,
// waits a while for the records it still sends, and hangs up.
func sayDone(conn *Conn, logsDone <-chan struct{}) {
	_ = conn.Done()
	conn.CloseWrite()
	select {
	case <-logsDone:
	case <-time.After(5 * time.Second):
	}
	conn.Close()
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
