package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tailscale/hujson"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
)

const checkAbout = `Validate the effective configuration — the base profile, policy.jsonc,
hard-guards.jsonc, the project policies and every --policy scope — or
just FILE.

FILE is read as the kind its name says (policy.jsonc: global,
hard-guards.jsonc: hard guards, .permwrap/policy.jsonc: project,
anything else: a --policy scope, or a global policy when it says
"extends", as 'permwrap import --extends PROFILE' prints) unless --as
says otherwise.

Warnings (patterns that can never match, a project policy that is not
trusted, a policy that asks about every program) go to stderr as
"warning: ..." lines and do not fail the check.

Exit status: 0 valid (one summary line on stdout, then the authorizer
chain when reviewers are configured), 1 invalid (every
error on stderr as file:line:col: message), 125 usage error.`

// cmdCheck implements `permwrap check [FILE]`.
func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("check", "permwrap check [--policy FILE]... [--config-dir DIR] [--workspace DIR] [--profile P] [--as KIND] [FILE]", checkAbout, stderr)
	var pf policyFlags
	pf.register(fs, policyFlagSet{})
	var as onceString
	fs.Var(&as, "as", "read FILE as `KIND`: global, hard-guards, project or scope")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(stderr, "permwrap check: at most one FILE")
		fs.Usage()
		return exitInternal
	}
	env, err := engine.NewEnv(pf.workspace.v)
	if err != nil {
		fmt.Fprintln(stderr, "permwrap check: --workspace:", err)
		return exitInternal
	}
	if fs.NArg() == 1 {
		if len(pf.scopes) > 0 || pf.configDir.set || pf.profile.set {
			fmt.Fprintln(stderr, "permwrap check: FILE is checked on its own; --policy, --config-dir and --profile apply only without FILE")
			return exitInternal
		}
		return checkFile(fs.Arg(0), as.v, env, stdout, stderr)
	}
	if as.set {
		fmt.Fprintln(stderr, "permwrap check: --as needs a FILE")
		return exitInternal
	}
	return checkConfig(&pf, env, stdout, stderr)
}

// checkFile checks one file on its own, as the kind as names or its name
// says.
func checkFile(name, as string, env engine.Env, stdout, stderr io.Writer) int {
	kind, err := fileKindFor(name, as)
	if err != nil {
		fmt.Fprintln(stderr, "permwrap check:", err)
		return exitInternal
	}
	data, err := os.ReadFile(name)
	if err != nil {
		fmt.Fprintln(stderr, "permwrap check:", err)
		return exitFailure
	}
	if as == "" && kind == engine.FileScope && hasExtends(data) {
		// What `permwrap import --extends PROFILE` prints, or a copy of
		// a policy.jsonc: a scope may not say "extends", a global policy
		// may.
		kind = engine.FileGlobal
		fmt.Fprintf(stderr, "note: %s says \"extends\", so it is checked as a global policy.jsonc (a --policy scope may not say it; --as scope checks it as one)\n", name)
	}
	n, warns, err := engine.CheckFile(name, data, kind, env)
	printWarnings(stderr, "warning: ", warns)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "%s: ok: %s, %d rules\n", name, kind, n)
	return exitOK
}

// checkConfig checks the effective configuration. Every file is read
// and checked in full, so one pass reports every error: a scope that
// cannot be read is an error like a broken one.
func checkConfig(pf *policyFlags, env engine.Env, stdout, stderr io.Writer) int {
	cfg, warns, err := engine.ReadConfig(engine.LoadOptions{
		ConfigDir: pf.configDir.v, Scopes: pf.scopes, ScopesOptional: true,
		Profile: pf.profile.v, Env: env, NoProject: pf.noProject.v,
	})
	errs, rest := scopeErrors(warns, pf.scopesOptional.v)
	if err != nil {
		errs = append(errs, err)
	}
	var p *engine.Policy
	if err == nil {
		cfg.Scopes, cfg.ScopesRequired = readScopes(cfg.Scopes), !pf.scopesOptional.v
		var w2 []engine.Warning
		p, w2, err = engine.Compile(cfg)
		rest = append(rest, w2...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	printWarnings(stderr, "warning: ", rest)
	if len(errs) > 0 {
		fmt.Fprintln(stderr, errors.Join(errs...))
		return exitFailure
	}
	if msg := p.EveryExecAsks(); msg != "" {
		printLines(stderr, "warning: ", msg)
	}
	// The reviewers are built as a run builds them (a url's caFile read).
	s := p.Settings()
	if _, _, err := authority.Links(s.Authorizers, s.TypoPaths); err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailure
	}
	if _, err := managedLinks(p); err != nil {
		fmt.Fprintln(stderr, err)
		return exitFailure
	}
	fmt.Fprintln(stdout, p.Summary())
	for _, l := range reviewerLines(s) {
		fmt.Fprintln(stdout, l)
	}
	fmt.Fprintln(stdout, managedLine(p.Managed()))
	printEventSinks(stdout, s.Events) // events.go
	return exitOK
}

// scopeErrors splits what reading the configuration warned about: a
// scope that could not be read is an error unless scopes are optional;
// the rest stay warnings.
func scopeErrors(warns []engine.Warning, optional bool) (errs []error, rest []engine.Warning) {
	for _, w := range warns {
		if w.Err != nil && !optional {
			errs = append(errs, fmt.Errorf("%s: %v", w.Pos, w.Err))
			continue
		}
		rest = append(rest, w)
	}
	return errs, rest
}

// readScopes are the --policy scopes that could be read.
func readScopes(all []engine.File) []engine.File {
	var scopes []engine.File
	for _, s := range all {
		if s.Data != nil {
			scopes = append(scopes, s)
		}
	}
	return scopes
}

func fileKindFor(name, as string) (engine.FileKind, error) {
	switch as {
	case "global":
		return engine.FileGlobal, nil
	case "hard-guards":
		return engine.FileHardGuards, nil
	case "project":
		return engine.FileProject, nil
	case "scope":
		return engine.FileScope, nil
	case "":
	default:
		return 0, fmt.Errorf("--as %q: want global, hard-guards, project or scope", as)
	}
	switch {
	case filepath.Base(name) == engine.PolicyFileName && filepath.Base(filepath.Dir(name)) == engine.ProjectDirName:
		return engine.FileProject, nil
	case filepath.Base(name) == engine.PolicyFileName:
		return engine.FileGlobal, nil
	case filepath.Base(name) == engine.HardGuardsFileName:
		return engine.FileHardGuards, nil
	}
	return engine.FileScope, nil
}

// hasExtends reports whether a policy file's top-level object has the
// key "extends"; a file that does not parse has not (the check then
// reports why it does not parse).
func hasExtends(data []byte) bool {
	std, err := hujson.Standardize(data)
	if err != nil {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(std, &top) != nil {
		return false
	}
	_, ok := top["extends"]
	return ok
}
