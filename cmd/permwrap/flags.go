package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
)

// onceString is a single-valued string flag: giving it twice is an
// error, not a silent "last one wins".
type onceString struct {
	v   string
	set bool
}

func (o *onceString) String() string { return o.v }
func (o *onceString) Set(v string) error {
	if o.set {
		return errors.New("given more than once")
	}
	o.v, o.set = v, true
	return nil
}

// onceBool is a single-valued boolean flag.
type onceBool struct {
	v   bool
	set bool
}

func (o *onceBool) String() string   { return strconv.FormatBool(o.v) }
func (o *onceBool) IsBoolFlag() bool { return true }
func (o *onceBool) Set(v string) error {
	if o.set {
		return errors.New("given more than once")
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	o.v, o.set = b, true
	return nil
}

// scopeList is the repeatable --policy FILE flag.
type scopeList []string

func (s *scopeList) String() string     { return strings.Join(*s, ",") }
func (s *scopeList) Set(v string) error { *s = append(*s, v); return nil }

// policyFlags are the flags of every command that loads the policy: run,
// check and explain (one set, one meaning).
type policyFlags struct {
	scopes         scopeList
	scopesOptional onceBool
	configDir      onceString
	workspace      onceString
	profile        onceString
	noProject      onceBool
	yolo           onceBool
	audit          onceBool
}

// policyFlagSet says which of the mode flags a command takes.
type policyFlagSet struct{ modes bool }

func (pf *policyFlags) register(fs *flag.FlagSet, with policyFlagSet) {
	fs.Var(&pf.scopes, "policy", "add a policy `FILE` as a scope above the global policy (repeatable; later files win ties)")
	fs.Var(&pf.scopesOptional, "policy-optional", "run even when a --policy FILE is missing or broken (every allow then asks)")
	fs.Var(&pf.configDir, "config-dir", "configuration `DIR` (default $PERMWRAP_CONFIG_DIR, else $XDG_CONFIG_HOME/permwrap, else ~/.config/permwrap)")
	fs.Var(&pf.workspace, "workspace", "the workspace `DIR` ${WORKSPACE} names and relative patterns start from (default: the current directory)")
	fs.Var(&pf.profile, "profile", "the base `PROFILE` for this run: "+strings.Join(engine.ProfileNames(), ", ")+" or none (default: what policy.jsonc extends)")
	fs.Var(&pf.noProject, "no-project", "ignore the project policies (.permwrap/policy.jsonc up to the repository root)")
	if with.modes {
		fs.Var(&pf.yolo, "yolo", "answer every ask with allow (never a deny, a hard guard or a protected write)")
		fs.Var(&pf.audit, "audit", "allow what the policy would ask about or deny, and log it as would_ask/would_deny (hard guards and permwrap's own files stay protected)")
	}
}

// loaded is what loadPolicy gives every command.
type loaded struct {
	policy   *engine.Policy
	env      engine.Env
	warnings []engine.Warning
	// logPath is the review log this run writes: --log, else the
	// policy's log.path, else the default location.
	logPath string
}

// loadPolicy is the one policy loader of run, check and explain: the
// environment (engine.NewEnv, symlinks resolved, the workspace checked),
// the layers, the project policies and the paths permwrap protects (its
// configuration, its review log and state, its own binary). logFlag is
// --log ("" when the command has none).
func loadPolicy(pf *policyFlags, logFlag string) (loaded, error) {
	env, err := engine.NewEnv(pf.workspace.v)
	if err != nil {
		return loaded{}, fmt.Errorf("--workspace: %w", err)
	}
	opts := engine.LoadOptions{
		ConfigDir: pf.configDir.v, Scopes: pf.scopes, ScopesOptional: pf.scopesOptional.v,
		Profile: pf.profile.v, Env: env, Yolo: pf.yolo.v, Audit: pf.audit.v, NoProject: pf.noProject.v,
	}
	// permwrap's own files: the state directory with the default review
	// log, and the binary itself.
	if def, err := authority.DefaultLogPath(); err == nil {
		opts.Protect = append(opts.Protect, engine.Protected{Path: filepath.Dir(def), Tree: true, Reason: "permwrap's review log and state are read-only to what it runs"})
	}
	if exe, err := os.Executable(); err == nil {
		opts.Protect = append(opts.Protect, engine.Protected{Path: exe, Reason: "permwrap's own program is read-only to what it runs"})
	}
	logPath := logFlag
	if logPath != "" {
		if logPath, err = filepath.Abs(logPath); err != nil {
			return loaded{}, fmt.Errorf("--log: %w", err)
		}
		opts.Protect = append(opts.Protect, protectLog(logPath)...)
	}
	p, warns, err := engine.Load(opts)
	if err != nil {
		return loaded{warnings: warns}, err
	}
	if logPath == "" {
		if logPath = p.Settings().Log.Path; logPath != "" {
			// The policy names its own log: protect that too (a second
			// compile; the files are already read and cheap to redo).
			opts.Protect = append(opts.Protect, protectLog(logPath)...)
			if p, warns, err = engine.Load(opts); err != nil {
				return loaded{warnings: warns}, err
			}
		}
	}
	if logPath == "" {
		logPath, _ = authority.DefaultLogPath()
	}
	return loaded{policy: p, env: p.Env(), warnings: warns, logPath: logPath}, nil
}

// protectLog protects a review log outside permwrap's state directory:
// the file, its rotated older files (log.keep is at most
// engine.MaxLogKeep) and its lock.
func protectLog(path string) []engine.Protected {
	const reason = "permwrap's review log is read-only to what it runs"
	out := []engine.Protected{{Path: path, Reason: reason}, {Path: path + ".lock", Reason: reason}}
	for i := 1; i <= engine.MaxLogKeep; i++ {
		out = append(out, engine.Protected{Path: path + "." + strconv.Itoa(i), Reason: reason})
	}
	return out
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

// printErr writes err with prefix on every line, so a multi-line error
// (several configuration errors) reads as several permwrap lines.
func printErr(w io.Writer, prefix string, err error) {
	printLines(w, prefix, err.Error())
}

func printLines(w io.Writer, prefix, text string) {
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(w, "%s%s\n", prefix, line)
	}
}

// printWarnings writes each warning, every line prefixed.
func printWarnings(w io.Writer, prefix string, warns []engine.Warning) {
	for _, wn := range warns {
		printLines(w, prefix, wn.String())
	}
}
