package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
	shwords "mvdan.cc/sh/v3/shell"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/engine/shell"
)

// codex imports Codex's .rules files (Starlark: prefix_rule, network_rule,
// host_executable) and config.toml (sandbox mode, writable roots).
func (im *importer) codex(files []string) error {
	im.tool = "Codex"
	if len(files) == 0 {
		home := os.Getenv("CODEX_HOME")
		if home == "" {
			home = filepath.Join(im.env.Home, ".codex")
		}
		rules, _ := filepath.Glob(filepath.Join(home, "rules", "*.rules"))
		project, _ := filepath.Glob(filepath.Join(im.env.Workspace, ".codex", "rules", "*.rules"))
		files = append(append(rules, project...), existing(filepath.Join(home, "config.toml"))...)
		if len(files) == 0 {
			return fmt.Errorf("no Codex rules or config found in %s; name the files", home)
		}
	}
	im.header("codex", files)
	im.out.note("A prefix rule matches a command that starts with its words, here as")
	im.out.note("\"words *\" (which matches the bare words too). Codex lets the strictest of")
	im.out.note("several matching rules win; a rule inside a stricter one is left out.")
	for _, f := range files {
		var err error
		if strings.HasSuffix(f, ".toml") {
			err = im.codexConfig(f)
		} else {
			err = im.codexRules(f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// codexMaxSteps bounds a rules file's evaluation: it is a program.
const codexMaxSteps = 1_000_000

// codexMaxAlternatives bounds the command patterns one prefix_rule may
// expand to.
const codexMaxAlternatives = 256

func (im *importer) codexRules(name string) error {
	src, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	base := filepath.Base(name)
	thread := &starlark.Thread{Name: "permwrap import codex"}
	thread.SetMaxExecutionSteps(codexMaxSteps)
	builtins := starlark.StringDict{
		"prefix_rule": starlark.NewBuiltin("prefix_rule", func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var (
				pattern         *starlark.List
				decision        = "allow"
				match, notMatch *starlark.List
				justification   string
			)
			if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pattern, "decision?", &decision, "match?", &match, "not_match?", &notMatch, "justification?", &justification); err != nil {
				return nil, err
			}
			pos := th.CallFrame(1).Pos
			return starlark.None, im.codexPrefixRule(fmt.Sprintf("%s:%d", base, pos.Line), pattern, decision, match, notMatch, justification)
		}),
		"network_rule": starlark.NewBuiltin("network_rule", func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var host, protocol, decision, justification string
			if err := starlark.UnpackArgs(b.Name(), args, kwargs, "host", &host, "protocol", &protocol, "decision", &decision, "justification?", &justification); err != nil {
				return nil, err
			}
			pos := th.CallFrame(1).Pos
			where := fmt.Sprintf("%s:%d", base, pos.Line)
			what := fmt.Sprintf("network_rule(host=%q, protocol=%q, decision=%q) (%s)", host, protocol, decision, where)
			action, ok := codexAction(decision)
			if decision == "deny" {
				action, ok = "deny", true
			}
			if !ok {
				return nil, fmt.Errorf("network_rule: unknown decision %q", decision)
			}
			if !im.net {
				im.noNet(what)
				return starlark.None, nil
			}
			pat := host
			switch strings.ToLower(protocol) {
			case "https":
				pat += ":443"
			case "http":
				pat += ":80"
			}
			im.out.add(netSurface(), pat, action, justification, where+": "+what)
			return starlark.None, nil
		}),
		"host_executable": starlark.NewBuiltin("host_executable", func(th *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var exe string
			var paths *starlark.List
			if err := starlark.UnpackArgs(b.Name(), args, kwargs, "name", &exe, "paths", &paths); err != nil {
				return nil, err
			}
			im.out.skip(fmt.Sprintf("host_executable(name=%q) (%s:%d)", exe, base, th.CallFrame(1).Pos.Line), "not needed: permwrap judges a command by every spelling of its program (git and /usr/bin/git)")
			return starlark.None, nil
		}),
	}
	opts := &syntax.FileOptions{Set: true, TopLevelControl: true, GlobalReassign: true}
	if _, err := starlark.ExecFileOptions(opts, thread, name, src, builtins); err != nil {
		// Name the line of the file where it went wrong, as Codex does.
		var ee *starlark.EvalError
		if errors.As(err, &ee) {
			for i := len(ee.CallStack) - 1; i >= 0; i-- {
				if pos := ee.CallStack[i].Pos; pos.Filename() == name {
					return fmt.Errorf("%s:%d:%d: %s", name, pos.Line, pos.Col, ee.Msg)
				}
			}
			return fmt.Errorf("%s: %s", name, ee.Msg)
		}
		return err
	}
	return nil
}

// codexAction maps a Codex decision to an action.
func codexAction(d string) (string, bool) {
	switch d {
	case "allow":
		return "allow", true
	case "prompt":
		return "ask", true
	case "forbidden":
		return "deny", true
	}
	return "", false
}

func (im *importer) codexPrefixRule(where string, pattern *starlark.List, decision string, match, notMatch *starlark.List, justification string) error {
	action, ok := codexAction(decision)
	if !ok {
		return fmt.Errorf("prefix_rule: decision %q is not allow, prompt or forbidden", decision)
	}
	if pattern.Len() == 0 {
		return errors.New("prefix_rule: pattern cannot be empty")
	}
	alts, ok, err := codexAlternatives(pattern)
	if err != nil {
		return err
	}
	if !ok {
		im.out.skip(fmt.Sprintf("prefix_rule at %s", where), fmt.Sprintf("its alternatives expand to more than %d commands; write it as several rules", codexMaxAlternatives))
		return nil
	}
	pats, matchesAny, err := codexMatchers(where, alts)
	if err != nil {
		return err
	}
	// Codex checks match/not_match examples when it loads the file; so
	// does the import, against the patterns written here.
	bad, err := codexDisagreements(where, match, true, matchesAny)
	if err != nil {
		return err
	}
	badNot, err := codexDisagreements(where, notMatch, false, matchesAny)
	if err != nil {
		return err
	}
	bad = append(bad, badNot...)
	for _, pat := range pats {
		comment := fmt.Sprintf("%s: prefix_rule %s", where, decision)
		for _, b := range bad {
			comment += "\nWARNING: " + b
		}
		im.out.add(engine.SurfaceBash, pat, action, justification, comment)
	}
	return nil
}

// codexAlternatives expands a prefix_rule pattern, whose elements are a
// word or a list of alternative words, into every command it names. It
// returns false when they would be more than codexMaxAlternatives.
func codexAlternatives(pattern *starlark.List) ([][]string, bool, error) {
	alts := [][]string{{}}
	for i := 0; i < pattern.Len(); i++ {
		choices, err := codexChoices(pattern.Index(i))
		if err != nil {
			return nil, false, err
		}
		var next [][]string
		for _, a := range alts {
			for _, c := range choices {
				next = append(next, append(append([]string(nil), a...), c))
			}
		}
		if len(next) > codexMaxAlternatives {
			return nil, false, nil
		}
		alts = next
	}
	return alts, true, nil
}

// codexChoices are the words one pattern element allows: the string, or
// each string of the list.
func codexChoices(elem starlark.Value) ([]string, error) {
	switch v := elem.(type) {
	case starlark.String:
		return []string{string(v)}, nil
	case *starlark.List:
		return starlarkStrings(v, "prefix_rule: a pattern alternative must be a string", "prefix_rule: pattern alternatives cannot be empty")
	default:
		return nil, fmt.Errorf("prefix_rule: a pattern element must be a string or a list of strings, got %s", v.Type())
	}
}

// starlarkStrings are the strings of a non-empty list. When an element
// is not a string, the error is notString and its type; when the list is
// empty, it is empty.
func starlarkStrings(list *starlark.List, notString, empty string) ([]string, error) {
	var strs []string
	for i := 0; i < list.Len(); i++ {
		s, ok := list.Index(i).(starlark.String)
		if !ok {
			return nil, fmt.Errorf("%s, got %s", notString, list.Index(i).Type())
		}
		strs = append(strs, string(s))
	}
	if len(strs) == 0 {
		return nil, errors.New(empty)
	}
	return strs, nil
}

// codexMatchers are the command patterns written for alts, and whether a
// command line matches any of them.
func codexMatchers(where string, alts [][]string) ([]string, func(string) bool, error) {
	var matchers []func(string) bool
	var pats []string
	for _, words := range alts {
		pat := codexPattern(words)
		m, err := engine.CommandMatcher(pat)
		if err != nil {
			return nil, nil, fmt.Errorf("prefix_rule at %s: %v", where, err)
		}
		matchers = append(matchers, m)
		pats = append(pats, pat)
	}
	matchesAny := func(line string) bool {
		for _, m := range matchers {
			if m(line) {
				return true
			}
		}
		return false
	}
	return pats, matchesAny, nil
}

// codexDisagreements checks the examples of match (want true) or
// not_match (want false) against the patterns written: one warning for
// each the patterns read otherwise than Codex says.
func codexDisagreements(where string, list *starlark.List, want bool, matchesAny func(string) bool) ([]string, error) {
	if list == nil {
		return nil, nil
	}
	var bad []string
	for i := 0; i < list.Len(); i++ {
		argv, err := codexExample(list.Index(i))
		if err != nil {
			return nil, fmt.Errorf("prefix_rule at %s: %v", where, err)
		}
		line := shell.RenderArgv(argv)
		if matchesAny(line) != want {
			verb := "matches"
			if !want {
				verb = "does not match"
			}
			bad = append(bad, fmt.Sprintf("Codex says it %s %q; the pattern here disagrees", verb, line))
		}
	}
	return bad, nil
}

// codexPattern is the command pattern for a command that starts with
// words: their rendering (quoted as permwrap renders a command line),
// stars and backslashes escaped, and " *" for whatever follows.
func codexPattern(words []string) string {
	line := shell.RenderArgv(words)
	return strings.NewReplacer(`\`, `\\`, "*", `\*`).Replace(line) + " *"
}

// codexExample reads a match/not_match example: a list of words or a
// string split as a shell would.
func codexExample(v starlark.Value) ([]string, error) {
	switch v := v.(type) {
	case starlark.String:
		argv, err := shwords.Fields(string(v), func(string) string { return "" })
		if err != nil || len(argv) == 0 {
			return nil, fmt.Errorf("example %q is not a command", string(v))
		}
		return argv, nil
	case *starlark.List:
		return starlarkStrings(v, "example words must be strings", "an example cannot be empty")
	}
	return nil, fmt.Errorf("an example must be a string or a list of strings, got %s", v.Type())
}

// codexConfigFile is the part of Codex's config.toml the import reads.
type codexConfigFile struct {
	SandboxMode string `toml:"sandbox_mode"`
	// ApprovalPolicy is a string ("untrusted", "on-request", "never",
	// the older "on-failure") or a table (granular approvals).
	ApprovalPolicy        any `toml:"approval_policy"`
	SandboxWorkspaceWrite struct {
		WritableRoots       []string `toml:"writable_roots"`
		NetworkAccess       *bool    `toml:"network_access"`
		ExcludeTmpdirEnvVar bool     `toml:"exclude_tmpdir_env_var"`
		ExcludeSlashTmp     bool     `toml:"exclude_slash_tmp"`
	} `toml:"sandbox_workspace_write"`
	Projects map[string]struct {
		TrustLevel string `toml:"trust_level"`
	} `toml:"projects"`
}

// codexApprovals are the nearest permwrap behaviour to each of Codex's
// approval policies.
var codexApprovals = map[string]string{
	"untrusted":  "Codex then asks before any command outside its trusted set; the nearest is \"bash\": { \"*\": \"ask\" } with an allow rule per command you trust",
	"on-request": "the model then asks to leave the sandbox; permwrap asks a person at the first thing the policy says ask about, which is the nearest",
	"on-failure": "Codex then asks after a command fails in the sandbox; permwrap asks before, at the first thing the policy says ask about",
	"never":      "Codex then never asks and a refusal goes back to the model; permwrap does the same when no terminal can answer (a headless run denies every ask)",
}

// codexSettingsNear are the nearest permwrap rule to permission settings
// of config.toml the import does not carry over, by their first key.
var codexSettingsNear = map[string]string{
	"default_permissions":      "Codex permission profiles are not imported: write their filesystem and network rules as \"read\", \"write\" and \"net\" rules",
	"permissions":              "Codex permission profiles are not imported: write their filesystem and network rules as \"read\", \"write\" and \"net\" rules",
	"profiles":                 "only the top-level settings are imported; a profile's sandbox_mode and approval_policy are not (their nearest rules are the same as at the top level)",
	"shell_environment_policy": "permwrap passes the environment on as it is; it judges what the programs do, not what they are told",
	"sandbox_workspace_write":  "a workspace-write setting this import does not know",
	"features":                 "Codex features (its network proxy among them) are Codex's; permwrap judges every connection by its \"net\" rules",
	"mcp_servers":              "MCP servers Codex starts run under permwrap like any other program, judged by the same rules",
}

func (im *importer) codexConfig(name string) error {
	var c codexConfigFile
	md, err := toml.DecodeFile(name, &c)
	if err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	base := filepath.Base(name)
	mode := c.SandboxMode
	what := func(s string) string { return s + " (" + base + ")" }
	switch mode {
	case "", "workspace-write":
	case "read-only":
		im.out.skip(what(`sandbox_mode = "read-only"`), "run with --profile read-only for the same")
	case "danger-full-access":
		im.out.skip(what(`sandbox_mode = "danger-full-access"`), "Codex then runs unsandboxed; permwrap's default profile still applies (the nearest is --yolo for a run, never imported: deny rules and hard guards still hold)")
	default:
		im.out.skip(what(fmt.Sprintf("sandbox_mode = %q", mode)), "not a sandbox mode this import knows (read-only, workspace-write, danger-full-access)")
	}
	if mode == "workspace-write" {
		im.out.skip(what(`sandbox_mode = "workspace-write"`), "permwrap's default profile allows writes in the workspace and ${TMPDIR} and asks about the rest, where Codex refuses them; for Codex's refusal: \"write\": { \"*\": \"deny\" }")
	}
	ww := c.SandboxWorkspaceWrite
	for _, r := range ww.WritableRoots {
		if mode != "" && mode != "workspace-write" {
			im.out.skip(what("sandbox_workspace_write.writable_roots "+r), fmt.Sprintf("Codex uses them only in workspace-write mode, not %q", mode))
			continue
		}
		pat := strings.TrimRight(r, "/") + "/**"
		if !strings.HasPrefix(r, "/") && !strings.HasPrefix(r, "~") {
			pat = "${WORKSPACE}/" + pat
		}
		im.out.add(engine.SurfaceWrite, pat, "allow", "", base+": sandbox_workspace_write.writable_roots "+r)
	}
	if ww.ExcludeSlashTmp {
		im.out.add(engine.SurfaceWrite, "/tmp/**", "deny", "not writable in Codex's sandbox", base+": exclude_slash_tmp")
	}
	if ww.ExcludeTmpdirEnvVar {
		im.out.add(engine.SurfaceWrite, "${TMPDIR}/**", "deny", "not writable in Codex's sandbox", base+": exclude_tmpdir_env_var")
	}
	switch {
	case mode == "workspace-write" && (ww.NetworkAccess == nil || !*ww.NetworkAccess):
		if im.net {
			im.out.addFallback(netSurface(), "deny", "no network in Codex's workspace-write sandbox", base+": network_access = false")
		} else {
			im.noNet("sandbox_workspace_write.network_access = false (" + base + ")")
		}
	case ww.NetworkAccess != nil && *ww.NetworkAccess:
		im.out.skip(what("sandbox_workspace_write.network_access = true"), "permwrap asks about a connection to a host the policy does not name; the nearest is a \"net\" rule per host you use (\"github.com:443\": \"allow\"), or \"net\": { \"*\": \"allow\" } for every host")
	}
	switch ap := c.ApprovalPolicy.(type) {
	case nil:
	case string:
		why, ok := codexApprovals[ap]
		if !ok {
			why = "not an approval policy this import knows (untrusted, on-request, on-failure, never)"
		}
		im.out.skip(what(fmt.Sprintf("approval_policy = %q", ap)), why)
	default:
		im.out.skip(what("approval_policy (a table)"), "Codex's granular approvals are not imported; permwrap asks a person (or its authorizer chain) whenever a rule says ask")
	}
	dirs := make([]string, 0, len(c.Projects))
	for d := range c.Projects {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		if c.Projects[d].TrustLevel == "trusted" {
			im.out.skip(fmt.Sprintf("projects.%q trust_level (%s)", d, base), "Codex trust is not permwrap trust: run `permwrap trust "+d+"` for a project policy you trust")
		}
	}
	im.codexUndecoded(md, base)
	return nil
}

// codexUndecoded reports the settings of config.toml the import did not
// read: a permission setting by name with its nearest rule, the others
// in one line.
func (im *importer) codexUndecoded(md toml.MetaData, base string) {
	seen := map[string]bool{}
	var others []string
	for _, k := range md.Undecoded() {
		what := k.String()
		switch {
		case k[0] == "projects":
			continue // other project keys are not about permissions
		case k[0] == "sandbox_workspace_write":
			// Each unknown key of a table the import reads.
		case seen[k[0]]:
			continue
		default:
			what = k[0]
		}
		seen[what] = true
		if near, ok := codexSettingsNear[k[0]]; ok {
			im.out.skip(fmt.Sprintf("%s (%s)", what, base), near)
		} else {
			others = append(others, what)
		}
	}
	if len(others) > 0 {
		sort.Strings(others)
		im.out.skip(fmt.Sprintf("%s (%s)", strings.Join(others, ", "), base), "Codex's own settings, not rules about what the agent may touch")
	}
}
