package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/permwrap/permwrap/engine"
)

const importAbout = `Print a permwrap policy equivalent to the rules another tool already has:

  permwrap import claude-code [SETTINGS.json...]
      Claude Code's permissions.allow / ask / deny: Bash(...) rules become
      command-line rules, Read(...) read rules, Edit(...) and Write(...)
      write rules, with Claude Code's path conventions (//abs, ~/, /path
      relative to the settings' root, ./path and path relative to the
      project). Default: ~/.claude/settings.json, .claude/settings.json and
      .claude/settings.local.json of the workspace, those that exist.

  permwrap import srt SETTINGS.json
      sandbox-runtime's filesystem.denyRead / allowWrite / denyWrite and
      network lists.

  permwrap import codex [RULES... CONFIG.toml]
      Codex's .rules files (prefix_rule, network_rule) and, from
      config.toml, the sandbox mode and writable roots. Default:
      ~/.codex/rules/*.rules and ~/.codex/config.toml ($CODEX_HOME).

Every rule that cannot be carried over is listed in a comment with the
reason, and so is every setting that has no permwrap equivalent, with the
nearest permwrap rule or flag. The policy builds on the default profile
and has no "extends" line, so it can be saved as policy.jsonc or passed
with --policy FILE; with --extends PROFILE it says "extends" and is a
policy.jsonc only. 'permwrap check FILE' accepts either.`

// cmdImport implements `permwrap import TOOL [FILE...]`.
func cmdImport(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("import", "permwrap import claude-code|srt|codex [--workspace DIR] [--extends PROFILE] [FILE...]", importAbout, stderr)
	var workspace, extends onceString
	fs.Var(&workspace, "workspace", "the project `DIR` relative paths are resolved against (default: the current directory)")
	fs.Var(&extends, "extends", "the `PROFILE` the printed policy extends: "+strings.Join(engine.ProfileNames(), ", ")+" or none (default: default)")
	if len(args) == 0 {
		fmt.Fprintln(stderr, "permwrap import: which tool? claude-code, srt or codex")
		fs.Usage()
		return exitInternal
	}
	tool := args[0]
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	if extends.v == "" {
		extends.v = engine.DefaultProfile
	}
	if extends.v != engine.ExtendsNone && !engine.IsProfile(extends.v) {
		fmt.Fprintf(stderr, "permwrap import: --extends %q: no such profile\n", extends.v)
		return exitInternal
	}
	env, err := engine.NewEnv(workspace.v)
	if err != nil {
		printErr(stderr, "permwrap import: --workspace: ", err)
		return exitInternal
	}
	im := &importer{env: env, out: newPolicyOut()}
	_, im.net = engine.ParseSurface("net")
	switch tool {
	case "claude-code", "claude":
		err = im.claudeCode(fs.Args())
	case "srt", "sandbox-runtime":
		err = im.srt(fs.Args())
	case "codex":
		err = im.codex(fs.Args())
	default:
		fmt.Fprintf(stderr, "permwrap import: unknown tool %q (want claude-code, srt or codex)\n", tool)
		return exitInternal
	}
	if err != nil {
		printErr(stderr, "permwrap import: ", err)
		return exitFailure
	}
	if extends.v == engine.ExtendsNone {
		im.baseline()
	}
	im.prune()
	// On the default profile the policy says no "extends" (policy.jsonc
	// extends the default unless it says otherwise), so the same text is
	// a policy.jsonc and a --policy scope, and `permwrap check` reads it
	// as either. Another base profile must be said, and only a
	// policy.jsonc may say it.
	kind, written := engine.FileScope, ""
	if extends.v != engine.DefaultProfile {
		kind, written = engine.FileGlobal, extends.v
		im.out.note(fmt.Sprintf("It extends %q: save it as policy.jsonc (a --policy scope cannot change the", extends.v))
		im.out.note(fmt.Sprintf("base profile; for one run: --profile %s --policy FILE without this line).", extends.v))
	} else {
		im.out.note("It builds on the default profile: save it as policy.jsonc, or pass it")
		im.out.note("with --policy FILE.")
	}
	text := im.out.render(written)
	if _, _, err := engine.CheckFile("imported.jsonc", []byte(text), kind, env); err != nil {
		printErr(stderr, "permwrap import: internal error: the imported policy does not load: ", err)
		return exitInternal
	}
	// The same list on stderr, where a person sees it when the policy
	// goes to a file.
	for _, w := range im.out.warned {
		printLines(stderr, "permwrap import: check: ", safeText(w))
	}
	for _, w := range im.out.skipped {
		printLines(stderr, "permwrap import: not carried over: ", safeText(w))
	}
	fmt.Fprint(stdout, text)
	return exitOK
}

// importer turns another tool's rules into a policyOut.
type importer struct {
	env  engine.Env
	out  *policyOut
	net  bool   // this permwrap has a net surface
	tool string // "Claude Code", for the notes
}

// baseline adds what the default profile would give, for a policy that
// extends nothing: reads, program starts and command lines allowed, as
// the other tools do, so the imported rules are the only restrictions.
func (im *importer) baseline() {
	for _, s := range []engine.Surface{engine.SurfaceRead, engine.SurfaceExec, engine.SurfaceBash} {
		if !im.has(s, "*") {
			im.out.add(s, "*", "allow", "", "")
		}
	}
}

func (im *importer) has(s engine.Surface, pattern string) bool {
	for _, r := range im.out.rules[s] {
		if r.pattern == pattern {
			return true
		}
	}
	return false
}

// prune applies the other tools' precedence (deny over ask over allow,
// whatever the order or specificity) where permwrap's most-specific-wins
// would differ: a rule that lies inside a stricter rule on its surface is
// left out, with a note.
func (im *importer) prune() {
	for _, s := range engine.Surfaces {
		rules := im.out.rules[s]
		var keep []outRule
		for _, r := range rules {
			a, _ := engine.ParseAction(r.action)
			var inside *outRule
			for i := range rules {
				o := &rules[i]
				b, _ := engine.ParseAction(o.action)
				if b > a && !o.fallback && im.contains(s, o.pattern, r.pattern) {
					inside = o
					break
				}
			}
			if inside == nil {
				keep = append(keep, r)
				continue
			}
			im.out.skip(fmt.Sprintf("%s %q (%s)", s, r.pattern, r.action),
				fmt.Sprintf("it overlaps %q (%s), which %s lets win wherever both match; here the more specific rule would win, so it is left out (the stricter answer)", inside.pattern, inside.action, im.tool))
		}
		if len(rules) > 0 {
			im.out.rules[s] = keep
		}
	}
}

// contains reports whether outer matches what inner names (inner's
// wildcards read as ordinary characters): inner lies inside outer.
func (im *importer) contains(s engine.Surface, outer, inner string) bool {
	if s == engine.SurfaceBash {
		m, err := engine.CommandMatcher(outer)
		if err != nil {
			return false
		}
		v := strings.TrimSuffix(inner, " *")
		v = strings.NewReplacer(`\*`, "*", `\\`, `\`, "*", "x").Replace(v)
		return m(v)
	}
	if !s.IsPath() {
		return false
	}
	oexp, err := engine.ExpandPathPattern(outer, im.env)
	if err != nil {
		return false
	}
	m, err := engine.PathMatcher(oexp)
	if err != nil {
		return false
	}
	iexp, err := engine.ExpandPathPattern(inner, im.env)
	if err != nil {
		return false
	}
	// Overlap is enough: the stricter rule wins there in the other tool,
	// so keeping the looser rule would loosen it. "**/" may stand for
	// nothing or for directories; try both.
	base := strings.TrimSuffix(iexp, "/**")
	for _, dirs := range []string{"", "x/"} {
		v := strings.ReplaceAll(base, "**/", dirs)
		v = strings.NewReplacer("**", "x", "*", "x", "?", "x", `\`, "").Replace(v)
		if !strings.HasPrefix(v, "/") {
			v = "/x/" + v
		}
		if m(v) {
			return true
		}
	}
	return false
}

// display names a file for a comment: ~/… under home, relative under the
// workspace, else as it is.
func (im *importer) display(abs string) string {
	switch {
	case strings.HasPrefix(abs, im.env.Workspace+"/"):
		return abs[len(im.env.Workspace)+1:]
	case strings.HasPrefix(abs, im.env.Home+"/"):
		return "~/" + abs[len(im.env.Home)+1:]
	}
	return abs
}

// noNet records a network rule this build cannot carry.
func (im *importer) noNet(what string) {
	im.out.skip(what, "this permwrap does not judge network connections yet (no \"net\" surface)")
}

// relTo expresses an absolute directory the way a policy names it:
// ${WORKSPACE}, ~/…, or as it is.
func (im *importer) relTo(dir string) string {
	dir = filepath.Clean(dir)
	switch {
	case dir == im.env.Workspace:
		return "${WORKSPACE}"
	case strings.HasPrefix(dir, im.env.Workspace+"/"):
		return "${WORKSPACE}/" + engine.QuoteGlob(dir[len(im.env.Workspace)+1:])
	case dir == im.env.Home:
		return "~"
	case strings.HasPrefix(dir, im.env.Home+"/"):
		return "~/" + engine.QuoteGlob(dir[len(im.env.Home)+1:])
	}
	return engine.QuoteGlob(dir)
}

// header names the files imported, as the first notes.
func (im *importer) header(cmd string, files []string) {
	im.out.note("Imported by `permwrap import " + cmd + "` from:")
	for _, f := range files {
		abs, _ := filepath.Abs(f)
		im.out.note("  " + im.display(abs))
	}
}

// existing returns the names that exist.
func existing(names ...string) []string {
	var out []string
	for _, n := range names {
		if _, err := os.Stat(n); err == nil {
			out = append(out, n)
		}
	}
	return out
}
