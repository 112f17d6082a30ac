package forwarding

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
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
	status := os.NewFile(stageStatusFd, "status")
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
		return fail(statusError, "nested keeper: reading its spec: %v", err)
	}
	if len(spec.Argv) == 0 {
		return fail(statusError, "nested keeper: no command")
	}
	// Orphans of the subtree come here, still beneath the node.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(statusError, "nested keeper: becoming a subreaper: %v", err)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwardedSignals...)

	conn, err := Knock()
	if err != nil {
		return fail(statusError, "nested under a permwrap that stopped answering: %v", err)
	}
	if _, err := conn.Handshake(keeperTalkTimeout, spec.Software); err != nil {
		return fail(statusRefused, "%v", err)
	}
	node, err := conn.Register(keeperTalkTimeout, spec.Register)
	if err != nil {
		var pe *ParentError
		if errors.As(err, &pe) && pe.Refused {
			return fail(statusRefused, "the permwrap above refused this nested one: %s", pe.Reason)
		}
		return fail(statusRefused, "registering with the permwrap above: %v", err)
	}
	for _, w := range node.Warnings {
		say(statusMsg{Kind: statusWarning, Text: w})
	}

	// The command: the exec stage, in its own Landlock domain.
	es, err := json.Marshal(ExecSpec{Argv: spec.Argv, Env: spec.Env, Floor: spec.Floor, RequireLandlock: spec.RequireLandlock})
	if err != nil {
		return fail(statusError, "nested keeper: %v", err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return fail(statusError, "nested keeper: %v", err)
	}
	sys := &syscall.SysProcAttr{Setpgid: true}
	if spec.Attach == attachForeground {
		sys.Foreground, sys.Ctty = true, 0
	}
	self, err := os.Executable()
	if err != nil {
		return fail(statusError, "nested keeper: finding its own program: %v", err)
	}
	proc, err := os.StartProcess(self, []string{"permwrap", ExecArg}, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, specR},
		Env:   host.StageEnv(),
		Sys:   sys,
	})
	specR.Close()
	if err != nil {
		specW.Close()
		return fail(statusError, "nested keeper: starting the command: %v", err)
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
	say(statusMsg{Kind: statusRegistered, Label: node.Label, Chain: node.Chain})

	// The records of the subtree, into the --log.
	logsDone := make(chan struct{})
	if spec.HasLog {
		lf := os.NewFile(stageLogFd, "log")
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
				say(statusMsg{Kind: statusExit, Status: st & 0xffff})
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
