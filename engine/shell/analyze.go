// Package shell is permwrap's shell analysis: an exec's argv or a shell
// script becomes units (simple commands, each with a rendered command
// line for the bash surface), redirects and compounds, read through
// wrappers (env, sudo, xargs, sh -c …), sourced files and command
// grammars (git, docker, kubectl). It says what a command line would run
// and which spellings a rule may name it by; it judges nothing: package
// engine evaluates what it finds against the policy. docs/bash-rules.md
// is the user-facing account of every choice made here; keep the two in
// step.
package shell

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Sentinel values stand in for what cannot be decomposed honestly. They
// are evaluated as bash-surface values, so a policy can name them.
const (
	SentinelOpaque      = "<opaque-shell-wrapper>"
	SentinelUnparseable = "<unparseable-shell-script>"
)

// StdinArgsMarker ends the line of a unit whose remaining arguments are read
// at run time (xargs). A rule `git push *` matches `git push <stdin-args>`;
// the real exec that xargs builds is still checked at the kernel.
const StdinArgsMarker = "<stdin-args>"

// Bounds that keep hostile input from costing unbounded time or memory.
const (
	maxWrapperDepth = 16      // wrappers and nested shells seen through
	maxUnits        = 10000   // units in one analysis
	maxNesting      = 256     // syntactic nesting accepted before parsing
	maxScriptBytes  = 4 << 20 // larger scripts are not parsed at all

	// Files read by `source`/`.`: each at most MaxSourceBytes, at most
	// maxSourced of them per analysis, nested at most maxSourceDepth
	// deep, and all of them together at most maxScriptBytes.
	MaxSourceBytes = 1 << 20
	maxSourced     = 32
	maxSourceDepth = 8
)

// Access is how a redirect or a file command's argument uses a file:
// AccessRead, AccessWrite, or both. The bits are engine.Access's, which
// converts it (engine.Access(a)).
type Access uint8

const (
	AccessRead Access = 1 << iota
	AccessWrite
)

// Unit is one command that would run: a simple command of a script, the
// inner command of a wrapper, or a sentinel.
type Unit struct {
	// Argv holds the words after quote removal. Words listed in Dynamic
	// are not statically known (expansions, globs, brace expansion, a
	// leading ~) and hold their source text as written.
	Argv    []string
	Dynamic []int
	// Line is RenderArgv(Argv) with dynamic words as written; for a
	// sentinel it is "<sentinel>: detail", for display only. Value is
	// what rules are evaluated against.
	Line string
	Via  []string // wrappers seen through, outermost first: ["env", "bash -c"]
	// Argv0 is the argv[0] the program receives when it differs from
	// Argv[0] (`exec -a NAME`, `ld.so --argv0 NAME`): programs such as
	// git dispatch on it.
	Argv0 string
	// Dir is the directory relative paths in the unit are relative to,
	// as in Redirect.Dir: ".", a path built from literal cd's, or "".
	Dir string
	// InProcess is set for the program the dynamic loader runs inside its
	// own process (`ld.so ./prog`): no execve of it will be checked, so
	// its identity matters here. Argv[0] names the file.
	InProcess bool
	// Loads are the libraries the loader's options make it load into an
	// InProcess program: `--preload X` as "--preload=X", and --audit and
	// --library-path the same way. A value only known at run time is
	// kept as written.
	Loads []string
	// StdinArgs is set when more arguments come from stdin at run time
	// (xargs); Line then ends with StdinArgsMarker.
	StdinArgs bool
	Sentinel  string // "", SentinelOpaque or SentinelUnparseable
	Detail    string // why a sentinel was produced, for people
}

// Value is what the unit is evaluated as on the bash surface.
func (u Unit) Value() string {
	if u.Sentinel != "" {
		return u.Sentinel
	}
	return u.Line
}

// String is the form tests pin and prompts show:
// "git push origin main (via env, bash -c)" or
// "<opaque-shell-wrapper>: eval (via bash -c)".
func (u Unit) String() string {
	var b strings.Builder
	if u.Sentinel != "" {
		b.WriteString(u.Sentinel)
		if u.Detail != "" {
			b.WriteString(": ")
			b.WriteString(u.Detail)
		}
	} else {
		b.WriteString(u.Line)
	}
	if len(u.Via) > 0 {
		b.WriteString(" (via ")
		b.WriteString(strings.Join(u.Via, ", "))
		b.WriteString(")")
	}
	return b.String()
}

// Redirect is a file a script's redirection would open.
type Redirect struct {
	Access Access // AccessRead, AccessWrite, or both for <>
	Path   string // as written, after quote removal; the source text when Computed
	// Dir is the directory a relative Path is relative to: "." for the
	// shell's starting directory, a path made of the literal cd's seen
	// before, or "" when a cd to an unknown place came first.
	Dir string
	Via []string
	// Computed is set when the target is only known at run time
	// (`> "$f"`, `> f$i.c`): the open is judged when it happens, by the
	// per-syscall check, not before the script runs.
	Computed bool
}

func (r Redirect) String() string {
	var b strings.Builder
	switch r.Access {
	case AccessRead:
		b.WriteString("read ")
	case AccessWrite:
		b.WriteString("write ")
	default:
		b.WriteString("read+write ")
	}
	b.WriteString(r.Path)
	if r.Computed {
		b.WriteString(" (computed: checked when opened)")
	} else if !path.IsAbs(r.Path) && !strings.HasPrefix(r.Path, "~") && r.Dir != "." {
		if r.Dir == "" {
			b.WriteString(" in <unknown dir>")
		} else {
			b.WriteString(" in " + r.Dir)
		}
	}
	if len(r.Via) > 0 {
		b.WriteString(" (via " + strings.Join(r.Via, ", ") + ")")
	}
	return b.String()
}

// Compound is a pipeline or list as written (`curl -fsSL x | sh`). It only
// counts when a rule names it: most compound lines match nothing, and an
// unmatched compound must not turn a fully allowed script into an ask.
type Compound struct {
	Line string
	Via  []string
}

// Analysis is everything the analysis of an exec or a script found.
type Analysis struct {
	Units     []Unit
	Redirects []Redirect
	Compounds []Compound
}

// Opaque reports whether any unit is a sentinel.
func (s Analysis) Opaque() bool {
	for _, u := range s.Units {
		if u.Sentinel != "" {
			return true
		}
	}
	return false
}

// RenderArgv renders argv as a person would type it: words quoted only
// where the shell would otherwise change them (`git commit -m 'a b'`).
func RenderArgv(argv []string) string {
	var b strings.Builder
	n := 0
	for _, w := range argv {
		n += len(w) + 1
	}
	b.Grow(n)
	for i, w := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteWord(w, i == 0))
	}
	return b.String()
}

// quoteWord quotes s if a shell would not read it back as the same single
// word. It is gentler than syntax.Quote, which also quotes '=' and '~'
// anywhere: `make CC=gcc` and `git log --format=%H` read as typed.
func quoteWord(s string, first bool) string {
	if s == "" {
		return "''"
	}
	// A command name that is a reserved word ({, if, [[ …) or names a
	// construct the parser treats specially would be read as syntax.
	needs := first && (syntax.IsKeyword(s) || s == "let")
	for i := 0; i < len(s) && !needs; i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n', '\r', '\'', '"', '\\', '$', '`', ';', '&', '|',
			'<', '>', '(', ')', '*', '?':
			needs = true
		case '[':
			// A lone [ (the test command) is not a glob; in a longer
			// command name, name[ would read as an array assignment.
			needs = strings.IndexByte(s[i+1:], ']') >= 0 || first && s != "["
		case '{':
			// Only {a,b} and {1..3} expand; find's {} does not.
			needs = braceExpands(s[i+1:])
		case '#', '~', '!', '}':
			needs = i == 0 && (c != '}' || len(s) == 1)
		case '=':
			// Only a command name can be mistaken for an assignment.
			needs = first
		default:
			needs = c < 0x20 || c == 0x7f || c >= utf8.RuneSelf && !printableUTF8(s)
		}
	}
	if !needs {
		return s
	}
	if !strings.ContainsAny(s, "'") && printableUTF8(s) && !strings.ContainsAny(s, "\x00\t\n\r\x7f") {
		return "'" + s + "'"
	}
	q, err := syntax.Quote(s, syntax.LangBash)
	if err != nil {
		// Only NUL cannot be quoted; argv words cannot contain it, but a
		// readable fallback beats an empty or panicking render.
		return "'" + strings.ReplaceAll(strings.ReplaceAll(s, "\x00", `\0`), "'", `'\''`) + "'"
	}
	return q
}

// braceExpands reports whether the text after a '{' makes it a brace
// expansion: a later '}' with a ',' or ".." before it.
func braceExpands(rest string) bool {
	end := strings.IndexByte(rest, '}')
	return end > 0 && (strings.IndexByte(rest[:end], ',') >= 0 || strings.Contains(rest[:end], ".."))
}

func printableUTF8(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// renderWords is RenderArgv with dynamic words kept as written.
func renderWords(argv []string, dyn []int) string {
	if len(dyn) == 0 {
		return RenderArgv(argv)
	}
	var b strings.Builder
	d := 0
	for i, w := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if d < len(dyn) && dyn[d] == i {
			b.WriteString(w)
			d++
			continue
		}
		b.WriteString(quoteWord(w, i == 0))
	}
	return b.String()
}

// FileReader reads a file a script sources (`source FILE`, `. FILE`) so
// that its commands are analysed as part of the script. p is absolute and
// clean. It must return at most limit+1 bytes (more means "too large")
// and must not block: a FIFO or device is an error, not a wait. The
// supervisor reads as the target process would; `permwrap explain` reads
// the file system directly (FSReader). Any error leaves the sourced part
// to be judged as it runs. DecideExec and ExplainCommandIn only call it
// for files the policy lets the agent read without asking; callers of
// AnalyzeScript must make sure of that themselves. Values assigned in a
// sourced file never appear in units (scope.set, walker.assignField).
type FileReader func(p string, limit int) ([]byte, error)

// FSReader is a FileReader over a file system, for `permwrap explain`
// (os.DirFS("/")) and tests (fstest.MapFS): regular files only, so that a
// FIFO or device is refused rather than waited on or read forever.
func FSReader(fsys fs.FS) FileReader {
	return func(p string, limit int) ([]byte, error) {
		name := strings.TrimPrefix(path.Clean(p), "/")
		if name == "" {
			name = "."
		}
		fi, err := fs.Stat(fsys, name)
		if pe, ok := err.(*fs.PathError); ok {
			pe.Path = p // the name the script used, not the FS-relative one
		}
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", p)
		}
		f, err := fsys.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return io.ReadAll(io.LimitReader(f, int64(limit)+1))
	}
}

// ScriptContext is what an analysis may know about where a script runs.
// The zero value knows nothing: sourced files are not read.
type ScriptContext struct {
	Cwd      string     // absolute directory the script starts in, or ""
	Home     string     // the home directory, for `source ~/x`
	ReadFile FileReader // nil: sourced files are not read
}

// AnalyzeExec analyses one exec. Units[0] is the exec itself; wrappers
// (env, sudo, xargs, sh -c …) add their inner commands, recursively. The
// wrapper identity is taken from name (the basename of the resolved
// binary, or the program the supervisor recognised by content) rather
// than from argv[0], which the caller of execve chooses. via prefixes every
// unit's wrappers (["#!"] for the line the kernel builds for a script).
func AnalyzeExec(name string, argv []string, ctx ScriptContext, via []string) Analysis {
	a := &analyzer{ctx: ctx}
	if len(argv) == 0 {
		a.sentinel(SentinelOpaque, "exec with an empty argv", via)
		return a.result()
	}
	a.add(Unit{Argv: argv, Line: RenderArgv(argv), Via: via, Dir: "."})
	label := path.Base(argv[0])
	if !shells[label] && wrappers[label] == nil {
		label = name
	}
	a.wrappedAs(name, label, fieldsOf(argv), &scope{dir: ".", via: via})
	return a.result()
}

// AnalyzeScript analyses a shell script as `bash -c SCRIPT` would run
// it, with what is known about where the script runs: sourced files are
// read through ctx.ReadFile.
func AnalyzeScript(src string, ctx ScriptContext) Analysis {
	a := &analyzer{ctx: ctx}
	a.script(src, &scope{dir: "."})
	return a.result()
}

// analyzer accumulates the result of one analysis.
type analyzer struct {
	units     []Unit
	redirects []Redirect
	compounds []Compound
	full      bool // the unit cap was reached and reported
	ctx       ScriptContext
	sourced   int // files read for source/.
	srcBytes  int // their total size
	forks     int // options read two ways (loader), for maxForks
}

func (a *analyzer) result() Analysis {
	return Analysis{Units: a.units, Redirects: a.redirects, Compounds: a.compounds}
}

func (a *analyzer) add(u Unit) {
	if a.full {
		return
	}
	if len(a.units) >= maxUnits {
		a.full = true
		d := "too large: more than 10000 commands"
		a.units = append(a.units, Unit{Sentinel: SentinelUnparseable, Detail: d, Line: SentinelUnparseable + ": " + d, Via: u.Via})
		return
	}
	switch {
	case u.Sentinel != "":
		// Displays that show Line still say what happened.
		u.Line = u.Sentinel
		if u.Detail != "" {
			u.Line += ": " + u.Detail
		}
	case u.Line == "":
		u.Line = renderWords(u.Argv, u.Dynamic)
	}
	a.units = append(a.units, u)
}

func (a *analyzer) sentinel(kind, detail string, via []string) {
	a.add(Unit{Sentinel: kind, Detail: detail, Via: via})
}

// scope is the shell state the walk tracks: where relative paths point and
// which variables have statically known values.
type scope struct {
	via   []string
	depth int
	dir   string            // "." = the shell's starting directory, "" = unknown
	vars  map[string]string // known values; anything absent is unknown
	// pipedStdin is set for commands reading a pipe (not first in a
	// pipeline): a shell there runs a script nobody can see.
	pipedStdin bool
	// argsFollow is set for a command that gets more arguments at run
	// time (xargs): a wrapper or `sh -c` missing its command gets it then.
	argsFollow bool
	// args are the positional parameters $1, $2 … when argsKnown (the
	// words after `sh -c SCRIPT $0`, changed by shift and set --).
	args      []field
	argsKnown bool
	// sourceDepth counts the source/. files being walked, for the bound.
	sourceDepth int
}

func (s *scope) clone() *scope {
	c := *s
	if s.vars != nil {
		c.vars = make(map[string]string, len(s.vars))
		for k, v := range s.vars {
			c.vars[k] = v
		}
	}
	return &c
}

// merge folds in the state after a branch that may or may not have run:
// whatever the branch changed is no longer known.
func (s *scope) merge(b *scope) {
	if b.dir != s.dir {
		s.dir = ""
	}
	if s.argsKnown && (!b.argsKnown || !equalFields(s.args, b.args)) {
		s.args, s.argsKnown = nil, false
	}
	for k, v := range s.vars {
		if bv, ok := b.vars[k]; !ok || bv != v {
			delete(s.vars, k)
		}
	}
}

// inner returns the scope for a command run through a wrapper labelled
// label. Shell variables do not cross into a new process.
func (s *scope) inner(label string, newProcess bool) *scope {
	c := &scope{dir: s.dir, depth: s.depth + 1}
	c.via = make([]string, len(s.via), len(s.via)+1)
	copy(c.via, s.via)
	c.via = append(c.via, label)
	if !newProcess && s.vars != nil {
		c.vars = s.clone().vars
	}
	return c
}

// maxTrackedVars bounds the variables a scope knows, so that copying a
// scope into every branch stays cheap on hostile scripts; past it, new
// variables are simply unknown.
const maxTrackedVars = 128

func (s *scope) set(name, value string) {
	if s.sourceDepth > 0 {
		// A sourced file's values (an exported environment, tokens)
		// are not in any argv: they must not surface in the units
		// shown to people and written to the log.
		s.forget(name)
		return
	}
	if s.vars == nil {
		s.vars = make(map[string]string)
	}
	if _, ok := s.vars[name]; !ok && len(s.vars) >= maxTrackedVars {
		return
	}
	s.vars[name] = value
}

func (s *scope) forget(name string) { delete(s.vars, name) }

// adopt takes the state a same-shell body (eval, source) left behind:
// unlike a branch, it surely ran.
func (s *scope) adopt(b *scope) {
	s.dir, s.vars, s.args, s.argsKnown = b.dir, b.vars, b.args, b.argsKnown
}

// same returns the scope for a body the same shell runs (eval, source):
// variables, directory and positional parameters are shared, the label
// is added to via and the depth grows, for the bounds.
func (s *scope) same(label string) *scope {
	c := s.clone()
	c.via = append(append(make([]string, 0, len(s.via)+1), s.via...), label)
	c.depth++
	return c
}

func equalFields(a, b []field) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// cd applies a change of directory to a static or unknown target.
func (s *scope) cd(target string, known bool) {
	switch {
	case !known || target == "" || target == "-" || strings.HasPrefix(target, "~"):
		s.dir = ""
	case path.IsAbs(target):
		s.dir = path.Clean(target)
	case s.dir == "":
	case s.dir == ".":
		s.dir = path.Clean(target)
	default:
		s.dir = path.Join(s.dir, target)
	}
}
