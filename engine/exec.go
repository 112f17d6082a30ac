package engine

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/permwrap/permwrap/engine/shell"
)

// ExecIntent is one execve as the supervisor saw it.
type ExecIntent struct {
	Path     string   // the pathname given to execve, as the kernel got it (may be relative or bare)
	Resolved string   // the absolute, symlink-resolved binary
	Argv     []string // argv as read from the process; argv[0] is the caller's choice, never the command's identity
	Cwd      string   // the process's working directory, for relative redirect targets and sourced files

	// Identity is the program the supervisor recognised the image to be by
	// its content (a copy, hard link or memfd of a binary it fingerprinted,
	// see Policy.ProgramNames): "git" means "judge this as git, whatever it
	// is called". "" when not recognised: the program is then known by the
	// basename of Resolved.
	Identity string
	// Identify, when set, names the program a file holds the same way, for
	// a file the exec runs inside its own process (`ld.so ./copy-of-git
	// push`), which no later execve will show. path is absolute. It
	// returns "" when the file is not a program it knows.
	Identify func(path string) string
	// Interpreters is the #! chain the kernel follows for a script,
	// outermost first: `#!/usr/bin/env python3` gives one entry
	// {Path: "/usr/bin/env", Arg: "python3", Resolved: "/usr/bin/env"}.
	// Empty for an ELF binary.
	Interpreters []Interp
	// Env holds the environment the exec passes (envp) or at least its
	// loader entries (LoaderEnv), as read once from the caller's memory:
	// the supervisor verifies that the kernel used the same ones. Code
	// they load from a place the tree can write makes the program judged
	// by its strictest command rule (exec_loader.go).
	Env []string
	// SystemFile reports whether the tree cannot change the file or
	// directory at an absolute path by itself (root's, in directories
	// only root may change, and the tree not root). nil: none is known
	// to be; the policy's write rules still tell.
	SystemFile func(path string) bool
	// ReadFile reads the files a script sources (`source .venv/bin/activate`)
	// as the target would, so that they are analysed with the script. nil:
	// sourced parts are judged as they run.
	ReadFile shell.FileReader
}

// Interp is one interpreter of a #! line.
type Interp struct {
	Path     string // as the #! line names it (the kernel passes it as argv[0])
	Arg      string // the optional argument: the rest of the line, one word, "" when none
	Resolved string // absolute and symlink-resolved, as the kernel will open it
}

// UnitDecision is how one unit of an exec was decided.
type UnitDecision struct {
	Unit   shell.Unit
	Result Result
	// Spellings are the bash values the unit was judged as: the line as
	// written, with the program's path or name, with ~ for the home
	// directory, and its canonical readings (`git -C d push` → `git
	// push`). Possible are readings that may or may not be what runs; they
	// only count when they are more restrictive. Both hold option
	// readings as evaluated (shell.IsOptionReading, NUL-led): show them
	// with shell.ShowReading.
	Spellings []string
	Possible  []string
	// AtRunTime is set for a sentinel no rule names: what it stands for is
	// judged as it runs (each exec, each open), not before.
	AtRunTime bool
}

// RedirectDecision is how one redirection target was decided. Path is the
// absolute path checked; "" with AtRunTime when the target is only known
// when the script runs, so the open is judged then.
type RedirectDecision struct {
	Redirect  shell.Redirect
	Path      string
	Result    Result
	AtRunTime bool
}

// CompoundDecision is a pipeline or list a rule named.
type CompoundDecision struct {
	Compound shell.Compound
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
	Analysis  shell.Analysis
	// PathUses are the files the analysis found the script's commands
	// using, with absolute paths: redirect targets (also judged above) and
	// arguments of known file commands (not judged here: they are judged
	// when opened). Approving the exec approves these with it (CoversPath).
	PathUses []PathUse
	// Effects are the places its commands' job is to write in (a local
	// push's remote, a new worktree: effects.go). Approving the exec, or a
	// rule allowing its own command line, approves the writes into them.
	Effects []Effect
	// Image is the answer for the files the kernel maps to run — the
	// binary and each interpreter of a #! chain, on the exec and read
	// surfaces — taken alone. When it is Allow, whatever refused the exec
	// was its command line or what that runs, and the image may start and
	// be stopped before it runs a line of its own (the supervisor does
	// that for a spawn whose error would hide the reason).
	Image Result
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

// CoversPath reports whether an access a to the absolute path p is one of
// the path uses the analysis found: when a person approved this exec,
// such an open is part of what they approved and need not ask again.
func (d *ExecDecision) CoversPath(a Access, p string) bool {
	for _, u := range d.PathUses {
		if u.Covers(a, p) {
			return true
		}
	}
	return false
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
	if !s.have || r.Stricter(s.best) {
		s.best, s.decider, s.have = r, what, true
	}
}

// takes reports whether add(r, …) would make r the answer, so callers
// build the description of the deciding part only when it is one.
func (s *decisionSet) takes(r Result) bool {
	if abstains(r) {
		return !s.haveFb
	}
	return !s.have || r.Stricter(s.best)
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

// couldNotDecide is the answer when what runs cannot be known.
func couldNotDecide(s Surface, value, why string) Result {
	return Result{Action: Deny, Check: Check{Surface: s, Value: value}, Layer: LayerBuiltin,
		Rule: Rule{Surface: s, Action: Deny, Origin: OriginBuiltin, Reason: why}}
}

// DecideExec decides an exec: the binary on the exec, read and path
// surfaces (it is mapped into a process the agent controls), its command
// line on the bash surface in every spelling a rule might be written for,
// each unit its wrappers and script run, redirect targets as path checks,
// and for a #! script the interpreters and the command line the kernel
// builds. See docs/bash-rules.md.
func (p *Policy) DecideExec(in ExecIntent) ExecDecision {
	var d ExecDecision
	var set decisionSet
	if in.Resolved == "" || !path.IsAbs(in.Resolved) {
		// Could not decide what runs: never fail open.
		d.Result, d.Decider = couldNotDecide(SurfaceExec, in.Path, "the program to run could not be resolved"), in.Path
		if d.Decider == "" {
			d.Decider = "an exec with an empty path"
		}
		return d
	}
	ctx := shell.ScriptContext{Cwd: in.Cwd, Home: p.env.Home, ReadFile: p.guardReads(in.ReadFile)}
	identity := in.Identity
	if identity == "" {
		identity = shell.BaseName(in.Resolved)
	}
	argv0 := ""
	if len(in.Argv) > 0 {
		argv0 = in.Argv[0]
	}
	if identity == "busybox" && argv0 != "" && shell.BaseName(argv0) != "busybox" {
		// busybox runs the applet argv[0] names.
		identity = shell.BaseName(argv0)
	}
	var rest []string
	if len(in.Argv) > 1 {
		rest = in.Argv[1:]
	}
	var image decisionSet
	p.decideImage(&set, &image, in.Resolved, "")
	d.Analysis = p.decideCommand(&d, &set, execCommand{path: in.Path, resolved: in.Resolved, identity: identity,
		argv0: argv0, args: rest}, in, ctx)
	loads := LoaderEnv(in.Env)
	if len(d.Units) > 0 {
		p.decideLoaded(&set, loads, in.Cwd, in.SystemFile, identity, d.Units[0].Unit.Line)
	}

	// A #! script: the kernel runs `INTERPRETER [ARG] SCRIPT ARGS…`, once
	// per level of the chain. Each interpreter is mapped like the script
	// itself, and each line it is given meets the command rules too.
	file, args := in.Path, rest
	for i, ip := range in.Interpreters {
		res := ip.Resolved
		if res == "" && path.IsAbs(ip.Path) {
			res = path.Clean(ip.Path)
		}
		if res == "" || !path.IsAbs(res) {
			r := couldNotDecide(SurfaceExec, ip.Path, "the interpreter of a #! script could not be resolved")
			set.add(r, "#! "+ip.Path)
			image.add(r, "")
			break
		}
		p.decideImage(&set, &image, res, "#! ")
		line := []string{file}
		if ip.Arg != "" {
			line = []string{ip.Arg, file}
		}
		line = append(line, args...)
		via := []string{"#!"}
		if len(in.Interpreters) > 1 {
			via = []string{fmt.Sprintf("#! (%d of %d)", i+1, len(in.Interpreters))}
		}
		a := p.decideCommand(&d, &set, execCommand{path: ip.Path, resolved: res, identity: shell.BaseName(res),
			argv0: ip.Path, args: line, via: via}, in, ctx)
		p.decideLoaded(&set, loads, in.Cwd, in.SystemFile, shell.BaseName(res), shell.RenderArgv(line)+" (via "+via[0]+")")
		d.Analysis.Units = append(d.Analysis.Units, a.Units...)
		d.Analysis.Redirects = append(d.Analysis.Redirects, a.Redirects...)
		d.Analysis.Compounds = append(d.Analysis.Compounds, a.Compounds...)
		file, args = ip.Path, line
	}
	d.Result, d.Decider, _ = set.result()
	d.Image, _, _ = image.result()
	return d
}

// guardReads keeps the analysis from reading a sourced file the policy
// does not let the agent read without asking (`source ~/.ssh/id_rsa`):
// its contents would surface in the units shown and logged. Such a file
// is judged when the shell opens it, like any other read.
func (p *Policy) guardReads(r shell.FileReader) shell.FileReader {
	if r == nil {
		return nil
	}
	return func(file string, limit int) ([]byte, error) {
		if res := p.DecidePath(AccessRead, file); res.Action != Allow {
			return nil, fmt.Errorf("not read before it runs: reading %s is %s by %s", file, actionVerb(res.Action), res.Rule.String())
		}
		return r(file, limit)
	}
}

func actionVerb(a Action) string {
	switch a {
	case Ask:
		return "asked about"
	case Deny:
		return "denied"
	}
	return a.String()
}

// decideImage checks a file the kernel maps to run: exec needs read as
// well, or a binary the policy keeps from being read could be run, and
// its pages read, by a process the agent controls. The checks go to set,
// with everything else about the exec, and to image, the images alone.
func (p *Policy) decideImage(set, image *decisionSet, file, prefix string) {
	x := p.DecidePath(AccessExec, file)
	set.add(x, prefix+file)
	image.add(x, "")
	// The read check can only make the answer stricter: a read allow
	// must not stand in for an exec the policy says nothing about.
	if r := p.DecidePath(AccessRead, file); r.Action != Allow {
		image.add(r, "")
		if set.takes(r) {
			set.add(r, prefix+"read of "+file)
		}
	}
}

// execCommand is one command line the kernel runs: the exec itself, or
// the line it builds for an interpreter.
type execCommand struct {
	path, resolved string // as invoked, and resolved
	identity       string // the program it is
	argv0          string // what the program gets as argv[0]
	args           []string
	via            []string
}

// decideCommand judges one command line the kernel runs and everything it
// is found to run, adding to d; it returns its analysis.
func (p *Policy) decideCommand(d *ExecDecision, set *decisionSet, c execCommand, in ExecIntent, ctx shell.ScriptContext) shell.Analysis {
	nameForm := shell.BaseName(c.path)
	if nameForm == "" {
		nameForm = shell.BaseName(c.resolved)
	}
	a := shell.AnalyzeExec(c.identity, append([]string{nameForm}, c.args...), ctx, c.via)
	names := []string{nameForm}
	if strings.Contains(c.path, "/") {
		names = appendUnique(names, c.path)
	}
	names = appendUnique(names, c.resolved)
	names = appendUnique(names, shell.BaseName(c.resolved))
	if c.identity != shell.BaseName(c.resolved) && in.Identity == c.identity {
		names = appendUnique(names, c.identity)
	}
	// One allocation for the parts, not one per doubling.
	d.Units = slices.Grow(d.Units, len(a.Units))
	d.Redirects = slices.Grow(d.Redirects, len(a.Redirects))
	self := a.Units[0]
	r, sp, poss, shown, as := p.judgeSpellings(shell.ExecSpellings(c.identity, c.argv0, names, c.args, self.Line, p.env.Home))
	if len(c.via) == 0 && r.Action != Deny {
		d.Effects = append(d.Effects, p.effectsOf(self, c.identity, in.Cwd, in.ReadFile, len(d.Units))...)
	}
	d.Units = append(d.Units, UnitDecision{Unit: self, Result: r, Spellings: sp, Possible: poss})
	what := self.Line
	if shown != "" {
		what = shown
	}
	what += as
	if len(c.via) > 0 {
		what += " (via " + strings.Join(c.via, ", ") + ")"
	}
	set.add(r, what)
	p.decideParts(d, set, a, 1, in)
	return a
}

// evaluateSpellings decides a command from its certain spellings (the most
// specific rule among them decides, see EvaluateAny) and its possible
// readings, each of which can only make the answer more restrictive, and
// only through a rule that names it (not the catch-all).
func (p *Policy) evaluateSpellings(certain, possible []string) Result {
	r := p.EvaluateAny(SurfaceBash, certain...)
	for _, v := range possible {
		e := p.evaluate(Check{Surface: SurfaceBash, Value: v}, assumeSecret)
		if !namedByRule(e) {
			continue
		}
		if e.Stricter(r) {
			r = e.Result
		}
	}
	return r
}

// readAs names the reading that decided a command when it was one of its
// possible readings (`git send-pack …` read as `git push …`, `git pushh`
// as the push git may autocorrect it to), so the person sees why a rule
// for another command line applies.
func readAs(r Result, possible []string) string {
	if r.Check.Surface == SurfaceBash && slices.Contains(possible, r.Check.Value) {
		return " (may run as: " + r.Check.Value + ")"
	}
	return ""
}

// namedByRule reports whether a rule other than the catch-all named the
// value: what sentinels, compounds and possible readings need to count.
func namedByRule(e evaluation) bool {
	return e.matched && e.Layer != LayerFallback && e.Layer != LayerBuiltin && !(e.cr != nil && e.cr.Pattern == "*")
}

// decideParts evaluates units[from:], redirects, compounds and path uses
// of a.
func (p *Policy) decideParts(d *ExecDecision, set *decisionSet, a shell.Analysis, from int, in ExecIntent) {
	home := p.env.Home
	resolve := func(p, dir string) (string, bool) { return resolveIn(p, dir, in.Cwd, home) }
	for _, u := range a.Units[from:] {
		if u.Sentinel != "" {
			// What cannot be seen before it runs is judged when it runs:
			// every exec and every open it makes. A sentinel counts only
			// when a rule names it (for users who want to be asked).
			e := p.evaluate(Check{Surface: SurfaceBash, Value: u.Sentinel}, assumeSecret)
			named := namedByRule(e)
			d.Units = append(d.Units, UnitDecision{Unit: u, Result: e.Result, Spellings: []string{u.Sentinel}, AtRunTime: !named})
			if named {
				set.add(e.Result, u.String())
			}
			continue
		}
		prog := p.unitProgram(u, in)
		r, sp, poss, shown, as := p.judgeSpellings(shell.UnitSpellings(u, prog, p.env.Home))
		if dir, ok := resolveIn(".", u.Dir, in.Cwd, home); ok && r.Action != Deny {
			d.Effects = append(d.Effects, p.effectsOf(u, prog, dir, in.ReadFile, len(d.Units))...)
		}
		d.Units = append(d.Units, UnitDecision{Unit: u, Result: r, Spellings: sp, Possible: poss})
		if u.InProcess {
			// The loader runs it in its own process, with the libraries
			// its environment and options name.
			p.decideLoaded(set, append(LoaderEnv(in.Env), u.Loads...), in.Cwd, in.SystemFile, prog, u.String())
		}
		if set.takes(r) {
			what := u.String()
			if shown != "" {
				what = shown
			}
			set.add(r, what+as)
		} else {
			set.add(r, "")
		}
		d.PathUses = append(d.PathUses, pathUsesOf(shell.ArgPathUses(u, resolve))...)
	}
	for _, rd := range a.Redirects {
		abs, ok := redirectPath(rd, in.Cwd, home)
		if !ok {
			// Where the file lands is known only when the script runs:
			// the open is judged then, like any other.
			d.Redirects = append(d.Redirects, RedirectDecision{Redirect: rd, AtRunTime: true})
			continue
		}
		r := p.DecidePath(Access(rd.Access), abs)
		d.Redirects = append(d.Redirects, RedirectDecision{Redirect: rd, Path: abs, Result: r})
		set.add(r, "redirect: "+rd.String())
		d.PathUses = append(d.PathUses, PathUse{Access: Access(rd.Access), Path: abs, From: "redirect"})
	}
	for _, c := range a.Compounds {
		// A compound counts only when a rule names it; otherwise the
		// catch-all would decide every pipeline.
		e := p.evaluate(Check{Surface: SurfaceBash, Value: c.Line}, assumeSecret)
		if !namedByRule(e) {
			continue
		}
		d.Compounds = append(d.Compounds, CompoundDecision{Compound: c, Result: e.Result})
		set.add(e.Result, c.Line)
	}
}

// unitProgram is the program a unit runs: its name, or for a file the
// loader runs in its own process, what the file is by content.
func (p *Policy) unitProgram(u shell.Unit, in ExecIntent) string {
	prog := shell.BaseName(u.Argv[0])
	if u.InProcess && in.Identify != nil && strings.Contains(u.Argv[0], "/") {
		if abs, ok := resolveIn(u.Argv[0], u.Dir, in.Cwd, p.env.Home); ok {
			if id := in.Identify(abs); id != "" {
				prog = id
			}
		}
	}
	return prog
}

// judgeSpellings evaluates a command in the spellings the analysis found
// for it, returning them, its display form and what readAs says with
// the result. The spellings are returned as evaluated: option readings
// (shell.IsOptionReading) are rendered where they are shown
// (showReadings); in the result's check, which the prompt, the notices
// and the log show, the reading is rendered already.
func (p *Policy) judgeSpellings(sp shell.Spellings) (Result, []string, []string, string, string) {
	r := p.evaluateSpellings(sp.Certain, sp.Possible)
	as := readAs(r, sp.Possible)
	if r.Check.Surface == SurfaceBash && shell.IsOptionReading(r.Check.Value) {
		r.Check.Value = shell.ShowReading(r.Check.Value)
		if as != "" {
			as = " (may run as: " + r.Check.Value + ")"
		}
	}
	return r, sp.Certain, sp.Possible, sp.Shown, as
}

// showReadings is the list with its option readings as a person reads
// them (a copy when there are any). A reading without options says
// nothing the line as written does not, and is left out unless it is
// the one that decided.
func showReadings(list []string, decided string) []string {
	for i, v := range list {
		if shell.IsOptionReading(v) {
			out := slices.Clone(list[:i])
			for _, w := range list[i:] {
				if !shell.IsOptionReading(w) {
					out = append(out, w)
				} else if shell.ShowReading(w) == decided || shell.ReadingHasOptions(w) {
					out = append(out, shell.ShowReading(w))
				}
			}
			return out
		}
	}
	return list
}

// resolveIn makes a path a command names absolute: relative ones against
// dir (as in Unit.Dir) and the working directory cwd.
func resolveIn(p, dir, cwd, home string) (string, bool) {
	switch {
	case p == "":
		return "", false
	case p == "~" || strings.HasPrefix(p, "~/"):
		if !path.IsAbs(home) {
			return "", false
		}
		return path.Join(home, p[1:]), true
	case strings.HasPrefix(p, "~"):
		return "", false // ~user: someone else's home
	case path.IsAbs(p):
		return path.Clean(p), true
	case dir == "":
		return "", false
	case path.IsAbs(dir):
		return path.Join(dir, p), true
	case !path.IsAbs(cwd):
		return "", false
	}
	return path.Join(cwd, dir, p), true
}

// redirectPath is the absolute path a redirect target names, if known.
func redirectPath(r shell.Redirect, cwd, home string) (string, bool) {
	if r.Computed {
		return "", false
	}
	return resolveIn(r.Path, r.Dir, cwd, home)
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// SessionPattern is a rule an "allow for this session" answer would add.
type SessionPattern struct {
	Surface Surface
	Pattern string
}

func (s SessionPattern) String() string { return s.Surface.String() + ":" + s.Pattern }

// SuggestSession proposes the session rules for approving d: for each part
// that asked, the narrowest useful pattern. A command: its
// shell.SuggestBashPattern (`git push origin main`, `npm install *`). A file: the
// file itself, or the directory it is in (`/srv/app/logs/**`) — never a
// directory as wide as /, a top-level directory, the home directory, the
// workspace or a temporary area, where the file is suggested instead.
// Parts only a person may approve, and sentinels, get none. The shell
// line of a script is not suggested when its units are: approving
// `bash -c '…'` for the session would cover that exact text only.
func (p *Policy) SuggestSession(d ExecDecision) []SessionPattern {
	var out []SessionPattern
	add := func(sp SessionPattern) {
		for _, x := range out {
			if x == sp {
				return
			}
		}
		out = append(out, sp)
	}
	asked := func(r Result) bool { return r.Action == Ask && !r.HumanOnly }
	for i, u := range d.Units {
		if !asked(u.Result) || u.Unit.Sentinel != "" || len(u.Unit.Argv) == 0 {
			continue
		}
		if i == 0 && len(d.Units) > 1 && !d.Units[0].Unit.StdinArgs {
			if shell.IsShell(shell.BaseName(u.Unit.Argv[0])) {
				continue
			}
		}
		pat := shell.SuggestBashPattern(u.Unit.Argv)
		if u.Unit.StdinArgs && !strings.HasSuffix(pat, " *") {
			pat += " *"
		}
		add(SessionPattern{Surface: SurfaceBash, Pattern: pat})
	}
	for _, r := range d.Redirects {
		if r.AtRunTime || !asked(r.Result) {
			continue
		}
		add(p.suggestPathUse(PathUse{Access: Access(r.Redirect.Access), Path: r.Path}))
	}
	for _, u := range d.PathUses {
		if u.From == "redirect" {
			continue // judged above with the redirect
		}
		if r := p.DecidePath(u.Access, u.Path); asked(r) {
			add(p.suggestPathUse(u))
		}
	}
	if len(out) == 0 && asked(d.Result) && len(d.Units) > 0 && d.Units[0].Unit.Sentinel == "" {
		// Only the program itself asked (an exec or read rule on it).
		v := d.Result.Check.Value
		if d.Result.Check.Surface == SurfaceBash {
			v = shell.EscapeBashPattern(v)
		} else {
			v = QuoteGlob(v)
		}
		add(SessionPattern{Surface: d.Result.Check.Surface, Pattern: v})
	}
	return withoutSubsumed(out)
}

// withoutSubsumed drops a path pattern another one of the list already
// covers (`/w/out/a/**` beside `/w/out/**`, from `mkdir -p out/a/b`): the
// person reads, and may edit, each line that is left.
func withoutSubsumed(list []SessionPattern) []SessionPattern {
	covered := func(q SessionPattern) bool {
		for _, p := range list {
			if p == q || p.Surface != q.Surface || !p.Surface.IsPath() {
				continue
			}
			if dir, ok := strings.CutSuffix(p.Pattern, "/**"); ok && !strings.ContainsAny(dir, "*?[{\\") && strings.HasPrefix(q.Pattern, dir+"/") {
				return true
			}
		}
		return false
	}
	out := list[:0:0]
	for _, q := range list {
		if !covered(q) {
			out = append(out, q)
		}
	}
	return out
}

// suggestPathUse is the session pattern for one file use.
func (p *Policy) suggestPathUse(u PathUse) SessionPattern {
	s := SurfaceWrite
	if u.Access&AccessWrite == 0 {
		s = SurfaceRead
	}
	if u.Tree {
		// The tree the command named (`rm -r build`), unless it is a
		// whole area (`rm -rf .` in the workspace): that is approved
		// once, and widened for the session only by the person.
		if wideArea(u.Path, p.env) {
			return SessionPattern{Surface: s, Pattern: QuoteGlob(u.Path)}
		}
		return SessionPattern{Surface: s, Pattern: QuoteGlob(u.Path) + "/**"}
	}
	return SessionPattern{Surface: s, Pattern: SuggestPathPattern(u.Access, u.Path, p.env)}
}

// broadDir reports whether dir is too wide to approve as a whole on the
// strength of one file in it: a wide area, or a directory directly in
// the home directory (~/.ssh, ~/.config).
func broadDir(dir string, env Env) bool {
	if wideArea(dir, env) {
		return true
	}
	home := strings.TrimSuffix(env.Home, "/")
	return home != "" && path.Dir(dir) == home
}

// wideArea reports whether dir is /, a top-level directory, the home
// directory, the workspace, a temporary area, or an ancestor of one of
// them.
func wideArea(dir string, env Env) bool {
	if dir == "/" || strings.Count(dir, "/") < 2 {
		return true // /, /etc, /usr
	}
	for _, d := range []string{env.Home, env.Workspace, env.TmpDir, "/tmp", "/var/tmp"} {
		d = strings.TrimSuffix(d, "/")
		if d == "" {
			continue
		}
		if dir == d || isBeneath(d, dir) {
			return true // the area itself, or one of its ancestors
		}
	}
	return false
}

// ProgramNames lists the programs whose identity changes a decision: the
// first word (as a basename) of every command rule of the policy and of
// the session, and every wrapper, shell and command grammar the analysis
// reads through. The supervisor fingerprints these binaries so that a
// copy, hard link or memfd of one is judged as that program
// (ExecIntent.Identity). Rules whose first word is a pattern (`* push`)
// name no program. The result is sorted.
func (p *Policy) ProgramNames() []string {
	seen := map[string]bool{}
	add := func(n string) {
		if n != "" && !strings.HasPrefix(n, "<") {
			seen[n] = true
		}
	}
	fromRule := func(r *compiledRule) {
		if r.bash == nil {
			return
		}
		first, _, _ := strings.Cut(r.Pattern, " ")
		if strings.ContainsAny(first, `*\`) {
			return
		}
		n := shell.BaseName(first)
		add(n)
		if _, ok := shell.GitDashed(n); ok {
			add("git")
		}
	}
	p.managed[SurfaceBash].each(fromRule)
	p.hard[SurfaceBash].each(fromRule)
	p.rules[SurfaceBash].each(fromRule)
	p.baseRules[SurfaceBash].each(fromRule)
	if ss := p.session.Load(); ss != nil {
		ss.lists[SurfaceBash].each(fromRule)
	}
	for _, n := range shell.Programs() {
		add(n)
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// explainScript shows how line is judged as a script: each unit with the
// rule that decided it and the spellings it was judged as, each redirect,
// the files its commands name, and the overall decision.
func (p *Policy) explainScript(line string, ctx shell.ScriptContext) (string, Result) {
	if ctx.Home == "" {
		ctx.Home = p.env.Home
	}
	if ctx.Cwd == "" {
		ctx.Cwd = p.env.Workspace
	}
	ctx.ReadFile = p.guardReads(ctx.ReadFile)
	a := shell.AnalyzeScript(line, ctx)
	var d ExecDecision
	var set decisionSet
	d.Analysis = a
	p.decideParts(&d, &set, a, 0, ExecIntent{Cwd: ctx.Cwd, ReadFile: ctx.ReadFile})
	var ok bool
	d.Result, d.Decider, ok = set.result()
	if !ok {
		// Nothing is decided before it runs (an empty script, only
		// assignments, only parts judged as they run): the line itself
		// is all there is to judge.
		d.Result, d.Decider = p.Evaluate(Check{Surface: SurfaceBash, Value: line}), line
	}

	var b strings.Builder
	b.WriteString("units:\n")
	if len(d.Units) == 0 {
		b.WriteString("  (none)\n")
	}
	for _, u := range d.Units {
		if u.AtRunTime {
			fmt.Fprintf(&b, "  %-5s  %s\n         judged as it runs: each exec and open it makes is checked then\n", "later", u.Unit.String())
			continue
		}
		fmt.Fprintf(&b, "  %-5s  %s\n         %s\n", u.Result.Action, u.Unit.String(), u.Result.Rule.String())
		certain := showReadings(u.Spellings, u.Result.Check.Value)
		possible := showReadings(u.Possible, u.Result.Check.Value)
		if len(certain) > 1 || len(possible) > 0 {
			fmt.Fprintf(&b, "         judged as: %s\n", strings.Join(certain, " | "))
		}
		if len(possible) > 0 {
			fmt.Fprintf(&b, "         and, if stricter: %s\n", strings.Join(possible, " | "))
		}
	}
	if len(d.Redirects) > 0 {
		b.WriteString("redirects:\n")
		for _, r := range d.Redirects {
			if r.AtRunTime {
				fmt.Fprintf(&b, "  %-5s  %s\n         the file is known when it runs: the open is checked then\n", "later", r.Redirect.String())
				continue
			}
			fmt.Fprintf(&b, "  %-5s  %s %s\n         %s\n", r.Result.Action, accessName(Access(r.Redirect.Access)), r.Path, r.Result.Rule.String())
		}
	}
	if len(d.Compounds) > 0 {
		b.WriteString("pipelines and lists named by a rule:\n")
		for _, c := range d.Compounds {
			fmt.Fprintf(&b, "  %-5s  %s\n         %s\n", c.Result.Action, c.Compound.Line, c.Result.Rule.String())
		}
	}
	if uses := argumentUses(d.PathUses); len(uses) > 0 {
		b.WriteString("files its commands name (checked when opened; approving the script approves them):\n")
		for _, u := range uses {
			tree := ""
			if u.Tree {
				tree = "/**"
			}
			fmt.Fprintf(&b, "  %s %s%s (%s)\n", accessName(u.Access), u.Path, tree, u.From)
		}
	}
	if len(d.Effects) > 0 {
		b.WriteString("what allowing it covers (writes its commands' job is; only where the catch-all asks):\n")
		for _, e := range d.Effects {
			fmt.Fprintf(&b, "  %s\n", e.String())
		}
	}
	fmt.Fprintf(&b, "overall: %s\n", d.Reason())
	return b.String(), d.Result
}

func argumentUses(uses []PathUse) []PathUse {
	var out []PathUse
	for _, u := range uses {
		if u.From != "redirect" {
			out = append(out, u)
		}
	}
	return out
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
