package forwarding

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify/host"
)

// ParentState is what the knock probe found.
type ParentState int

const (
	ParentNone    ParentState = iota // not under a filter, or nobody answered: supervise
	ParentAnswers                    // a permwrap answered: nest (RunInner)
	ParentBusy                       // a permwrap refused the knock
)

// ProbeParent knocks once and hangs up: does a permwrap supervise this
// process? A process under no seccomp filter at all is not supervised,
// and does not knock. With ParentBusy, the error says why.
func ProbeParent() (ParentState, error) {
	if mode, _, err := SelfSeccomp(); err == nil && mode == 0 {
		return ParentNone, nil
	}
	c, err := Knock()
	switch {
	case err == nil:
		c.Close()
		return ParentAnswers, nil
	case errors.Is(err, ErrParentBusy):
		return ParentBusy, err
	}
	return ParentNone, nil
}

// Inner is what an inner permwrap runs as a node of the permwrap above
// it (RunInner).
type Inner struct {
	Register        Register // its configuration, name and command, as registered
	Argv            []string // the command
	Env             []string // the command's environment
	Floor           engine.Floor
	RequireLandlock bool
	Software        string // "permwrap VERSION", for the handshake
	// Log is its --log, opened, or nil: the keeper writes the subtree's
	// records there.
	Log *os.File
	// Stdin is the inner permwrap's standard input: on a terminal the
	// command takes the terminal's foreground, and gets it back here
	// when it is done.
	Stdin io.Reader
	// Warn says one of the root's warnings about the node's configuration.
	Warn func(string)
}

// RunInner runs in.Argv as a node of the permwrap above: the inner
// permwrap's side. It starts the keeper (stage.go), passes the signals
// the inner permwrap gets on to the command through it, and returns the
// command's exit status; or an error when the node could not be set up
// (nothing ran; the error is the reason, the root's when it refused).
func RunInner(in Inner) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return exitInternal, fmt.Errorf("finding its own program: %w", err)
	}
	attach, tty := attachGroup, terminal(in.Stdin)
	if tty != nil {
		attach = attachForeground
		// The command takes the terminal's foreground; it comes back here
		// when it is done, for whoever started this permwrap.
		if fg, ok := heldForeground(tty); ok {
			defer restoreForeground(tty, fg)
		}
	}
	specJSON, err := json.Marshal(keeperSpecOf(in, attach))
	if err != nil {
		return exitInternal, err
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return exitInternal, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return exitInternal, err
	}
	defer statusR.Close()
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr, specR, statusW}
	if in.Log != nil {
		files = append(files, in.Log)
	}
	// Signals are caught before the keeper exists, so none is lost; they
	// are passed on to the command (through the keeper).
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)
	keeper, err := startStage(self, KeeperArg, &os.ProcAttr{Files: files, Env: host.StageEnv()}, specJSON, specW, specR, statusW)
	if err != nil {
		return exitInternal, fmt.Errorf("starting the keeper: %w", err)
	}
	go passSignals(sigs, keeper)
	// The keeper outlives the command when something of its subtree
	// does; it is not waited for (it is re-parented when this exits).
	return awaitStatus(readStatus(statusR), keeper, in.Warn)
}

// terminal is stdin when it is a terminal, or nil.
func terminal(stdin io.Reader) *os.File {
	if sf, ok := stdin.(*os.File); ok && isTTY(sf) {
		return sf
	}
	return nil
}

// heldForeground is this process's group, when it has the terminal's
// foreground.
func heldForeground(tty *os.File) (int, bool) {
	fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return fg, err == nil && fg == unix.Getpgrp()
}

// keeperSpecOf is what the inner permwrap tells its keeper.
func keeperSpecOf(in Inner, attach string) keeperSpec {
	return keeperSpec{
		Register:        in.Register,
		Argv:            in.Argv,
		Env:             in.Env,
		Floor:           in.Floor,
		RequireLandlock: in.RequireLandlock,
		Attach:          attach,
		HasLog:          in.Log != nil,
		Software:        in.Software,
	}
}

// passSignals passes the signals the inner permwrap gets on to the
// keeper, which passes them on to the command.
func passSignals(sigs <-chan os.Signal, keeper *os.Process) {
	for s := range sigs {
		_ = keeper.Signal(s)
	}
}

// readStatus reads the keeper's status lines; the channel is closed when
// the keeper closes the pipe (or exits).
func readStatus(statusR io.Reader) <-chan statusMsg {
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
	return msgs
}

// awaitStatus says the root's warnings until the keeper reports the
// command's exit status, or that the node could not be set up.
func awaitStatus(msgs <-chan statusMsg, keeper *os.Process, warn func(string)) (int, error) {
	for m := range msgs {
		switch m.Kind {
		case statusWarning:
			warn(m.Text)
		case statusRefused, statusError:
			return exitInternal, errors.New(m.Text)
		case statusExit:
			return m.Status, nil
		}
	}
	// The keeper ended without a status: reap it and say so.
	st, _ := keeper.Wait()
	return exitInternal, fmt.Errorf("the nested keeper exited before the command's status was known (%v)", st)
}

// restoreForeground makes pgrp the terminal's foreground again (as a
// shell does after a job), ignoring the SIGTTOU a background group gets
// for asking.
func restoreForeground(tty *os.File, pgrp int) {
	signal.Ignore(unix.SIGTTOU)
	defer signal.Reset(unix.SIGTTOU)
	_ = unix.IoctlSetPointerInt(int(tty.Fd()), unix.TIOCSPGRP, pgrp)
}

func isTTY(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
