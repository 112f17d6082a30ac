package supervisor

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/host"
	"github.com/permwrap/permwrap/notify/pin"
	"github.com/permwrap/permwrap/supervisor/terminal"
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
	// Signals, when set, are the signals Run handles, caught already
	// (CatchSignals); Run owns them. Nil: Run catches them itself.
	Signals *Signals
	// Early, when set, are the run's stages, started before the policy
	// was loaded (StartEarly); Run takes them over.
	Early *Early

	// SyncWakeUp sets SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP on the listener
	// (an experiment; docs/kernel.md, "Performance").
	SyncWakeUp bool
	// Stats, when set, is the file the supervisor writes its call
	// statistics to at the end of the run (PERMWRAP_STATS; stats.go).
	Stats string

	// serve, when set, serves the listener instead of the supervisor
	// (RunServed).
	serve func(l *notify.Listener)
}

// Exit codes for permwrap's own failures, shared with cmd/permwrap.
const ExitInternal = 125

// Run starts cfg.Argv under the sandbox, serves it until it exits, and
// returns the exit status to use (the command's, 128+N when it died of
// signal N, 125 for permwrap's own failures, 126/127 as env(1) does).
//
// The steps, in order: the stages started (startStages, or StartEarly
// before the caller loaded the policy): signals caught, permwrap the
// tree's subreaper, the channels to the stages, the terminal prepared
// (relayed, or handed to the command), the watchdog started, which
// starts the init stage; then the run's settings and notices; the egress
// proxy, and the seccomp filter compiled and sent in the spec, while the
// two stages start; the listener taken from the init stage; the relay
// started; the listener served; the command waited for; the run wound
// down.
func Run(ctx context.Context, cfg Config) (int, error) {
	l := cfg.Early.take()
	if l == nil {
		var err error
		if l, err = startStages(cfg); err != nil {
			return ExitInternal, err
		}
	}
	// Until the spec is sent, a return ends the stages (nothing ran);
	// from then on the watchdog is reaped before Run returns.
	defer l.release()
	if cfg.Policy == nil || len(cfg.Argv) == 0 {
		return ExitInternal, errors.New("supervisor: no policy or no command")
	}
	l.configure(cfg)
	l.notices = terminal.NewNoticer(l.cfg.Notices)
	// The review log says on this notice line (stderr, or between frames
	// on a relayed terminal) when it cannot be written, once; after Run
	// the caller's Close reports what was left unwritten.
	if lg, ok := l.cfg.Log.(*authority.Log); ok && lg != nil {
		lg.SetNotice(l.notices.Line)
		defer lg.SetNotice(nil)
	}
	// The stages start (two processes) while the egress proxy starts and
	// the filter is compiled: the spec is written once both are done, and
	// the init stage waits for it.
	l.startEgress()
	defer l.egress.stop()
	l.sendSpec()
	if status, ok, err := l.takeListener(); !ok {
		if err := <-l.specSent; err != nil {
			// The spec was not sent: the init stage went without a word.
			return ExitInternal, err
		}
		// A stage failed and said why on stderr (err nil): pass its
		// status on; or the listener could not be taken (err says why).
		return status, err
	}
	if l.relay != nil {
		if err := l.startRelay(); err != nil {
			return ExitInternal, err
		}
		defer l.relay.Stop()
	}
	l.serve()
	status, runErr := l.wait(ctx, l.sigs)
	l.windDown(runErr)
	return status, runErr
}

// Early is a run whose stages were started before its policy was loaded
// (StartEarly): the watchdog and the init stage start, two Go processes,
// while the caller loads the policy and opens the review log. The init
// stage waits for its spec, which Run writes; nothing of the command
// runs before it.
type Early struct {
	l *launch
}

// StartEarly starts the stages of a run whose terminal and program cfg
// says (Stdin, Stdout, Stderr, NoRelay, Self; Signals, caught already,
// are then the run's); the policy, the command and the rest of cfg are
// Run's. The caller passes the result to Run (Config.Early), or ends it
// with Abort.
func StartEarly(cfg Config) (*Early, error) {
	l, err := startStages(cfg)
	if err != nil {
		return nil, err
	}
	return &Early{l: l}, nil
}

// Abort ends stages Run will not take: the init stage gets no spec and
// exits, and the watchdog with it; nothing ran.
func (e *Early) Abort() {
	if l := e.take(); l != nil {
		l.release()
	}
}

// take hands the stages over, once; nil for a nil Early.
func (e *Early) take() *launch {
	if e == nil {
		return nil
	}
	l := e.l
	e.l = nil
	return l
}

// startStages are the steps of a run that need no policy, up to the
// watchdog started: on failure nothing is left open or running.
func startStages(cfg Config) (*launch, error) {
	l := newLaunch(cfg)
	l.caught = cfg.Signals
	if l.caught == nil {
		l.caught = CatchSignals()
	}
	fail := func(err error) (*launch, error) {
		l.caught.stop()
		return nil, err
	}
	// Were the watchdog killed, the tree's orphans would be re-parented
	// to us, so we can make sure none outlives the run.
	if err := host.Subreaper(); err != nil {
		return fail(fmt.Errorf("becoming a subreaper: %w", err))
	}
	if err := l.ch.open(); err != nil {
		return fail(err)
	}
	// Signals are caught before the child exists so none is lost.
	l.sigs = l.caught.wait()
	if err := l.prepareTerminal(); err != nil {
		l.ch.closeChildEnds()
		l.ch.closeOurEnds()
		return fail(fmt.Errorf("pseudo-terminal: %w", err))
	}
	if err := l.startWatchdog(); err != nil {
		l.ch.closeOurEnds()
		return fail(err)
	}
	return l, nil
}

// release ends what Run leaves: the stages, when the spec was never
// sent (the init stage exits without a word, the watchdog with it, and
// is reaped); our ends of the channels (the life pipe last: the watchdog
// kills the tree when it closes); the signals.
func (l *launch) release() {
	if l.specSent == nil {
		l.ch.specW.Close()
		waitWatchdog(l.watchdog)
	}
	l.ch.closeOurEnds()
	l.caught.stop()
}

// launch is one Run's state, filled in by its steps in order.
type launch struct {
	cfg  Config
	self string // the binary re-executed for the helper stages
	ids  *programIDs

	spec initSpec
	ch   stageChannels
	// The run's signals: caught, and their channel once they are.
	caught *Signals
	sigs   <-chan os.Signal
	// specSent says, once, whether the spec was compiled and written
	// (nil) or why not (sendSpec).
	specSent chan error

	// How the command meets the terminal: the stdio the watchdog passes
	// on, how the watchdog attaches it (attach*), and the relay when
	// permwrap relays the terminal.
	stdio  []*os.File
	attach string
	relay  *terminal.Relay

	notices *terminal.Noticer
	egress  *egressRun

	watchdog int  // the watchdog's pid
	pid      int  // the sandbox stage's pid, the command's once it execs
	lfd      int  // the seccomp listener, taken from the sandbox stage
	handoff  byte // the hand-off's flags (handoffWaitKillable)
	sup      *supervisor
	listener *notify.Listener
	served   chan struct{} // closed when the serving goroutine returns
}

// newLaunch fills in cfg's defaults: permwrap's own stdio, notices on
// stderr, /proc/self/exe for the helper stages.
func newLaunch(cfg Config) *launch {
	l := &launch{}
	cfg = withDefaults(cfg)
	l.self = cfg.Self
	if l.self == "" {
		l.self = "/proc/self/exe"
	}
	l.cfg = cfg
	return l
}

// configure takes the run's settings once the stages are started: cfg
// with the terminal the stages were given (stdio, and notices on the
// relay when there is one), the Decider built for it, the init stage's
// spec, and the index of the programs the policy names, built while the
// command starts (identity.go).
func (l *launch) configure(cfg Config) {
	cfg = withDefaults(cfg)
	cfg.Stdin, cfg.Stdout, cfg.Stderr = l.cfg.Stdin, l.cfg.Stdout, l.cfg.Stderr
	if l.relay != nil {
		cfg.Notices = l.relay
	}
	if cfg.NewDecider != nil {
		var screen authority.Screen
		if l.relay != nil {
			screen = l.relay
		}
		cfg.Decider = cfg.NewDecider(screen)
	}
	l.cfg = cfg
	l.ids = newProgramIDs(cfg.Policy, os.Getenv("PATH"))
	l.spec = newInitSpec(cfg)
}

// withDefaults fills in permwrap's own stdio and notices on stderr.
func withDefaults(cfg Config) Config {
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
	return cfg
}

// newInitSpec is what the init stage is told: the command, its
// environment and the Landlock floor. The filter is compiled, and the
// proxy's environment added, once the stages are on their way
// (sendSpec).
func newInitSpec(cfg Config) initSpec {
	floor := cfg.Policy.LandlockFloor()
	return initSpec{
		Argv:            cfg.Argv,
		Env:             os.Environ(),
		WriteDirs:       floor.WriteDirs,
		WriteAnywhere:   floor.WriteAnywhere,
		RequireLandlock: cfg.RequireLandlock,
		Underscore:      underscoreNamesSelf(os.Environ()),
	}
}

// stageChannels are the three channels to the helper stages, all
// inherited file descriptors (argv is world-readable; the spec holds the
// environment):
//   - the hand-off socket, over which the sandbox stage says where its
//     seccomp listener is (receiveListener takes it);
//   - the spec pipe, which carries the spec to the sandbox stage;
//   - the life pipe, which we never write: the watchdog reads EOF on
//     it when we are gone, however we died.
type stageChannels struct {
	parentEnd, childEnd *os.File // the hand-off socket
	specR, specW        *os.File
	lifeR, lifeW        *os.File
}

// open makes the channels; on failure none is left open.
func (ch *stageChannels) open() error {
	pair, err := host.SeqpacketPair()
	if err != nil {
		return fmt.Errorf("socketpair: %w", err)
	}
	ch.parentEnd = os.NewFile(uintptr(pair[0]), "handoff")
	ch.childEnd = os.NewFile(uintptr(pair[1]), "handoff-child")
	if ch.specR, ch.specW, err = os.Pipe(); err != nil {
		ch.childEnd.Close()
		ch.parentEnd.Close()
		return fmt.Errorf("pipe: %w", err)
	}
	if ch.lifeR, ch.lifeW, err = os.Pipe(); err != nil {
		ch.childEnd.Close()
		ch.specR.Close()
		ch.specW.Close()
		ch.parentEnd.Close()
		return fmt.Errorf("pipe: %w", err)
	}
	return nil
}

// closeOurEnds closes the supervisor's ends: the hand-off socket, and
// the life pipe (which the watchdog reads EOF on).
func (ch *stageChannels) closeOurEnds() {
	ch.parentEnd.Close()
	ch.lifeW.Close()
}

// closeChildEnds closes what the watchdog would have inherited, and the
// spec pipe's writing end, when it is not started after all.
func (ch *stageChannels) closeChildEnds() {
	ch.childEnd.Close()
	ch.specR.Close()
	ch.specW.Close()
	ch.lifeR.Close()
}

// prepareTerminal decides how the command meets the terminal. The
// watchdog gets the command's stdio and passes it on; it sets the
// command up on the terminal as attach says. On a terminal, the command
// runs on a pseudo-terminal permwrap relays, so a prompt can take the
// screen over a full-screen agent (configure builds the Decider for it).
func (l *launch) prepareTerminal() error {
	cfg := &l.cfg
	l.stdio = []*os.File{cfg.Stdin, cfg.Stdout, cfg.Stderr}
	l.attach = attachGroup
	if !cfg.NoRelay && isTerminal(cfg.Stdin) && isTerminal(cfg.Stdout) {
		rl, err := terminal.NewRelay(cfg.Stdin, cfg.Stdout)
		if err != nil {
			return err
		}
		l.relay = rl
		l.stdio[0], l.stdio[1] = rl.PTS(), rl.PTS()
		if isTerminal(cfg.Stderr) {
			l.stdio[2] = rl.PTS()
		}
		l.attach = attachSession
	} else if isTerminal(cfg.Stdin) {
		// The command gets the terminal's foreground: ^C reaches it, not us.
		l.attach = attachForeground
	}
	return nil
}

// startEgress starts the egress proxy (netlaunch.go) unless the policy
// turns it off: the command finds it in its environment, so it runs
// before the command starts.
func (l *launch) startEgress() {
	l.egress = &egressRun{}
	if l.cfg.Policy.Settings().Proxy != "off" {
		l.egress = startEgress(l.cfg, l.notices)
	}
	l.spec.Env = l.egress.environ(l.spec.Env)
}

// startWatchdog starts the watchdog, which starts the init stage; the
// init stage waits for its spec (sendSpec).
func (l *launch) startWatchdog() error {
	ch := &l.ch
	// No Pdeathsig: the watchdog must outlive us to clean up, and a
	// Pdeathsig would follow the thread that happens to run this call, not
	// this process (Go retires threads; issue 10).
	wd, err := os.StartProcess(l.self, []string{"permwrap", InitArg, roleWatchdog, l.attach}, &os.ProcAttr{
		Files: append(l.stdio, ch.childEnd, ch.specR, ch.lifeR),
		Env:   host.StageEnv(),
	})
	ch.childEnd.Close()
	ch.specR.Close()
	ch.lifeR.Close()
	if err != nil {
		ch.specW.Close()
		return fmt.Errorf("starting the watchdog: %w", err)
	}
	l.watchdog = wd.Pid
	_ = wd.Release() // reaped with wait4 below
	return nil
}

// sendSpec compiles the seccomp filter and writes the spec, with the
// compiled program, to the init stage, in the background: the stages
// start meanwhile (a Go process each), so the compile is off the path to
// the command. The filter is the syscall table's; a policy that allows
// every read needs no notification for a plain read-only open (the
// costliest kind of call). When the filter or the spec cannot be made,
// the pipe is closed empty: the init stage then hands over nothing and
// says nothing, and specSent has the reason. A policy that leaves
// listings free needs none for a read-only O_DIRECTORY open either.
func (l *launch) sendSpec() {
	l.specSent = make(chan error, 1)
	spec, w := l.spec, l.ch.specW
	choice := filterChoiceOf(l.cfg.Policy)
	go func() {
		defer w.Close()
		prog, err := notify.BuildFilter(filterOptions(choice))
		if err != nil {
			l.specSent <- fmt.Errorf("seccomp filter: %w", err)
			return
		}
		spec.Filter = prog.Insns
		specJSON, err := json.Marshal(spec)
		if err != nil {
			l.specSent <- fmt.Errorf("the init stage's spec: %w", err)
			return
		}
		// A spec over the pipe's buffer is written as it is read; if the
		// stages die first, the write fails and the hand-off says so.
		_, _ = w.Write(specJSON)
		l.specSent <- nil
	}()
}

// takeListener takes the seccomp listener the sandbox stage hands over.
// When a stage failed instead (it said why), it waits for the watchdog
// and returns the status to exit with (never 0). When the listener
// cannot be taken (pidfd_getfd refused: a container's seccomp profile),
// it closes the hand-off socket first — the stage, waiting for the
// answer, reads the end and exits without running the command — and
// returns why: waiting for the watchdog with the socket open would wait
// for ever.
func (l *launch) takeListener() (status int, ok bool, err error) {
	lfd, handoff, pid, err := receiveListener(l.ch.parentEnd)
	if err != nil {
		stageSaid := errors.Is(err, errStageFailed)
		l.ch.parentEnd.Close()
		status := waitWatchdog(l.watchdog)
		if status == 0 || !stageSaid {
			status = ExitInternal
		}
		if stageSaid {
			err = nil
		} else if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
			// ENOSYS: pidfd_getfd is older than everything else permwrap
			// needs, so a seccomp profile refused it (podman's errno).
			err = fmt.Errorf("%w (refused by a container's seccomp profile that allows pidfd_getfd only with CAP_SYS_PTRACE, as Docker's default does, or by Yama ptrace_scope; docs/teams.md lists the container settings that work)", err)
		}
		return status, false, err
	}
	l.lfd, l.handoff, l.pid = lfd, handoff, pid
	return 0, true, nil
}

// errStageFailed is receiveListener's error when a stage failed and said
// why on stderr.
var errStageFailed = errors.New("init stage failed before handing over the listener")

// startRelay starts relaying the terminal; when it cannot, the command
// is killed before it runs.
func (l *launch) startRelay() error {
	if err := l.relay.Start(); err != nil {
		_ = host.Kill(l.pid, unix.SIGKILL)
		waitWatchdog(l.watchdog)
		return fmt.Errorf("terminal: %w", err)
	}
	return nil
}

// serve sets the supervisor up on the listener and serves it in the
// background (cfg.serve instead, for RunServed).
func (l *launch) serve() {
	cfg := l.cfg
	listener := notify.NewListener(l.lfd)
	if cfg.SyncWakeUp {
		if err := listener.SetSyncWakeUp(); err != nil {
			fmt.Fprintf(cfg.Stderr, "permwrap: %v\n", err)
		}
	}
	sup := newSupervisor(cfg, listener, l.pid, l.notices, l.ids)
	sup.tree = &tree{watchdog: l.watchdog}
	sup.net.procs = sup.tree
	sup.net.proxy, sup.net.peers = l.egress.proxy, l.egress.peers
	l.egress.net.Store(&sup.net)
	// Inner permwraps register beneath the watchdog: the command's
	// parent, to which every orphan of the tree is re-parented.
	if err := sup.startNesting(l.watchdog); err != nil {
		sup.notices.Line("permwrap: nesting unavailable (a permwrap started inside will refuse to run): " + err.Error())
	}
	l.sup, l.listener = sup, listener
	l.served = make(chan struct{})
	go func() {
		if cfg.serve != nil {
			cfg.serve(listener)
		} else {
			sup.serve()
		}
		close(l.served)
	}()
}

// wait passes signals on to the command until the watchdog exits, once
// the command has exited and everything it left behind is killed; its
// exit code is the command's status. ctx's end kills the command.
func (l *launch) wait(ctx context.Context, sigs <-chan os.Signal) (int, error) {
	status := -1
	var runErr error
	cancelled := ctx.Done()
	for status < 0 {
		select {
		case s := <-sigs:
			if s == unix.SIGCHLD {
				status, runErr = reapWatchdog(l.watchdog)
				continue
			}
			if s == unix.SIGWINCH && l.relay != nil {
				l.relay.Resize()
				continue
			}
			_ = host.Kill(l.pid, s.(syscall.Signal))
		case <-cancelled:
			_ = host.Kill(l.pid, unix.SIGKILL)
			cancelled = nil
		}
	}
	return status, runErr
}

// windDown ends the run once the watchdog has exited: the orphans of a
// killed watchdog killed, the command's last output relayed, the
// listener closed and the workers' last records written.
func (l *launch) windDown(runErr error) {
	if runErr != nil {
		// The watchdog was killed: its orphans came to us.
		killTree()
	}
	if l.relay != nil {
		// Let the last of the command's output reach the terminal.
		select {
		case <-l.relay.Done():
		case <-time.After(2 * time.Second):
		}
	}
	l.listener.Close()
	// Let the workers finish what they hold: an allowed call is answered
	// before it is recorded, so the last records of the run may still be
	// on their way to the log. (Every target is gone: a receiver cannot
	// wait long. The bound is for the unforeseen.)
	select {
	case <-l.served:
	case <-time.After(2 * time.Second):
	}
	l.sup.finish()
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
		return -1, 0, 0, errStageFailed
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
