package engine

import (
	"path"
	"strings"

	"github.com/permwrap/permwrap/engine/shell"
)

// Code the dynamic loader runs before a program's main, named by the
// exec's environment (LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH, GCONV_PATH)
// or the loader's own options (`ld.so --preload X --audit Y
// --library-path Z PROG`), can make the program do anything: rewrite
// its argv before main reads it (`git pusx` runs as `git push`), or run
// in its place. Such a library in a place the tree can write makes the
// command line untrustworthy, so the program is judged by the strictest
// command rule that names it (`git *` is judged as `git push *` would
// be). A program no command rule names is not affected: what its
// library does is judged as it happens, every exec and open. Libraries
// the tree cannot change (system files: root's, in root's directories,
// or a place the policy does not let the tree write) are trusted as the
// program itself is. docs/bash-rules.md §9.

// loaderVars are the environment variables that make glibc's or musl's
// dynamic loader load code from a place they name.
var loaderVars = []string{"LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH", "GCONV_PATH"}

// loaderOptionVars are ld.so's options that load code (shell.Unit.Loads
// has them as --preload=X), as the variables that say the same.
var loaderOptionVars = map[string]string{"--preload": "LD_PRELOAD", "--audit": "LD_AUDIT", "--library-path": "LD_LIBRARY_PATH"}

// LoaderEnv returns the entries of env (NAME=VALUE) that make the
// dynamic loader load code, in their order: what an exec is judged on
// and what the supervisor verifies the kernel used.
func LoaderEnv(env []string) []string {
	var out []string
	for _, e := range env {
		if isLoaderEntry(e) {
			out = append(out, e)
		}
	}
	return out
}

// MayBeLoaderEntry reports whether an environment entry (NAME=VALUE) may
// be one LoaderEnv keeps: every one it keeps passes, most others do not.
// A reader of an exec's environment copies only the entries that pass
// and leaves the decision to LoaderEnv.
func MayBeLoaderEntry(e []byte) bool {
	return len(e) >= 3 && (e[0] == 'L' || e[0] == 'G')
}

func isLoaderEntry(e string) bool {
	// MayBeLoaderEntry's test, on the string.
	if len(e) < 3 || (e[0] != 'L' && e[0] != 'G') {
		return false
	}
	name, _, ok := strings.Cut(e, "=")
	if !ok {
		return false
	}
	for _, v := range loaderVars {
		if name == v {
			return true
		}
	}
	return false
}

// untrustedLoad returns why the loader entries (NAME=VALUE) may load code
// the tree can write, or "" when they cannot. Relative paths are
// relative to cwd; system reports whether the tree cannot change a path
// by itself (nil: no path is known to be a system one).
func (p *Policy) untrustedLoad(entries []string, cwd string, system func(string) bool) string {
	for _, e := range entries {
		name, value, _ := strings.Cut(e, "=")
		kind := name
		if v, ok := loaderOptionVars[name]; ok {
			kind = v
		}
		dirs := kind == "LD_LIBRARY_PATH" || kind == "GCONV_PATH"
		var items []string
		switch kind {
		case "LD_PRELOAD":
			items = strings.FieldsFunc(value, func(r rune) bool { return r == ' ' || r == ':' || r == '\t' || r == '\n' })
		case "LD_AUDIT":
			items = strings.Split(value, ":")
		default:
			items = strings.FieldsFunc(value, func(r rune) bool { return r == ':' || r == ';' })
			if value == "" || strings.HasPrefix(value, ":") || strings.HasSuffix(value, ":") || strings.Contains(value, "::") {
				items = append(items, ".") // an empty entry is the working directory
			}
		}
		for _, it := range items {
			if it == "" {
				continue
			}
			if !dirs && !strings.ContainsAny(it, "/$") {
				// A bare name is searched for in the library path
				// (LD_LIBRARY_PATH, judged on its own) and the system's
				// directories.
				continue
			}
			if abs, why := p.untrustedPath(it, dirs, cwd, system); why != "" {
				if abs == value {
					return name + "=" + value + ", " + why
				}
				return name + "=" + value + ": " + abs + ", " + why
			}
		}
	}
	return ""
}

// untrustedPath says why the tree may have written the library (or, for
// dir, a library in the directory) at file, or "", with the absolute path
// it looked at.
func (p *Policy) untrustedPath(file string, dir bool, cwd string, system func(string) bool) (string, string) {
	if strings.Contains(file, "$") {
		return file, "which is expanded when it runs (a shell variable, or the loader's $ORIGIN, $LIB, $PLATFORM): permwrap does not follow it"
	}
	abs := file
	if !path.IsAbs(abs) {
		if !path.IsAbs(cwd) {
			return file, "relative to a working directory permwrap does not know"
		}
		abs = path.Join(cwd, file)
	}
	abs = path.Clean(abs)
	if system != nil && system(abs) {
		return abs, ""
	}
	probe := abs
	if dir {
		probe = path.Join(abs, "lib.so")
	}
	if r := p.DecidePath(AccessWrite, probe); r.Action == Allow {
		if dir {
			return abs, "a directory the tree can write"
		}
		return abs, "a file the tree can write"
	}
	return abs, ""
}

// loaderVerb is how a person is told what the entries do.
func loaderVerb(why string) string {
	switch {
	case strings.HasPrefix(why, "LD_PRELOAD"), strings.HasPrefix(why, "--preload"):
		return "a preloaded library"
	case strings.HasPrefix(why, "LD_AUDIT"), strings.HasPrefix(why, "--audit"):
		return "an audit library"
	case strings.HasPrefix(why, "GCONV_PATH"):
		return "a character-set module"
	}
	return "a library from the redirected library path"
}

// decideLoaded judges prog, run with code loaded from the entries, as
// the strictest command rule naming it, when that code may be the
// tree's. line is the command as shown.
func (p *Policy) decideLoaded(set *decisionSet, entries []string, cwd string, system func(string) bool, prog, line string) {
	if len(entries) == 0 {
		return
	}
	why := p.untrustedLoad(entries, cwd, system)
	if why == "" {
		return
	}
	r, ok := p.strictestFor(prog)
	if !ok {
		return
	}
	// The answer is about this command line, not the rule's own line it
	// was evaluated on: approving it for the session suggests this line,
	// never `git push `.
	r.Check = Check{Surface: SurfaceBash, Value: line}
	set.add(r, line+" ("+loaderVerb(why)+" can change what "+prog+" runs: "+why+")")
}

// strictestFor is the strictest answer a command rule naming prog gives
// (its first word, by basename; for git also its dashed forms): what any
// command line of prog could be judged as. Each rule is evaluated on its
// own shortest line (its stars empty), so hard guards, session answers
// and yolo apply to it as to any command. ok is false when no rule but
// the catch-all names prog.
func (p *Policy) strictestFor(prog string) (Result, bool) {
	var best Result
	found := false
	consider := func(r *compiledRule) {
		if r.bash == nil {
			return
		}
		first, _, _ := strings.Cut(r.Pattern, " ")
		if first == "" || strings.ContainsAny(first, `*\`) {
			return
		}
		n := shell.BaseName(first)
		if n != prog {
			if _, dashed := shell.GitDashed(n); !dashed || prog != "git" {
				return
			}
		}
		e := p.evaluate(Check{Surface: SurfaceBash, Value: strings.Join(r.bash.segs, "")}, assumeSecret)
		if !namedByRule(e) {
			return
		}
		if !found || e.Stricter(best) {
			best, found = e.Result, true
		}
	}
	p.managed[SurfaceBash].each(consider)
	p.hard[SurfaceBash].each(consider)
	p.rules[SurfaceBash].each(consider)
	p.baseRules[SurfaceBash].each(consider)
	if p.tightened {
		p.tight[SurfaceBash].each(consider)
	}
	if ss := p.session.Load(); ss != nil {
		ss.lists[SurfaceBash].each(consider)
	}
	return best, found
}
