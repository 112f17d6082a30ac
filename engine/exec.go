package engine

import (
	"fmt"
	"path"
	"strings"
)

// ExecIntent is one execve as the supervisor saw it.
type ExecIntent struct {
	Path     string   // the pathname given to execve, as the kernel got it (may be relative or bare)
	Resolved string   // the absolute, symlink-resolved binary
	Argv     []string // argv as read from the process; argv[0] is the caller's choice, never the command's identity
	Cwd      string   // the process's working directory, for relative redirect targets
}

// UnitDecision is how one unit of an exec was decided.
type UnitDecision struct {
	Unit   Unit
	Result Result
}

// RedirectDecision is how one redirection target was decided. Path is the
// absolute path checked, or "" when the directory was unknown and the
// opaque sentinel was evaluated instead.
type RedirectDecision struct {
	Redirect Redirect
	Path     string
	Result   Result
}

// CompoundDecision is a pipeline or list a rule named.
type CompoundDecision struct {
	Compound Compound
	Result   Result
}

// ExecDecision is the decision on an exec and everything its command line
// and script were found to run. Result is the most restrictive answer;
// Decider says which part produced it, for the denial reason and prompt.
type ExecDecision struct {
	Result    Result
	Decider   string
	Units     []UnitDecision
	Redirects []RedirectDecision
	Compounds []CompoundDecision
	Analysis  ShellAnalysis
}

// Reason is one line for a person: what was decided, on which part of the
// command, by which rule.
func (d ExecDecision) Reason() string {
	var b strings.Builder
	b.WriteString(d.Result.Action.String())
	if d.Decider != "" {
		b.WriteString(": ")
		b.WriteString(d.Decider)
	}
	b.WriteString(" — ")
	b.WriteString(d.Result.Rule.String())
	if d.Result.Rule.Reason != "" {
		b.WriteString(": ")
		b.WriteString(d.Result.Rule.Reason)
	}
	return b.String()
}

// decisionSet accumulates answers most-restrictive-wins, remembering which
// part decided; on a tie the earlier part (the exec itself first) stays.
// As in Policy.Decide, a check no rule matched abstains; only when every
// check abstains does the first fallback answer stand.
type decisionSet struct {
	best     Result
	decider  string
	have     bool
	fallback Result
	fbWhat   string
	haveFb   bool
}

func (s *decisionSet) add(r Result, what string) {
	if abstains(r) {
		if !s.haveFb {
			s.fallback, s.fbWhat, s.haveFb = r, what, true
		}
		return
	}
	if !s.have || r.Action > s.best.Action || r.Action == s.best.Action && r.HumanOnly && !s.best.HumanOnly {
		s.best, s.decider, s.have = r, what, true
	}
}

// addAlways counts r even when no rule matched: sentinels floor to the
// builtin ask rather than disappear.
func (s *decisionSet) addAlways(r Result, what string) {
	if !s.have || r.Action > s.best.Action || r.Action == s.best.Action && r.HumanOnly && !s.best.HumanOnly {
		s.best, s.decider, s.have = r, what, true
	}
}

func (s *decisionSet) result() (Result, string, bool) {
	if s.have {
		return s.best, s.decider, true
	}
	return s.fallback, s.fbWhat, s.haveFb
}

// abstains reports whether r is the answer for "no rule matched". A deny
// never abstains, whatever produced it.
func abstains(r Result) bool {
	return r.Action != Deny && (r.Layer == LayerBuiltin || r.Layer == LayerFallback)
}

// DecideExec decides an exec: the binary on the exec and path surfaces,
// its command line on the bash surface in every spelling a rule might be
// written for, and each unit its wrappers and script run, with redirect
// targets as path checks. See docs/bash-rules.md.
func (p *Policy) DecideExec(in ExecIntent) ExecDecision {
	var d ExecDecision
	var set decisionSet
	if in.Resolved == "" || !path.IsAbs(in.Resolved) {
		// Could not decide what runs: never fail open.
		r := Result{Action: Deny, Check: Check{Surface: SurfaceExec, Value: in.Path}, Layer: LayerBuiltin,
			Rule: Rule{Surface: SurfaceExec, Action: Deny, Origin: OriginBuiltin, Reason: "the program to run could not be resolved"}}
		d.Result, d.Decider = r, in.Path
		return d
	}
	set.add(p.DecidePath(AccessExec, in.Resolved), in.Resolved)

	var rest []string
	if len(in.Argv) > 1 {
		rest = in.Argv[1:]
	}
	nameForm := baseName(in.Path)
	if nameForm == "" {
		nameForm = baseName(in.Resolved)
	}
	argv := append([]string{nameForm}, rest...)

	// The wrapper identity is the binary that really runs; argv[0] only
	// counts for busybox, which dispatches on it.
	identity := baseName(in.Resolved)
	if identity == "busybox" && len(in.Argv) > 0 && baseName(in.Argv[0]) != "busybox" {
		identity = baseName(in.Argv[0])
	}
	d.Analysis = analyzeExec(identity, argv)

	// The exec itself, in every spelling.
	names := []string{nameForm}
	if strings.Contains(in.Path, "/") {
		names = appendUnique(names, in.Path)
	}
	names = appendUnique(names, in.Resolved)
	names = appendUnique(names, baseName(in.Resolved))
	home := p.env.Home
	var lines []string
	for _, n := range names {
		line := RenderArgv(append([]string{n}, rest...))
		lines = appendUnique(lines, line)
		if alt, ok := tildeSpelling(n, rest, home); ok {
			lines = appendUnique(lines, alt)
		}
	}
	first := p.EvaluateAny(SurfaceBash, lines...)
	self := d.Analysis.Units[0]
	d.Units = append(d.Units, UnitDecision{Unit: self, Result: first})
	set.add(first, self.Line)

	p.decideParts(&d, &set, d.Analysis, 1, in.Cwd)
	d.Result, d.Decider, _ = set.result()
	return d
}

// decideParts evaluates units[from:], redirects and compounds of a.
func (p *Policy) decideParts(d *ExecDecision, set *decisionSet, a ShellAnalysis, from int, cwd string) {
	home := p.env.Home
	for _, u := range a.Units[from:] {
		r := p.EvaluateAny(SurfaceBash, unitSpellings(u, home)...)
		d.Units = append(d.Units, UnitDecision{Unit: u, Result: r})
		if u.Sentinel != "" {
			set.addAlways(r, u.String())
		} else {
			set.add(r, u.String())
		}
	}
	for _, rd := range a.Redirects {
		abs, ok := redirectPath(rd, cwd, home)
		var r Result
		if ok {
			r = p.DecidePath(rd.Access, abs)
		} else {
			// Where the file lands is unknown: decide it as what
			// cannot be seen before it runs.
			r = p.Evaluate(Check{Surface: SurfaceBash, Value: SentinelOpaque})
		}
		d.Redirects = append(d.Redirects, RedirectDecision{Redirect: rd, Path: abs, Result: r})
		if ok {
			set.add(r, "redirect: "+rd.String())
		} else {
			set.addAlways(r, "redirect: "+rd.String())
		}
	}
	for _, c := range a.Compounds {
		// A compound counts only when a rule names it; otherwise the
		// catch-all would decide every pipeline.
		e := p.evaluate(Check{Surface: SurfaceBash, Value: c.Line})
		if !e.matched || e.Layer == LayerFallback || e.cr != nil && e.cr.Pattern == "*" {
			continue
		}
		d.Compounds = append(d.Compounds, CompoundDecision{Compound: c, Result: e.Result})
		set.add(e.Result, c.Line)
	}
}

// unitSpellings are the bash values a unit is evaluated as: its line, the
// basename form when the command was named by path, and the forms with
// the home directory written as ~ or ~ written as the home directory.
func unitSpellings(u Unit, home string) []string {
	if u.Sentinel != "" {
		return []string{u.Sentinel}
	}
	vals := []string{u.Line}
	if strings.Contains(u.Argv[0], "/") {
		argv := append([]string{baseName(u.Argv[0])}, u.Argv[1:]...)
		vals = appendUnique(vals, withMarker(renderWords(argv, u.Dynamic), u))
	}
	if home != "" && home != "/" && len(u.Dynamic) > 0 {
		// Dynamic words starting with ~ are as written; spell them out.
		argv := append([]string(nil), u.Argv...)
		changed := false
		for _, i := range u.Dynamic {
			if w := argv[i]; w == "~" || strings.HasPrefix(w, "~/") {
				argv[i] = home + w[1:]
				changed = true
			}
		}
		if changed {
			vals = appendUnique(vals, withMarker(renderWords(argv, u.Dynamic), u))
		}
	}
	if alt, ok := tildeSpelling(u.Argv[0], u.Argv[1:], home); ok && len(u.Dynamic) == 0 {
		vals = appendUnique(vals, withMarker(alt, u))
	}
	return vals
}

func withMarker(line string, u Unit) string {
	if u.StdinArgs {
		return line + " " + StdinArgsMarker
	}
	return line
}

// tildeSpelling writes arguments under the home directory with ~, so a
// rule written `rm -rf ~/*` meets the expanded argv the kernel sees.
func tildeSpelling(name string, rest []string, home string) (string, bool) {
	if home == "" || home == "/" {
		return "", false
	}
	home = strings.TrimSuffix(home, "/")
	changed := false
	words := make([]string, 0, len(rest)+1)
	words = append(words, name)
	var dyn []int
	for _, w := range rest {
		if w == home || strings.HasPrefix(w, home+"/") {
			w = "~" + w[len(home):]
			dyn = append(dyn, len(words))
			changed = true
		}
		words = append(words, w)
	}
	if !changed {
		return "", false
	}
	return renderWords(words, dyn), true
}

// redirectPath is the absolute path a redirect target names, if known.
func redirectPath(r Redirect, cwd, home string) (string, bool) {
	p := r.Path
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if home == "" || !path.IsAbs(home) {
			return "", false
		}
		return path.Join(home, p[1:]), true
	case strings.HasPrefix(p, "~"):
		return "", false // ~user: someone else's home
	case path.IsAbs(p):
		return path.Clean(p), true
	}
	dir := r.Dir
	switch {
	case dir == "":
		return "", false
	case path.IsAbs(dir):
	case cwd == "" || !path.IsAbs(cwd):
		return "", false
	default:
		dir = path.Join(cwd, dir)
	}
	return path.Join(dir, p), true
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// ExplainScript shows how line is judged as a script: each unit with the
// rule that decided it, each redirect, and the overall decision. Relative
// redirects are taken from the workspace directory.
func ExplainScript(p *Policy, line string) string {
	text, _ := explainScript(p, line)
	return text
}

func explainScript(p *Policy, line string) (string, Result) {
	a := AnalyzeScript(line)
	var d ExecDecision
	var set decisionSet
	d.Analysis = a
	p.decideParts(&d, &set, a, 0, p.env.Workspace)
	var ok bool
	d.Result, d.Decider, ok = set.result()
	if !ok {
		// Nothing runs (an empty script, only assignments): the line
		// itself is all there is to judge.
		d.Result, d.Decider = p.Evaluate(Check{Surface: SurfaceBash, Value: line}), line
	}

	var b strings.Builder
	b.WriteString("units:\n")
	if len(d.Units) == 0 {
		b.WriteString("  (none)\n")
	}
	for _, u := range d.Units {
		fmt.Fprintf(&b, "  %-5s  %s\n         %s\n", u.Result.Action, u.Unit.String(), u.Result.Rule.String())
	}
	if len(d.Redirects) > 0 {
		b.WriteString("redirects:\n")
		for _, r := range d.Redirects {
			where := r.Path
			if where == "" {
				where = r.Redirect.String() + " (directory unknown: decided as " + SentinelOpaque + ")"
			} else {
				where = accessName(r.Redirect.Access) + " " + where
			}
			fmt.Fprintf(&b, "  %-5s  %s\n         %s\n", r.Result.Action, where, r.Result.Rule.String())
		}
	}
	if len(d.Compounds) > 0 {
		b.WriteString("pipelines and lists named by a rule:\n")
		for _, c := range d.Compounds {
			fmt.Fprintf(&b, "  %-5s  %s\n         %s\n", c.Result.Action, c.Compound.Line, c.Result.Rule.String())
		}
	}
	fmt.Fprintf(&b, "overall: %s\n", d.Reason())
	return b.String(), d.Result
}

func accessName(a Access) string {
	switch a {
	case AccessRead:
		return "read"
	case AccessWrite:
		return "write"
	}
	return "read+write"
}

func init() {
	// The seam in explain.go: `permwrap explain bash LINE` shows units.
	CommandExplainer = explainScript
}
