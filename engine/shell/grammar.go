package shell

import (
	"slices"
	"strings"
)

// Command identity by what is executed, not by its spelling. A rule
// written `git push *` must meet `git -C dir push`, `git -c k=v push`,
// `git-push` (git dispatches on argv[0]), `/usr/lib/git-core/git-push` and
// `ld-linux-x86-64.so.2 /usr/bin/git push`. The loader is a wrapper (see
// wrappedAs); the grammars here turn a command line into its canonical
// readings. docs/bash-rules.md §2 and §9 are the user-facing account.

// A reading is one way a command line may be understood, as words. The
// certain readings denote exactly what runs, so among them (and the line
// as typed) the most specific rule decides, as between `git push` and
// `/usr/bin/git push`. A possible reading may or may not be what runs (an
// option the grammar does not know, an alias that a program of the same
// name may shadow): it can only make the answer more restrictive.
type readings struct {
	certain  [][]field
	possible [][]field
}

// maxUnknownWords bounds the words a grammar reads two ways (an option
// it does not know may or may not take a value): 2^3 readings at most.
// maxForks bounds such two-way readings in one analysis, so that nested
// loaders cannot multiply them.
const (
	maxUnknownWords = 3
	maxForks        = 32
)

// commandReadings returns the canonical readings of a command for the
// grammars below. prog is the program's identity (basename of what runs,
// or the program the supervisor recognised by content); argv0 the argv[0]
// it receives; args the words after argv[0]. Commands without a grammar
// have none.
func commandReadings(prog, argv0 string, args []field) readings {
	switch {
	case prog == "git":
		if sub, ok := GitDashed(BaseName(argv0)); ok {
			// git dispatches on argv[0]: `git-push x` is `git push x`
			// whatever file was executed.
			// A dashed name runs only a builtin: no autocorrection.
			return gitIntents(readings{certain: [][]field{gitLine(sub, args)}}, false)
		}
		return gitIntents(subcommandReadings("git", args, gitGlobals, gitAliases), true)
	case strings.HasPrefix(prog, "git-") && len(prog) > 4:
		// A dashed program: git's own builtin through a link, or an
		// external subcommand (git-lfs), both run as `git X`.
		r := readings{certain: [][]field{gitLine(prog[4:], args)}}
		if b := BaseName(argv0); b != prog {
			// If the file is a hard link to git itself (not known
			// without the supervisor's identity), argv[0] decides.
			if sub, ok := GitDashed(b); ok {
				r.possible = append(r.possible, gitLine(sub, args))
			} else {
				o := subcommandReadings("git", args, gitGlobals, gitAliases)
				r.possible = append(append(r.possible, o.certain...), o.possible...)
			}
		}
		return gitIntents(r, false)
	case prog == "docker":
		return subcommandReadings("docker", args, dockerGlobals, nil)
	case strings.HasPrefix(prog, "docker-") && len(prog) > 7:
		// CLI plugins run as `docker-compose compose ARGS`; the
		// standalone docker-compose as `docker-compose ARGS`.
		name := prog[7:]
		if len(args) > 0 && args[0].dyn == static && args[0].s == name {
			args = args[1:]
		}
		return readings{certain: [][]field{append([]field{{s: "docker"}, {s: name}}, args...)}}
	case prog == "kubectl":
		return subcommandReadings("kubectl", args, kubectlGlobals, nil)
	}
	return readings{}
}

func gitLine(sub string, args []field) []field {
	out := make([]field, 0, len(args)+2)
	return append(append(out, field{s: "git"}, field{s: sub}), args...)
}

// GitDashed reports the subcommand of a dashed name: git-push → push.
func GitDashed(name string) (string, bool) {
	if sub, ok := strings.CutPrefix(name, "git-"); ok && sub != "" {
		return sub, true
	}
	return "", false
}

// globalSpec describes the options a program takes before its
// subcommand: which take a value (as the next word, or after '='), and
// which make it print something and run no subcommand.
type globalSpec struct {
	flags  map[string]bool // options without a value
	values map[string]bool // options with a value: -C DIR, --git-dir DIR, --git-dir=DIR
	eqOnly map[string]bool // options whose value is only given after '='
	noRun  map[string]bool // options after which nothing runs
	prefix map[string]bool // options matched by prefix (--exec-path=…, --list-cmds=…)
	// attached reports whether a one-letter value option takes its value
	// in the same word (docker -Hx); git does not (-C. is unknown).
	attached bool
	// help turns these into subcommands (`git --help` is `git help`).
	help map[string]string
}

func wordSet(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// gitGlobals is git's handle_options (git.c): every option before the
// subcommand. An option not listed makes git print its usage and run
// nothing, so an unknown one is read both ways (a newer git may know it).
var gitGlobals = &globalSpec{
	flags: wordSet("-p", "--paginate", "-P", "--no-pager", "--no-lazy-fetch", "--no-replace-objects",
		"--bare", "--literal-pathspecs", "--no-literal-pathspecs", "--glob-pathspecs",
		"--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks", "--no-advice"),
	values: wordSet("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env",
		"--shallow-file", "--attr-source", "--super-prefix"),
	eqOnly: wordSet("--exec-path"),
	noRun:  wordSet("--exec-path", "--html-path", "--man-path", "--info-path"),
	prefix: wordSet("--list-cmds="),
	help:   map[string]string{"--help": "help", "-h": "help", "--version": "version", "-v": "version"},
}

// dockerGlobals are the docker CLI's root options (docker --help); the
// subcommand follows them.
var dockerGlobals = &globalSpec{
	flags:    wordSet("-D", "--debug", "--tls", "--tlsverify"),
	values:   wordSet("--config", "-c", "--context", "-H", "--host", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey"),
	noRun:    wordSet("-v", "--version", "-h", "--help"),
	attached: true,
}

// kubectlGlobals are the kubectl options people put before the
// subcommand most (kubectl options): the namespace, context and cluster
// choice. Others are read both ways.
var kubectlGlobals = &globalSpec{
	flags: wordSet("--insecure-skip-tls-verify", "--match-server-version", "--warnings-as-errors", "--disable-compression"),
	values: wordSet("-n", "--namespace", "--context", "--cluster", "--kubeconfig", "--user", "-s", "--server",
		"--token", "--as", "--as-group", "--as-uid", "--cache-dir", "--certificate-authority",
		"--client-certificate", "--client-key", "--request-timeout", "--tls-server-name", "-v", "--v",
		"--username", "--password", "--profile", "--profile-output", "--vmodule", "--log-flush-frequency"),
	attached: true,
}

// aliasFunc reads the aliases a command line defines for itself
// (`git -c alias.p=push p`): the words an alias name expands to.
type aliasFunc func(globals []field) map[string][]field

// subcommandReadings skips a program's global options and returns
// `prog SUB ARGS…` for each way the line can be read.
func subcommandReadings(prog string, args []field, spec *globalSpec, aliases aliasFunc) readings {
	w := &subcommandWalk{prog: prog, args: args, spec: spec, aliases: aliases}
	w.walk(0, 0, true, nil)
	return w.r
}

// subcommandWalk reads one command line of prog for subcommandReadings,
// collecting its readings in r.
type subcommandWalk struct {
	prog    string
	args    []field
	spec    *globalSpec
	aliases aliasFunc
	r       readings
}

// walk reads the global options from args[i] to the subcommand. unknown
// counts the words read both ways so far, certain says no word was, and
// globals are the global options read.
func (w *subcommandWalk) walk(i, unknown int, certain bool, globals []field) {
	args := w.args
	for i < len(args) {
		f := args[i]
		if f.dyn == static && !strings.HasPrefix(f.s, "-") {
			break
		}
		if f.dyn == static {
			if sub, ok := w.spec.help[f.s]; ok {
				w.r.add(certain, append([]field{{s: w.prog}, {s: sub}}, args[i+1:]...))
				return
			}
			n, stop := w.spec.global(args, i)
			if stop {
				return
			}
			if n > 0 {
				globals = append(globals, args[i:i+n]...)
				i += n
				continue
			}
		}
		w.bothWays(i, unknown, globals)
		return
	}
	if i >= len(args) {
		return // no subcommand: help or usage
	}
	w.r.add(certain, append([]field{{s: w.prog}}, args[i:]...))
	if w.aliases != nil {
		w.aliasReadings(args[i:], globals)
	}
}

// global reads args[i], a static word that starts with "-", as one of
// the program's global options: n is how many words it takes, 0 when the
// grammar does not know it; stop says the program runs no subcommand (it
// prints and exits, or refuses to start).
func (s *globalSpec) global(args []field, i int) (n int, stop bool) {
	f := args[i]
	name, _, hasEq := strings.Cut(f.s, "=")
	switch {
	case s.noRun[f.s]:
		return 0, true // prints and exits
	case s.flags[f.s], hasEq && s.attached && s.flags[name]:
		return 1, false // --tls, and pflag's --tls=true
	case s.values[f.s]:
		if i+1 >= len(args) {
			return 0, true // the program refuses to start
		}
		return 2, false
	case hasEq && (s.values[name] || s.eqOnly[name]) && !(len(name) == 2 && !s.attached):
		return 1, false
	case s.hasPrefix(f.s):
		return 0, true // --list-cmds=…: prints and exits
	case s.attached && len(f.s) > 2 && f.s[1] != '-' && s.values[f.s[:2]]:
		return 1, false // -Hunix:///x
	}
	return 0, false
}

// bothWays reads args[i], an option the grammar does not know or a word
// only known at run time: it may take the next word as its value or not.
func (w *subcommandWalk) bothWays(i, unknown int, globals []field) {
	if unknown >= maxUnknownWords {
		return
	}
	f := w.args[i]
	if f.dyn != static {
		// The word itself may be the subcommand.
		w.r.add(false, append([]field{{s: w.prog}}, w.args[i:]...))
	}
	w.walk(i+1, unknown+1, false, append(globals, f))
	if i+1 < len(w.args) {
		w.walk(i+2, unknown+1, false, append(append(globals, f), w.args[i+1]))
	}
}

// aliasReadings adds the readings of cur (SUB ARGS…) when SUB is an
// alias the command line defines, and of the aliases it expands to in
// turn.
func (w *subcommandWalk) aliasReadings(cur, globals []field) {
	defs := w.aliases(globals)
	seen := map[string]bool{}
	for depth := 0; depth < 8 && cur[0].dyn == static; depth++ {
		name := cur[0].s
		exp, ok := defs[name]
		if !ok || seen[name] {
			return
		}
		seen[name] = true
		if exp == nil {
			// Defined from the environment (--config-env): what it
			// runs is not on the command line.
			return
		}
		// The expansion may start with options of its own. A
		// program of the same name would run instead of the alias,
		// so the expansion is only a possible reading.
		next := append(append([]field(nil), exp...), cur[1:]...)
		sub := subcommandReadings(w.prog, next, w.spec, nil)
		for _, l := range sub.certain {
			w.r.add(false, l)
		}
		w.r.possible = append(w.r.possible, sub.possible...)
		if len(sub.certain) == 0 {
			return
		}
		cur = sub.certain[0][1:]
	}
}

func (s *globalSpec) hasPrefix(w string) bool {
	for p := range s.prefix {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}

func (r *readings) add(certain bool, line []field) {
	if certain {
		r.certain = append(r.certain, line)
	} else {
		r.possible = append(r.possible, line)
	}
}

// gitAliases reads `-c alias.NAME=VALUE` and `--config-env alias.NAME=…`
// from git's global options. A shell alias (`!cmd`) runs a shell, which
// is an exec judged on its own; it adds no reading. An alias from the
// environment is unknown (nil). Aliases in configuration files cannot be
// seen here (docs/bash-rules.md §9).
func gitAliases(globals []field) map[string][]field {
	var defs map[string][]field
	for i := 0; i < len(globals); i++ {
		f := globals[i]
		var def string
		env := false
		switch {
		case f.dyn != static:
			continue
		case f.s == "-c" && i+1 < len(globals):
			i++
			def = globals[i].s
			if globals[i].dyn != static {
				continue
			}
		case f.s == "--config-env" && i+1 < len(globals):
			i++
			def, env = globals[i].s, true
		case strings.HasPrefix(f.s, "--config-env="):
			def, env = f.s[len("--config-env="):], true
		default:
			continue
		}
		key, value, _ := strings.Cut(def, "=")
		// Config keys are case-insensitive in their section and name.
		name, ok := strings.CutPrefix(strings.ToLower(key), "alias.")
		if !ok || name == "" {
			continue
		}
		if defs == nil {
			defs = map[string][]field{}
		}
		switch {
		case env:
			defs[name] = nil
		case strings.HasPrefix(value, "!"):
			delete(defs, name)
		default:
			words := splitCmdline(value)
			if len(words) == 0 {
				delete(defs, name)
				continue
			}
			defs[name] = words
		}
	}
	return defs
}

// splitCmdline splits an alias value the way git's split_cmdline does:
// whitespace-separated words with '…' and "…" quoting and backslashes.
func splitCmdline(s string) []field {
	var out []field
	var cur strings.Builder
	have := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && quote != '\'' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			have = true
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, have = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if have {
				out = append(out, field{s: cur.String()})
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(c)
			have = true
		}
	}
	if quote != 0 {
		return nil // git refuses an unclosed quote
	}
	if have {
		out = append(out, field{s: cur.String()})
	}
	return out
}

// grammarPrograms are the programs commandReadings knows; the supervisor
// fingerprints them (Policy.ProgramNames).
var grammarPrograms = []string{"git", "docker", "kubectl"}

// isLoader reports whether name is the dynamic loader (ld.so), which runs
// the program named by its first operand inside its own process: there is
// no second execve for the kernel to check.
func isLoader(name string) bool {
	switch {
	case name == "ld.so":
		return true
	case strings.HasPrefix(name, "ld-linux") && strings.Contains(name, ".so"),
		strings.HasPrefix(name, "ld64.so."),
		strings.HasPrefix(name, "ld-musl-") && strings.Contains(name, ".so"):
		return true
	case strings.HasPrefix(name, "ld-") && strings.HasSuffix(name, ".so"):
		return true // ld-2.31.so
	}
	return false
}

// loaderFlags and loaderValues are glibc's ld.so options (ld.so --help):
// exact words, values as the next word (`--library-path=X` is refused).
var (
	loaderFlags  = wordSet("--inhibit-cache")
	loaderValues = wordSet("--library-path", "--glibc-hwcaps-prepend", "--glibc-hwcaps-mask",
		"--inhibit-rpath", "--audit", "--preload", "--argv0")
	// loaderLoads are the options that load code into the program.
	loaderLoads = wordSet("--preload", "--audit", "--library-path")
	loaderNoRun = wordSet("--list", "--verify", "--list-tunables", "--list-diagnostics", "--help", "--version")
)

// loader records the program ld.so runs: `ld.so [OPTIONS] PROGRAM
// [ARGS…]`, with `--argv0 NAME` as the argv[0] the program sees. An
// option ld.so does not know makes it refuse to start; one this table
// does not know (a newer glibc) is read both ways.
func (a *analyzer) loader(label string, fs []field, sc *scope) {
	if sc.depth >= maxWrapperDepth {
		a.sentinel(SentinelOpaque, "nesting of wrappers and shells deeper than 16", sc.via)
		return
	}
	var walk func(i, unknown int, argv0 field, loads []string)
	walk = func(i, unknown int, argv0 field, loads []string) {
		for i < len(fs) {
			f := fs[i]
			if f.dyn != static || !strings.HasPrefix(f.s, "--") {
				break
			}
			switch {
			case loaderNoRun[f.s]:
				return
			case loaderFlags[f.s]:
				i++
				continue
			case loaderValues[f.s]:
				if i+1 >= len(fs) {
					return
				}
				if f.s == "--argv0" {
					argv0 = fs[i+1]
				}
				if loaderLoads[f.s] {
					// A dynamic value is kept as written: its $ makes it
					// a path permwrap cannot follow.
					loads = append(slices.Clip(loads), f.s+"="+fs[i+1].s)
				}
				i += 2
				continue
			}
			if unknown >= maxUnknownWords || a.forks >= maxForks {
				a.sentinel(SentinelOpaque, label+": too many options permwrap does not know", sc.via)
				return
			}
			a.forks++
			walk(i+1, unknown+1, argv0, loads)
			walk(i+2, unknown+1, argv0, loads)
			return
		}
		if i >= len(fs) {
			return
		}
		name := ""
		if argv0.dyn == static {
			name = argv0.s
		}
		a.innerAs(label, fs[i:], sc, innerOpts{argv0: name, inProcess: true, loads: loads})
	}
	walk(1, 0, field{}, nil)
}
