package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/permwrap/permwrap/engine"
)

// scopeList is the repeatable --policy FILE flag.
type scopeList []string

func (s *scopeList) String() string     { return strings.Join(*s, ",") }
func (s *scopeList) Set(v string) error { *s = append(*s, v); return nil }

// policyFlags are the flags every command that loads the policy shares.
type policyFlags struct {
	scopes    scopeList
	configDir string
	workspace string
	yolo      bool
}

func (pf *policyFlags) register(fs *flag.FlagSet, withYolo bool) {
	fs.Var(&pf.scopes, "policy", "add a policy `FILE` as a scope above the global policy (repeatable; later files win ties)")
	fs.StringVar(&pf.configDir, "config-dir", "", "configuration `DIR` (default $PERMWRAP_CONFIG_DIR, else $XDG_CONFIG_HOME/permwrap, else ~/.config/permwrap)")
	fs.StringVar(&pf.workspace, "workspace", "", "the workspace `DIR` ${WORKSPACE} expands to (default: the current directory)")
	if withYolo {
		fs.BoolVar(&pf.yolo, "yolo", false, "rewrite every ask to allow (never a deny, a hard guard or a protected write)")
	}
}

func (pf *policyFlags) options() (engine.LoadOptions, error) {
	opts := engine.LoadOptions{ConfigDir: pf.configDir, Scopes: pf.scopes, Yolo: pf.yolo}
	if pf.workspace != "" {
		ws, err := filepath.Abs(pf.workspace)
		if err != nil {
			return opts, fmt.Errorf("--workspace %s: %w", pf.workspace, err)
		}
		opts.Env.Workspace = ws
	}
	opts.Env = engine.FillEnv(opts.Env)
	return opts, nil
}

// newFlagSet makes a FlagSet that reports to stderr and never exits.
func newFlagSet(name, usageLine, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n\n%s\n", usageLine, about)
		if hasFlags(fs) {
			fmt.Fprintln(stderr, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags parses args and maps -h to exit 0 and other errors to the
// usage exit code; ok is false when the caller should return code.
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return exitOK, false
	}
	return exitInternal, false
}

const checkAbout = `Validate the effective configuration: policy.jsonc (or the embedded
default), hard-guards.jsonc and every --policy scope, or just FILE.
FILE is read as the kind its name says (policy.jsonc: global,
hard-guards.jsonc: hard guards, anything else: a --policy scope) unless
--as says otherwise.

Exit status: 0 valid (one summary line on stdout), 1 invalid (every
error on stderr as file:line:col: message), 125 usage error.`

// cmdCheck implements `permwrap check [FILE]`.
func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("check", "permwrap check [--policy FILE]... [--config-dir DIR] [--workspace DIR] [--as KIND] [FILE]", checkAbout, stderr)
	var pf policyFlags
	pf.register(fs, false)
	as := fs.String("as", "", "read FILE as `KIND`: global, hard-guards or scope")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(stderr, "permwrap check: at most one FILE")
		fs.Usage()
		return exitInternal
	}
	opts, err := pf.options()
	if err != nil {
		fmt.Fprintln(stderr, "permwrap check:", err)
		return exitInternal
	}
	if fs.NArg() == 1 {
		if len(pf.scopes) > 0 || pf.configDir != "" {
			fmt.Fprintln(stderr, "permwrap check: FILE is checked on its own; --policy and --config-dir apply only without FILE")
			return exitInternal
		}
		name := fs.Arg(0)
		kind, err := fileKindFor(name, *as)
		if err != nil {
			fmt.Fprintln(stderr, "permwrap check:", err)
			return exitInternal
		}
		data, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(stderr, "permwrap check:", err)
			return exitFailure
		}
		n, err := engine.CheckFile(name, data, kind, opts.Env)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "%s: ok: %s, %d rules\n", name, kind, n)
		return exitOK
	}
	if *as != "" {
		fmt.Fprintln(stderr, "permwrap check: --as needs a FILE")
		return exitInternal
	}
	cfg, warns, err := engine.ReadConfig(opts)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailure
	}
	// A broken scope only floors permwrap to fail-closed at run time; here
	// it is an error like any other, so every file is checked in full.
	var errs []error
	for _, w := range warns {
		errs = append(errs, fmt.Errorf("%s: %v", w.File, w.Err))
	}
	global := cfg.Global
	if global == nil {
		global = &engine.File{Name: engine.DefaultPolicyName, Data: engine.DefaultPolicy()}
	}
	if _, err := engine.CheckFile(global.Name, global.Data, engine.FileGlobal, cfg.Env); err != nil {
		errs = append(errs, err)
	}
	if cfg.HardGuards != nil {
		if _, err := engine.CheckFile(cfg.HardGuards.Name, cfg.HardGuards.Data, engine.FileHardGuards, cfg.Env); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range cfg.Scopes {
		if s.Data == nil {
			continue // unreadable: already in warns
		}
		if _, err := engine.CheckFile(s.Name, s.Data, engine.FileScope, cfg.Env); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		fmt.Fprintln(stderr, errors.Join(errs...))
		return exitFailure
	}
	p, _, err := engine.Compile(cfg)
	if err != nil { // cannot happen after the checks above, but never claim ok
		fmt.Fprintln(stderr, err)
		return exitFailure
	}
	fmt.Fprintln(stdout, p.Summary())
	return exitOK
}

func fileKindFor(name, as string) (engine.FileKind, error) {
	switch as {
	case "global":
		return engine.FileGlobal, nil
	case "hard-guards":
		return engine.FileHardGuards, nil
	case "scope":
		return engine.FileScope, nil
	case "":
	default:
		return 0, fmt.Errorf("--as %q: want global, hard-guards or scope", as)
	}
	switch filepath.Base(name) {
	case engine.PolicyFileName:
		return engine.FileGlobal, nil
	case engine.HardGuardsFileName:
		return engine.FileHardGuards, nil
	}
	return engine.FileScope, nil
}
