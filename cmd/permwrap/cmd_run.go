package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/forwarding"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/supervisor"
)

// runFlags are the flags of `permwrap [flags] -- CMD`: the policy flags
// every command shares, and the run's own.
type runFlags struct {
	policyFlags
	logPath         onceString
	requireLandlock onceBool
	name            onceString // nested: the node's name (nest.go)
}

func (f *runFlags) register(fs *flag.FlagSet) {
	f.policyFlags.register(fs, policyFlagSet{modes: true})
	fs.Var(&f.logPath, "log", "write the review log to `FILE` (default: the policy's log.path, else $XDG_STATE_HOME/permwrap/review.jsonl)")
	fs.Var(&f.requireLandlock, "require-landlock", "fail to start when the kernel has no Landlock")
	fs.Var(&f.name, "name", "when run inside another permwrap, the `NAME` its prompts and logs show for this one (default: the command's base name)")
}

// cmdRun runs a command under the sandbox: permwrap [flags] -- CMD [ARG...].
func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("permwrap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	f.register(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage, "\nflags for running a command:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "permwrap: no command given (usage: permwrap [flags] -- CMD [ARG...])")
		return exitInternal
	}
	osFile := func(x any, fallback *os.File) *os.File {
		if f, ok := x.(*os.File); ok {
			return f
		}
		return fallback
	}
	stdio := supervisor.Config{Stdin: osFile(stdin, os.Stdin), Stdout: osFile(stdout, os.Stdout), Stderr: osFile(stderr, os.Stderr)}
	// Under no seccomp filter, this permwrap is the root one: its
	// signals are caught and its stages (the watchdog and the init stage,
	// two processes) started while the policy loads and the review log
	// opens; the init stage waits for the spec Run writes
	// (supervisor.StartEarly). Under a filter, the knock below decides
	// first.
	early := startEarly(stdio)
	// Under a filter: inside another permwrap, this policy is handed to
	// it (forwarding.go), and the node's keeper starts while the policy
	// loads.
	var nested *nestedRun
	parent, parentErr := forwarding.ParentNone, error(nil)
	if !early.root() {
		parent, parentErr = forwarding.ProbeParent()
	}
	if parent == forwarding.ParentAnswers {
		var err error
		if nested, err = startNested(&f, argv, stdin); err != nil {
			printErr(stderr, "permwrap: ", err)
			return exitInternal
		}
	}
	handed := false
	defer func() {
		if !handed {
			early.abort()
			nested.abort()
		}
	}()
	ld, err := loadPolicy(&f.policyFlags, f.logPath.v)
	printWarnings(stderr, "permwrap: warning: ", ld.warnings)
	if err != nil {
		printErr(stderr, "permwrap: ", err)
		return exitInternal
	}
	policy := ld.policy
	switch parent {
	case forwarding.ParentAnswers:
		handed = true
		return nested.run(&f, ld, argv, stderr)
	case forwarding.ParentBusy:
		fmt.Fprintln(stderr, "permwrap:", parentErr)
		return exitInternal
	}
	if msg := policy.EveryExecAsks(); msg != "" {
		printLines(stderr, "permwrap: warning: ", msg)
	}
	if policy.AuditMode() {
		fmt.Fprintln(stderr, "permwrap: audit mode: what the policy would ask about or deny is allowed and logged as would_ask/would_deny in "+ld.logPath)
		fmt.Fprintln(stderr, "permwrap: audit mode: hard guards, protected writes and permwrap's own files are still enforced; `permwrap policy suggest` reads the log")
	}
	settings := policy.Settings()
	logOpts := logOptions(settings.Log)
	logOpts.Run = string(authority.NewRequestID())
	logOpts.ScratchDirs = scratchDirs(policy.Env())
	sinks, err := startEvents(settings.Events, &logOpts, stderr) // events.go
	if err != nil {
		printErr(stderr, "permwrap: ", err)
		return exitInternal
	}
	log, err := authority.OpenLog(ld.logPath, logOpts)
	if err != nil {
		sinks.Close()
		printErr(stderr, "permwrap: ", err) // the error names the review log
		printLines(stderr, "permwrap: ", logUnwritableHint(f.logPath.set))
		return exitInternal
	}
	sinks.SetSay(log.SayOnce)
	defer func() {
		// Records the file refused to the end (the person was told when
		// it began): say how many, once more, as the run ends.
		if err := log.Close(); errors.Is(err, authority.ErrUnwritten) {
			printErr(stderr, "permwrap: ", err)
		}
		reportEventDrops(stderr, sinks) // events.go
	}()
	// Fail at start, not at the first ask, when the reviewers are misconfigured.
	newDecider, err := deciderFactory(policy, settings, log, f.configDir.v, stderr)
	if err != nil {
		printErr(stderr, "permwrap: authorizers: ", err)
		return exitInternal
	}
	cfg := supervisor.Config{
		Policy:          policy,
		Argv:            argv,
		Log:             log,
		RequireLandlock: f.requireLandlock.v,
		Stdin:           stdio.Stdin,
		Stdout:          stdio.Stdout,
		Stderr:          stdio.Stderr,
		NewDecider:      newDecider,
	}
	if cfg.Early, err = early.take(); err != nil {
		printErr(stderr, "permwrap: ", err)
		return exitInternal
	}
	handed = true
	// Synchronous wake-up of the targets, for performance work only
	// (docs/kernel.md, "Performance": measured, not the default).
	cfg.SyncWakeUp = os.Getenv("PERMWRAP_SYNC_WAKEUP") == "1"
	// Call statistics by kind, for performance work (docs/kernel.md, "How
	// it is measured"). A nested permwrap (runNested) judges nothing
	// itself: the root counts its node's calls.
	cfg.Stats = os.Getenv("PERMWRAP_STATS")
	// A CPU profile of the supervisor, for performance work only. The
	// profiler's signals must reach the receiving threads, which
	// otherwise keep them blocked between calls (notify.Quiet).
	if p := os.Getenv("PERMWRAP_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			notify.SetProfiling(true)
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	status, err := supervisor.Run(context.Background(), cfg)
	if err != nil {
		printErr(stderr, "permwrap: ", err)
		return exitInternal
	}
	return status
}

// earlyStages are the run's signals and stages, caught and started in
// the background (supervisor.CatchSignals, supervisor.StartEarly) when
// this permwrap is under no seccomp filter.
type earlyStages struct {
	sigs *supervisor.Signals
	c    chan struct{} // closed once StartEarly returned
	e    *supervisor.Early
	err  error
	done bool // taken or aborted
}

// startEarly catches the run's signals and starts its stages in the
// background when no seccomp filter is on this process (then no permwrap
// supervises it, and it is the root). Go sets each signal up with a round
// trip to its signal thread, about 2 ms for the six on a busy machine;
// the two stages are Go processes. Under a filter Run does both, once the
// knock has said that this permwrap is not nested (a nested one catches
// its own signals and starts other stages).
func startEarly(stdio supervisor.Config) *earlyStages {
	es := &earlyStages{}
	if mode, _, err := forwarding.SelfSeccomp(); err != nil || mode != 0 {
		es.done = true
		return es
	}
	es.sigs = supervisor.CatchSignals()
	stdio.Signals = es.sigs
	es.c = make(chan struct{})
	go func() {
		es.e, es.err = supervisor.StartEarly(stdio)
		close(es.c)
	}()
	return es
}

// root reports whether this permwrap is the root (its stages started
// early).
func (es *earlyStages) root() bool { return es.c != nil }

// take waits for the stages, once: nil (Run starts them) when none were
// started early, or the reason they could not be.
func (es *earlyStages) take() (*supervisor.Early, error) {
	if es.done {
		return nil, nil
	}
	es.done = true
	<-es.c
	return es.e, es.err
}

// abort ends stages that were started and will not be run, and stops
// catching the signals (one that came meanwhile is raised again).
func (es *earlyStages) abort() {
	if e, _ := es.take(); e != nil {
		e.Abort()
	}
	if es.sigs != nil {
		es.sigs.Release()
	}
}

// logOptions are the review log's settings as authority.OpenLog takes
// them (0 there means the default; a setting of 0 means never / none).
func logOptions(s engine.LogSettings) authority.LogOptions {
	o := authority.LogOptions{FieldWidth: s.FieldWidth, ReadAllows: s.ReadAllows, ScratchWrites: s.ScratchWrites, RotateBytes: s.RotateBytes, Keep: s.Keep}
	if o.RotateBytes == 0 {
		o.RotateBytes = -1
	}
	if o.Keep == 0 {
		o.Keep = -1
	}
	return o
}

// userPolicyFile is the policy.jsonc a person's "always allow" / "always
// deny" at the prompt writes to, with what it held when the loader
// compiled it (the prompt refuses to write a file that changed since): the
// loader's own bytes, so the check is against exactly what is in force. A
// missing file starts empty: it extends the default profile like any
// policy.jsonc.
func userPolicyFile(configDir string, p *engine.Policy) *authority.PolicyFile {
	dir, err := engine.ConfigDir(configDir)
	if err != nil {
		return nil
	}
	seed := []byte("// permwrap policy: your rules, on top of the default profile\n// (`permwrap policy show default` prints it; docs/policy.md).\n{}\n")
	pf := &authority.PolicyFile{Path: filepath.Join(dir, engine.PolicyFileName), Seed: seed, Env: p.Env()}
	if g, ok := p.GlobalFile(); ok {
		if g.Name != pf.Path {
			return nil // not the file the loader read: no "always" options
		}
		pf.Loaded = g.Data
	}
	return pf
}

// deciderFactory composes, once, the parts of this node's authority
// chain: the links the configuration names, in its order, with their
// timeouts and the delegation envelope. The factory it returns only adds
// the terminal — a prompt on the relayed terminal when there is one,
// otherwise a terminal that denies ("confirmation unavailable") — and
// cannot fail.
func deciderFactory(p *engine.Policy, s engine.Settings, log *authority.Log, configDir string, stderr io.Writer) (func(authority.Screen) supervisor.Decider, error) {
	typos := append(s.TypoPaths, authority.WorkspaceSiblings(p.Env().Workspace)...)
	links, timeouts, err := authority.Links(s.Authorizers, typos)
	if err != nil {
		return nil, err
	}
	cc := authority.ChainConfig{
		Links:      s.AuthorizerChain,
		Timeouts:   timeouts,
		Delegation: s.ModelDelegation,
		Warn:       func(msg string) { printLines(stderr, "permwrap: warning: ", msg) },
	}
	if cc.Managed, err = managedLinks(p); err != nil {
		return nil, err
	}
	q := authority.QuerierFunc(func(c engine.Check) authority.QueryResult {
		r := p.Evaluate(c)
		return authority.QueryResult{Action: r.Action, Rule: r.Rule}
	})
	pf := userPolicyFile(configDir, p)
	return func(screen authority.Screen) supervisor.Decider {
		var term authority.Terminal = authority.DenyingTerminal{}
		cc := cc
		if screen != nil {
			pt := authority.NewPromptTerminal(screen, authority.PromptOptions{AskTimeout: s.AskTimeout})
			pt.SetPolicyFile(pf)
			term = pt
			// On a relayed terminal, warnings during the run go where the
			// relay shows notices: never into the agent's screen.
			if w, ok := screen.(io.Writer); ok {
				cc.Warn = func(msg string) { printLines(w, "permwrap: warning: ", msg) }
			}
		}
		return authority.NewChain(cc, links, term, log, q)
	}, nil
}

// logUnwritableHint says what works when the review log cannot be opened
// (a read-only HOME, a state directory on a read-only or full
// filesystem): every run records its decisions, so it needs a log it can
// write.
func logUnwritableHint(logFlag bool) string {
	if logFlag {
		return "every decision is recorded, and nothing runs without the review log: give --log a PATH in a writable directory"
	}
	return "every decision is recorded, and nothing runs without the review log; any of these puts it somewhere writable:\n" +
		"  --log PATH                     for this run (e.g. --log /tmp/permwrap-review.jsonl)\n" +
		"  XDG_STATE_HOME=DIR             the log goes to DIR/permwrap/review.jsonl\n" +
		"  \"log\": { \"path\": \"PATH\" }     in policy.jsonc, for every run"
}

// scratchDirs are the directories whose rule-allowed writes the review
// log sums up per process (log.scratchWrites): the temporary directories
// and the cache home, where compilers and package managers keep their
// work files. A directory that holds the home or the workspace is not
// scratch, whatever TMPDIR or XDG_CACHE_HOME say.
func scratchDirs(env engine.Env) []string {
	cands := []string{"/tmp", "/var/tmp", env.TmpDir}
	if d := os.Getenv("XDG_CACHE_HOME"); filepath.IsAbs(d) {
		cands = append(cands, d)
	} else if env.Home != "" {
		cands = append(cands, filepath.Join(env.Home, ".cache"))
	}
	var out []string
	for _, d := range cands {
		if !filepath.IsAbs(d) {
			continue
		}
		d = filepath.Clean(d)
		holds := func(p string) bool { return p != "" && (p == d || d == "/" || strings.HasPrefix(p, d+"/")) }
		if d == "/" || holds(env.Home) || holds(env.Workspace) || slices.Contains(out, d) {
			continue
		}
		out = append(out, d)
	}
	return out
}
