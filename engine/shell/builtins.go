package shell

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// sameShellBuiltins act on the shell that runs them: its directory,
// variables, positional parameters, or the commands it reads.
var sameShellBuiltins = map[string]bool{
	"eval": true, "source": true, ".": true, "cd": true, "pushd": true, "popd": true,
	"shift": true, "set": true, "read": true, "mapfile": true, "readarray": true,
	"getopts": true, "unset": true, "printf": true, "wait": true, "trap": true, "alias": true,
}

// builtinOperand is the index of the command `command [-p] X` or
// `builtin X` runs, or 0 when it runs none (`command -v x`).
func builtinOperand(fs []field) int {
	for i := 1; i < len(fs); i++ {
		if fs[i].dyn != static {
			return 0
		}
		switch fs[i].s {
		case "-p":
			continue
		case "--":
			if i+1 < len(fs) {
				return i + 1
			}
			return 0
		}
		if strings.HasPrefix(fs[i].s, "-") {
			return 0 // -v, -V: describe, run nothing
		}
		return i
	}
	return 0
}

// builtin handles the builtins that act on the shell itself, reporting
// whether fs was one.
func (w *walker) builtin(fs []field, sc *scope) bool {
	switch fs[0].s {
	case "eval":
		w.a.eval(fs, sc)
	case "source", ".":
		w.a.source(fs, sc)
	case "cd", "pushd":
		w.cd(fs[1:], sc)
	case "popd":
		sc.dir = ""
	case "shift":
		shiftArgs(fs, sc)
	case "set":
		setArgs(fs, sc)
	case "read", "mapfile", "readarray", "getopts", "unset", "printf", "wait":
		// These set (or unset) the variables they name to values only
		// known at run time.
		for _, f := range fs[1:] {
			n := f.s
			if i := strings.IndexByte(n, '['); i > 0 {
				n = n[:i]
			}
			if syntax.ValidName(n) {
				sc.forget(n)
			}
		}
	case "trap":
		w.trap(fs, sc)
	case "alias":
		// With expand_aliases on, an alias turns any later word into
		// any command.
		for _, f := range fs[1:] {
			if strings.Contains(f.s, "=") || f.dyn != static {
				w.a.sentinel(SentinelOpaque, "alias definition", sc.via)
				break
			}
		}
	default:
		return false
	}
	return true
}

// forgetAll is the state after something this shell ran that the
// analysis could not see: any variable, the directory and the
// positional parameters may have changed.
func (s *scope) forgetAll() {
	s.vars, s.dir, s.args, s.argsKnown = nil, "", nil, false
}

// eval runs its arguments, joined by spaces, as a script in this shell.
// A literal string is analysed like the rest of the script; a string only
// known at run time is left to the checks of each exec as it happens.
func (a *analyzer) eval(fs []field, sc *scope) {
	if len(fs) == 1 {
		return
	}
	parts := make([]string, 0, len(fs)-1)
	for _, f := range fs[1:] {
		if f.dyn != static {
			a.sentinel(SentinelOpaque, "eval of a string only known when it runs: "+f.s, sc.via)
			sc.forgetAll()
			return
		}
		parts = append(parts, f.s)
	}
	if sc.depth >= maxWrapperDepth {
		a.sentinel(SentinelOpaque, "nesting of wrappers and shells deeper than 16", sc.via)
		sc.forgetAll()
		return
	}
	in := sc.same("eval")
	a.script(strings.Join(parts, " "), in)
	sc.adopt(in)
}

// source reads the file `source FILE [ARGS…]` (or `. FILE`) names through
// the context's reader and analyses it as part of this shell. A file
// that cannot be located or read is left to the checks of each exec as
// it happens; the shell's state after it is unknown.
func (a *analyzer) source(fs []field, sc *scope) {
	if len(fs) < 2 {
		return // the builtin fails: nothing runs
	}
	what := fs[0].s + " " + fs[1].s
	if fs[1].dyn == static {
		what = fs[0].s + " " + quoteWord(fs[1].s, false)
	}
	fail := func(why string) {
		a.sentinel(SentinelOpaque, what+": "+why, sc.via)
		sc.forgetAll()
	}
	p, why := a.sourcePath(fs[1], sc)
	switch {
	case why != "":
		fail(why)
		return
	case a.ctx.ReadFile == nil:
		fail("file contents not available to the analysis")
		return
	case sc.sourceDepth >= maxSourceDepth || sc.depth >= maxWrapperDepth:
		fail("sourced files nested too deeply")
		return
	case a.sourced >= maxSourced:
		fail(fmt.Sprintf("more than %d files sourced", maxSourced))
		return
	}
	data, err := a.ctx.ReadFile(p, MaxSourceBytes)
	switch {
	case err != nil:
		fail("cannot read: " + err.Error())
		return
	case len(data) > MaxSourceBytes:
		fail(fmt.Sprintf("%s is larger than %d bytes", p, MaxSourceBytes))
		return
	case a.srcBytes+len(data) > maxScriptBytes:
		fail(fmt.Sprintf("sourced files larger than %d bytes in all", maxScriptBytes))
		return
	}
	a.sourced++
	a.srcBytes += len(data)
	in := sc.same(what)
	in.sourceDepth++
	rest := fs[2:]
	if len(rest) > 0 {
		// Arguments are the file's positional parameters while it runs.
		in.args, in.argsKnown = rest, true
	}
	a.script(string(data), in)
	saved, savedKnown := sc.args, sc.argsKnown
	sc.adopt(in)
	if len(rest) > 0 {
		sc.args, sc.argsKnown = saved, savedKnown
	}
}

// sourcePath is the absolute path of the file source would read, or why
// it cannot be known before the script runs.
func (a *analyzer) sourcePath(f field, sc *scope) (string, string) {
	name := f.s
	if f.dyn != static && !plainTilde(name) {
		return "", "file name only known when it runs"
	}
	switch {
	case name == "":
		return "", "empty file name"
	case strings.HasPrefix(name, "~/"):
		if !path.IsAbs(a.ctx.Home) {
			return "", "home directory unknown"
		}
		return path.Join(a.ctx.Home, name[2:]), ""
	case path.IsAbs(name):
		return path.Clean(name), ""
	case !strings.Contains(name, "/"):
		// A bare name is looked up in PATH first (and, for bash, then
		// the current directory): which file is only known at run time.
		return "", "looked up in PATH when it runs"
	case sc.dir == "":
		return "", "relative to a directory only known when it runs"
	case path.IsAbs(sc.dir):
		return path.Join(sc.dir, name), ""
	case !path.IsAbs(a.ctx.Cwd):
		return "", "relative to a working directory the analysis does not know"
	}
	return path.Join(a.ctx.Cwd, sc.dir, name), ""
}

// plainTilde reports whether a word kept as written is only ~ or ~/path
// with nothing else to expand, so the home directory makes it known.
func plainTilde(w string) bool {
	rest, ok := strings.CutPrefix(w, "~/")
	return w == "~" || ok && !strings.ContainsAny(rest, "$`\\\"'*?[{~")
}

// shiftArgs applies `shift [N]` to the known positional parameters.
func shiftArgs(fs []field, sc *scope) {
	if !sc.argsKnown {
		return
	}
	n := 1
	if len(fs) > 1 {
		v, err := strconv.Atoi(fs[1].s)
		if fs[1].dyn != static || err != nil || v < 0 {
			sc.args, sc.argsKnown = nil, false
			return
		}
		n = v
	}
	if n <= len(sc.args) {
		// Shifting more than there are fails and changes nothing.
		sc.args = sc.args[n:]
	}
}

// setArgs applies `set [options] [--] [ARGS…]`: `--`, `-`, or the first
// word that is not an option replaces the positional parameters.
func setArgs(fs []field, sc *scope) {
	for i := 1; i < len(fs); i++ {
		f := fs[i]
		if f.dyn != static {
			sc.args, sc.argsKnown = nil, false
			return
		}
		switch {
		case f.s == "--" || f.s == "-":
			sc.args, sc.argsKnown = fs[i+1:], true
			return
		case len(f.s) > 1 && (f.s[0] == '-' || f.s[0] == '+'):
			if strings.IndexByte(f.s, 'o') > 0 {
				i++ // -o NAME, -euo NAME
			}
		default:
			sc.args, sc.argsKnown = fs[i:], true
			return
		}
	}
}

func (w *walker) cd(args []field, sc *scope) {
	// Skip cd's own options (-L, -P, -e, -@).
	for len(args) > 0 && args[0].dyn == static && len(args[0].s) > 1 && args[0].s[0] == '-' {
		if args[0].s == "--" {
			args = args[1:]
			break
		}
		args = args[1:]
	}
	if len(args) == 0 {
		sc.dir = "" // home: not known to the analysis
		return
	}
	sc.cd(args[0].s, args[0].dyn == static)
}

func (w *walker) trap(fs []field, sc *scope) {
	if len(fs) < 3 || fs[1].dyn == static && strings.HasPrefix(fs[1].s, "-") {
		return // listing, resetting, or printing traps runs nothing
	}
	if fs[1].dyn != static {
		w.a.sentinel(SentinelOpaque, "trap with a handler that is not static", sc.via)
		return
	}
	if fs[1].s == "" {
		return
	}
	w.a.script(fs[1].s, sc.inner("trap", false))
}
