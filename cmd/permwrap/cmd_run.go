package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/supervisor"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// runFlags are the flags of `permwrap [flags] -- CMD`.
type runFlags struct {
	configDir       string
	policies        stringList
	workspace       string
	yolo            bool
	logPath         string
	requireLandlock bool
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.configDir, "config-dir", "", "configuration `DIR` (default $PERMWRAP_CONFIG_DIR, else $XDG_CONFIG_HOME/permwrap, else ~/.config/permwrap)")
	fs.Var(&f.policies, "policy", "add a policy `FILE` as a scope above the global policy for this run (repeatable)")
	fs.StringVar(&f.workspace, "workspace", "", "the workspace `DIR` that ${WORKSPACE} names (default: the current directory)")
	fs.BoolVar(&f.yolo, "yolo", false, "answer every ask with allow (never loosens a deny or a hard guard)")
	fs.StringVar(&f.logPath, "log", "", "write the review log to `FILE` (default: $XDG_STATE_HOME/permwrap/review.jsonl)")
	fs.BoolVar(&f.requireLandlock, "require-landlock", false, "fail to start when the kernel has no Landlock")
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
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitInternal
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "permwrap: no command given (usage: permwrap [flags] -- CMD [ARG...])")
		return exitInternal
	}

	env, err := runEnv(f.workspace)
	if err != nil {
		fmt.Fprintf(stderr, "permwrap: %v\n", err)
		return exitInternal
	}
	policy, warnings, err := engine.Load(engine.LoadOptions{ConfigDir: f.configDir, Scopes: f.policies, Env: env, Yolo: f.yolo})
	if err != nil {
		fmt.Fprintf(stderr, "permwrap: %v\n", err)
		return exitInternal
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "permwrap: warning: %s (every allow of this run now asks)\n", w)
	}
	settings := policy.Settings()

	logPath := f.logPath
	if logPath == "" {
		logPath = settings.Log.Path
	}
	if logPath == "" {
		if logPath, err = authority.DefaultLogPath(); err != nil {
			fmt.Fprintf(stderr, "permwrap: review log: %v\n", err)
			return exitInternal
		}
	}
	log, err := authority.OpenLog(logPath, authority.LogOptions{FieldWidth: settings.Log.FieldWidth, ReadAllows: settings.Log.ReadAllows})
	if err != nil {
		fmt.Fprintf(stderr, "permwrap: review log: %v\n", err)
		return exitInternal
	}
	defer log.Close()

	osFile := func(x any, fallback *os.File) *os.File {
		if f, ok := x.(*os.File); ok {
			return f
		}
		return fallback
	}
	cfg := supervisor.Config{
		Policy:          policy,
		Argv:            argv,
		Log:             log,
		RequireLandlock: f.requireLandlock,
		Stdin:           osFile(stdin, os.Stdin),
		Stdout:          osFile(stdout, os.Stdout),
		Stderr:          osFile(stderr, os.Stderr),
	}
	// Fail at start, not at the first ask, when the reviewers are misconfigured.
	if _, err := buildDecider(policy, settings, log, nil, stderr); err != nil {
		fmt.Fprintf(stderr, "permwrap: authorizers: %v\n", err)
		return exitInternal
	}
	pf := userPolicyFile(f.configDir, policy.Env())
	cfg.NewDecider = func(screen authority.Screen) supervisor.Decider {
		// On a relayed terminal, warnings during the run go where the
		// relay shows notices: never into the agent's screen.
		warn := stderr
		if w, ok := screen.(io.Writer); ok {
			warn = w
		}
		d, _ := buildDecider(policy, settings, log, screen, warn)
		if c, ok := d.(*authority.Chain); ok {
			if pt, ok := c.Terminal().(*authority.PromptTerminal); ok {
				pt.SetPolicyFile(pf)
			}
		}
		return d
	}

	// A CPU profile of the supervisor, for performance work only.
	if p := os.Getenv("PERMWRAP_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	status, err := supervisor.Run(context.Background(), cfg)
	if err != nil {
		fmt.Fprintf(stderr, "permwrap: %v\n", err)
		return exitInternal
	}
	return status
}

// userPolicyFile is the policy.jsonc a person's "always allow" / "always
// deny" at the prompt writes to, with what it held at start (the prompt
// refuses to write a file that changed since). A missing file starts as
// the embedded default, which a policy.jsonc replaces.
// TODO(loader): take the bytes the loader compiled instead of reading
// the file a second time.
func userPolicyFile(configDir string, env engine.Env) *authority.PolicyFile {
	dir, err := engine.ConfigDir(configDir)
	if err != nil {
		return nil
	}
	pf := &authority.PolicyFile{Path: filepath.Join(dir, engine.PolicyFileName), Seed: engine.DefaultPolicy(), Env: env}
	if b, err := os.ReadFile(pf.Path); err == nil {
		pf.Loaded = b
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil // unreadable: no "always" options
	}
	return pf
}

// runEnv is the expansion environment: home, workspace, temp dir.
func runEnv(workspace string) (engine.Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return engine.Env{}, fmt.Errorf("no home directory: %w", err)
	}
	if workspace == "" {
		if workspace, err = os.Getwd(); err != nil {
			return engine.Env{}, err
		}
	}
	workspace, err = filepath.Abs(workspace)
	if err != nil {
		return engine.Env{}, err
	}
	if resolved, err := filepath.EvalSymlinks(workspace); err == nil {
		workspace = resolved
	}
	tmp := os.TempDir()
	if resolved, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = resolved
	}
	return engine.Env{Home: home, Workspace: workspace, TmpDir: tmp}, nil
}

// buildDecider composes the authority chain for this node: the links the
// configuration names, in its order, then the terminal — a prompt on the
// relayed terminal when there is one, otherwise a terminal that denies
// ("confirmation unavailable").
func buildDecider(p *engine.Policy, s engine.Settings, log *authority.Log, screen authority.Screen, stderr io.Writer) (supervisor.Decider, error) {
	execs := make(map[string]authority.ExecSpec, len(s.Authorizers))
	for name, a := range s.Authorizers {
		execs[name] = authority.ExecSpec{Command: a.Command, Timeout: a.Timeout}
	}
	var typos []authority.TypoPath
	for _, t := range s.TypoPaths {
		typos = append(typos, authority.TypoPath{From: t.From, To: t.To, Match: t.Match})
	}
	typos = append(typos, authority.WorkspaceSiblings(p.Env().Workspace)...)
	links, timeouts, err := authority.Links(execs, typos)
	if err != nil {
		return nil, err
	}
	cc := authority.ChainConfig{
		Links:    s.AuthorizerChain,
		Timeouts: timeouts,
		Delegation: authority.Delegation{
			AllowedSurfaces:  s.ModelDelegation.AllowedSurfaces,
			ExcludedSurfaces: s.ModelDelegation.ExcludedSurfaces,
		},
		Warn: func(msg string) { fmt.Fprintf(stderr, "permwrap: warning: %s\n", msg) },
	}
	q := authority.QuerierFunc(func(c engine.Check) authority.QueryResult {
		r := p.Evaluate(c)
		return authority.QueryResult{Action: r.Action, Rule: r.Rule}
	})
	var term authority.Terminal = authority.DenyingTerminal{}
	if screen != nil {
		term = authority.NewPromptTerminal(screen, authority.PromptOptions{AskTimeout: s.AskTimeout})
	}
	return authority.NewChain(cc, links, term, log, q), nil
}
