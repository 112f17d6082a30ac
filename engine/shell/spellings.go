package shell

import (
	"slices"
	"strings"
)

// Spellings are the command lines one command may be judged as. Rules are
// written for the line as a person types it, and a command can be typed
// in more than one way (`/usr/bin/git push`, `git push`, `git -C x push`
// read as `git push`); the policy decides on all of them (engine's
// evaluateSpellings).
type Spellings struct {
	// Certain are lines the command is: the most specific rule among
	// them decides.
	Certain []string
	// Possible are readings it may be (a git alias, a spelling that git
	// would read as another command): each can only make the answer
	// stricter, through a rule that names it.
	Possible []string
	// Shown is the display form when the command is not what its line
	// seems (argv[0] dispatch), or "".
	Shown string
}

// ExecSpellings are the spellings of a command line the kernel runs: prog
// the program it is, argv0 what it receives as argv[0], names the ways it
// may be spelled (name, path as invoked, resolved path), args the words
// after argv[0], line0 names[0] and args already rendered.
func ExecSpellings(prog, argv0 string, names, args []string, line0, home string) Spellings {
	return spellingsOf(prog, argv0, names, fieldsOf(args), "", line0, home)
}

// UnitSpellings are the command lines a unit of a script or wrapper may
// be judged as on the bash surface: the line as written, the program's
// other names (prog: the program the caller found the unit to run, when
// it is not Argv[0]'s basename), the readings of a command grammar (git,
// docker, kubectl) and the home directory spelled as ~ and back.
func UnitSpellings(u Unit, prog, home string) Spellings {
	spelled := []string{u.Argv[0]}
	if strings.Contains(u.Argv[0], "/") {
		spelled = append(spelled, BaseName(u.Argv[0]))
	}
	if prog != BaseName(u.Argv[0]) {
		spelled = append(spelled, prog)
	}
	if len(spelled) == 1 && !hasGrammar(prog) && !tildeCandidateWords(u, home) && !unitOptionCandidate(u) {
		// The common case: the line as written is the only spelling.
		return Spellings{Certain: []string{u.Line}}
	}
	argv0 := u.Argv[0]
	if u.Argv0 != "" {
		argv0 = u.Argv0
	}
	args := make([]field, len(u.Argv)-1)
	for i, w := range u.Argv[1:] {
		args[i] = field{s: w}
	}
	for _, i := range u.Dynamic {
		if i > 0 {
			args[i-1].dyn = dynOne
		}
	}
	marker := ""
	if u.StdinArgs {
		marker = " " + StdinArgsMarker
	}
	return spellingsOf(prog, argv0, spelled, args, marker, u.Line, home)
}

// unitOptionCandidate is optionCandidate on a unit's words.
func unitOptionCandidate(u Unit) bool {
	if optionTables()[BaseName(u.Argv[0])] != nil {
		return true
	}
	d := 0
	for i, w := range u.Argv {
		dyn := d < len(u.Dynamic) && u.Dynamic[d] == i
		if dyn {
			d++
		}
		if i > 0 && !dyn && len(w) > 1 && w[0] == '-' {
			return true
		}
	}
	return false
}

// spellingsOf finds the spellings of one command on the bash surface.
// prog is the program it is, argv0 what it receives as argv[0], names the
// ways it may be spelled (name, path as invoked, resolved path), args the
// words after argv[0]; line0, when not "", is names[0] and args already
// rendered. Spellings that would be read as another command are only
// possible: for git, which dispatches on argv[0], `git ARGS` is not a
// spelling of a process started with argv[0] `git-push`.
func spellingsOf(prog, argv0 string, names []string, args []field, marker, line0, home string) Spellings {
	certain := make([]string, 0, 4)
	var certainWords [][]field // the words of each certain line, for option readings
	tilde := tildeCandidate(args, home)
	rest := "" // the words after the name, rendered once for every name
	if len(names) > 1 {
		rest = renderFields(append([]field{{s: "x"}}, args...), marker)[1:]
	}
	addLine := func(words []field, rendered string) {
		if rendered == "" {
			rendered = renderFields(words, marker)
		}
		certain = appendUnique(certain, rendered)
		certainWords = append(certainWords, words)
		if tilde {
			for _, v := range tildeVariants(words, home) {
				certain = appendUnique(certain, renderFields(v, marker))
				certainWords = append(certainWords, v)
			}
		}
	}
	// The words of name n's line are copied only when they are looked at
	// (a line given rendered, without ~ variants, is not).
	lineOf := func(n string) []field { return append([]field{{s: n}}, args...) }
	addName := func(n, rendered string) {
		if rendered != "" && !tilde {
			certain = appendUnique(certain, rendered)
			if optionCandidate(n, args) {
				certainWords = append(certainWords, lineOf(n))
			}
			return
		}
		addLine(lineOf(n), rendered)
	}
	dispatch, dashed := "", false
	if prog == "git" {
		dispatch, dashed = GitDashed(BaseName(argv0))
	}
	var misread [][]field
	for i, n := range names {
		if n == "" {
			continue
		}
		if prog == "git" {
			if sub, _ := GitDashed(BaseName(n)); sub != dispatch {
				// `/usr/bin/git ARGS` does not say what a git started as
				// git-push does: a rule written for that spelling may
				// only make the answer stricter.
				misread = append(misread, lineOf(n))
				continue
			}
		}
		switch {
		case i == 0 && line0 != "":
			addName(n, line0)
		case rest != "" || len(args) == 0 && len(names) > 1:
			addName(n, quoteWord(n, true)+rest)
		default:
			addName(n, "")
		}
	}
	shown := ""
	if dashed && argv0 != "" {
		addLine(append([]field{{s: BaseName(argv0)}}, args...), "")
	}
	var possible []string
	if hasGrammar(prog) {
		rd := commandReadings(prog, argv0, args)
		for i, w := range rd.certain {
			addLine(w, "")
			if i == 0 && dashed {
				shown = renderFields(w, "") + " (argv[0] " + quoteWord(BaseName(argv0), false) + ")"
			}
		}
		misread = append(misread, rd.possible...)
	}
	for _, w := range misread {
		if l := renderFields(w, marker); !slices.Contains(certain, l) {
			possible = appendUnique(possible, l)
		}
	}
	if len(certain) == 0 {
		addLine(append([]field{{s: BaseName(argv0)}}, args...), "")
	}
	if marker == "" {
		// Option readings (a line whose arguments come from stdin,
		// xargs's, has words no one can see: it has none).
		n := 0
		// The names of one command share its arguments: read them once
		// per option table, and give each name its own first operand.
		var lastTable *optTable
		var lastTail []field
		var last []optionReading
		add := func(lines [][]field, sure bool) {
			for _, w := range lines {
				if len(w) == 0 || !optionCandidate(w[0].s, w[1:]) {
					continue
				}
				t := optionTables()[BaseName(w[0].s)]
				rs := last
				if last == nil || t != lastTable || w[0].dyn != static || !equalFields(w[1:], lastTail) {
					rs = readOptions(w)
					lastTable, lastTail, last = t, w[1:], rs
				}
				for _, r := range rs {
					if n >= maxOptionReadings {
						return
					}
					n++
					r.cmd.Operands[0] = w[0].s
					if v := encodeCommand(r.cmd); sure && r.certain {
						certain = appendUnique(certain, v)
					} else if !slices.Contains(certain, v) {
						possible = appendUnique(possible, v)
					}
				}
			}
		}
		add(certainWords, true)
		add(misread, false)
	}
	return Spellings{Certain: certain, Possible: possible, Shown: shown}
}

// optionCandidate reports whether a line of program name (as spelled)
// with these arguments has option readings: its program has an option
// table, or a word looks like an option.
func optionCandidate(name string, args []field) bool {
	if optionTables()[BaseName(name)] != nil {
		return true
	}
	for _, f := range args {
		if f.dyn == static && len(f.s) > 1 && f.s[0] == '-' {
			return true
		}
	}
	return false
}

// hasGrammar reports whether commandReadings knows prog.
func hasGrammar(prog string) bool {
	return prog == "git" || prog == "docker" || prog == "kubectl" ||
		strings.HasPrefix(prog, "git-") || strings.HasPrefix(prog, "docker-")
}

// tildeCandidate reports whether tildeVariants could find anything.
func tildeCandidate(args []field, home string) bool {
	if home == "" {
		return false
	}
	for _, w := range args {
		if w.dyn == static && strings.HasPrefix(w.s, home) || w.dyn != static && strings.HasPrefix(w.s, "~") {
			return true
		}
	}
	return false
}

// renderFields is renderWords over fields, with marker appended.
func renderFields(words []field, marker string) string {
	var b strings.Builder
	n := len(marker)
	for _, w := range words {
		n += len(w.s) + 3
	}
	b.Grow(n)
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w.dyn != static {
			b.WriteString(w.s)
		} else {
			b.WriteString(quoteWord(w.s, i == 0))
		}
	}
	b.WriteString(marker)
	return b.String()
}

// appendUnique appends s to list unless it is there already.
func appendUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// tildeCandidateWords is tildeCandidate on a unit's words.
func tildeCandidateWords(u Unit, home string) bool {
	if home == "" {
		return false
	}
	d := 0
	for i, w := range u.Argv {
		dyn := d < len(u.Dynamic) && u.Dynamic[d] == i
		if dyn {
			d++
		}
		if i > 0 && (!dyn && strings.HasPrefix(w, home) || dyn && strings.HasPrefix(w, "~")) {
			return true
		}
	}
	return false
}

// tildeVariants are the other spellings of words with the home directory
// in them: an argument under the home directory written with ~ (a rule
// `rm -rf ~ *` meets the expanded argv the kernel sees), and a ~ written
// in a script spelled out as the home directory.
func tildeVariants(words []field, home string) [][]field {
	home = strings.TrimSuffix(home, "/")
	if home == "" {
		return nil
	}
	var out [][]field
	var toTilde, toHome []field
	for i, w := range words {
		switch {
		case w.dyn == static && i > 0 && (w.s == home || strings.HasPrefix(w.s, home+"/")):
			if toTilde == nil {
				toTilde = append([]field(nil), words...)
			}
			toTilde[i] = field{s: "~" + w.s[len(home):], dyn: dynOne}
		case w.dyn != static && (w.s == "~" || strings.HasPrefix(w.s, "~/")):
			if toHome == nil {
				toHome = append([]field(nil), words...)
			}
			toHome[i] = field{s: home + w.s[1:], dyn: dynOne}
		}
	}
	if toTilde != nil {
		out = append(out, toTilde)
	}
	if toHome != nil {
		out = append(out, toHome)
	}
	return out
}
