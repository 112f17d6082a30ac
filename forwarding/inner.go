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
	k, err := StartKeeper(in.Stdin, in.Log)
	if err != nil {
		return exitInternal, err
	}
	return k.Run(in)
}

// Keeper is a keeper started before the inner permwrap has loaded its
// policy (StartKeeper): it starts, a Go process, while the policy loads,
// and waits for its spec, which Run writes; it knocks and registers
// only once it has the spec, and nothing of the command runs before.
type Keeper struct {
	proc    *os.Process
	specW   *os.File
	statusR *os.File
	sigs    chan os.Signal
	attach  string
	restore func() // gives the terminal's foreground back, or nothing
	hasLog  bool
}

// StartKeeper starts the keeper of a node whose command gets stdin's
// terminal, when it is one, and whose records go to log (nil: none).
// The caller passes the rest with Run, or ends the keeper with Abort.
func StartKeeper(stdin io.Reader, log *os.File) (*Keeper, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding its own program: %w", err)
	}
	k := &Keeper{attach: attachGroup, restore: func() {}, hasLog: log != nil}
	if tty := terminal(stdin); tty != nil {
		k.attach = attachForeground
		// The command takes the terminal's foreground; it comes back here
		// when it is done, for whoever started this permwrap.
		if fg, ok := heldForeground(tty); ok {
			k.restore = func() { restoreForeground(tty, fg) }
		}
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return nil, err
	}
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr, specR, statusW}
	if log != nil {
		files = append(files, log)
	}
	// Signals are caught before the keeper exists, so none is lost; they
	// are passed on to the command (through the keeper).
	k.sigs = make(chan os.Signal, 16)
	host.Notify(k.sigs, forwardedSignals...)
	k.proc, err = os.StartProcess(self, []string{"permwrap", KeeperArg}, &os.ProcAttr{Files: files, Env: host.StageEnv()})
	specR.Close()
	statusW.Close()
	if err != nil {
		signal.Stop(k.sigs)
		specW.Close()
		statusR.Close()
		return nil, fmt.Errorf("starting the keeper: %w", err)
	}
	k.specW, k.statusR = specW, statusR
	return k, nil
}

// Run tells the keeper the node (in's Stdin and Log are StartKeeper's),
// passes signals on to the command through it, and returns the
// command's exit status, or why the node could not be set up.
func (k *Keeper) Run(in Inner) (int, error) {
	defer k.restore()
	defer signal.Stop(k.sigs)
	defer k.statusR.Close()
	in.Log = nil
	spec := keeperSpecOf(in, k.attach)
	spec.HasLog = k.hasLog
	specJSON, err := json.Marshal(spec)
	if err != nil {
		k.Abort()
		return exitInternal, err
	}
	go func() {
		// A spec over the pipe's buffer is written as it is read.
		_, _ = k.specW.Write(specJSON)
		k.specW.Close()
	}()
	go passSignals(k.sigs, k.proc)
	// The keeper outlives the command when something of its subtree
	// does; it is not waited for (it is re-parented when this exits).
	return awaitStatus(readStatus(k.statusR), k.proc, in.Warn)
}

// Abort ends a keeper that will not be told a node: it gets no spec,
// says so on the status pipe nobody reads, and exits; nothing ran.
func (k *Keeper) Abort() {
	k.specW.Close()
	k.statusR.Close()
	_, _ = k.proc.Wait()
	signal.Stop(k.sigs)
	k.restore()
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
	if !host.IgnoredAtStart(unix.SIGTTOU) {
		signal.Ignore(unix.SIGTTOU)
		defer signal.Reset(unix.SIGTTOU)
	}
	_ = unix.IoctlSetPointerInt(int(tty.Fd()), unix.TIOCSPGRP, pgrp)
}

func isTTY(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
