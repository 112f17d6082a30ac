package shell

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// dynKind says how much is known about a word's run-time value.
type dynKind uint8

const (
	static   dynKind = iota // the value is exactly the field's text
	dynOne                  // unknown, but always exactly one word (fully quoted)
	dynSplit                // unknown; may become zero or several words
)

// field is one word of a command as far as the analysis knows it.
type field struct {
	s   string // the value, or the source text when dyn != static
	dyn dynKind
}

func fieldsOf(argv []string) []field {
	fs := make([]field, len(argv))
	for i, s := range argv {
		fs[i] = field{s: s}
	}
	return fs
}

func splitFields(fs []field) (argv []string, dyn []int) {
	argv = make([]string, len(fs))
	for i, f := range fs {
		argv[i] = f.s
		if f.dyn != static {
			dyn = append(dyn, i)
		}
	}
	return argv, dyn
}

// script parses src and walks it. Every failure becomes a sentinel unit:
// the caller always gets a decision-ready analysis.
func (a *analyzer) script(src string, sc *scope) {
	if sc.depth > maxWrapperDepth {
		a.sentinel(SentinelOpaque, "nesting of wrappers and shells deeper than 16", sc.via)
		return
	}
	if len(src) > maxScriptBytes {
		a.sentinel(SentinelUnparseable, fmt.Sprintf("too large: script of %d bytes", len(src)), sc.via)
		return
	}
	if d := nestingEstimate(src); d > maxNesting {
		a.sentinel(SentinelUnparseable, fmt.Sprintf("too deeply nested (about %d levels)", d), sc.via)
		return
	}
	f, err := parse(src)
	if err != nil {
		a.sentinel(SentinelUnparseable, err.Error(), sc.via)
		return
	}
	if len(a.units) == cap(a.units) {
		// About one command per 40 bytes in what agents run: one
		// allocation instead of one per doubling.
		a.units = slices.Grow(a.units, min(len(src)/40+1, 64))
	}
	defer func() {
		// Last line of defence: a bug in the walk must not take the
		// supervisor down or let the script through undecided.
		if r := recover(); r != nil {
			d := fmt.Sprintf("internal error analysing the script: %v", r)
			a.units = append(a.units, Unit{Sentinel: SentinelUnparseable, Detail: d, Line: SentinelUnparseable + ": " + d, Via: sc.via})
		}
	}()
	w := &walker{a: a, src: src, file: f}
	w.stmts(f.Stmts, sc)
}

// Parsers are reused: building one allocates its read buffers, a
// noticeable share of analysing a short command. Parse resets all state.
var bashParsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// parse reads src as bash, falling back to POSIX sh for the rare script
// only the stricter grammar accepts; the bash error is the one reported.
func parse(src string) (*syntax.File, error) {
	p := bashParsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	bashParsers.Put(p)
	if err == nil {
		return f, nil
	}
	if f2, err2 := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(src), ""); err2 == nil {
		return f2, nil
	}
	return nil, err
}

// nestingEstimate over-approximates how deeply src nests, without
// parsing, so that input which would drive the recursive-descent parser
// thousands of frames deep is refused up front. Quotes are ignored: an
// over-estimate only makes a script unparseable (an ask), never allowed.
func nestingEstimate(src string) int {
	depth, maxDepth := 0, 0
	open := func() {
		depth++
		if depth > maxDepth {
			maxDepth = depth
		}
	}
	closeOne := func() {
		if depth > 0 {
			depth--
		}
	}
	backquotes := 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '(', '{', '[':
			open()
		case ')', '}', ']':
			closeOne()
		case '`':
			// Nested backquotes must be escaped, so each escape level
			// counts as one more level.
			backquotes++
			if backquotes > maxDepth {
				maxDepth = backquotes
			}
		case '\\':
			backquotes = 0
		case 'i', 'w', 'u', 'f', 'c', 's', 'd', 'e', 't':
			if i > 0 && isWordByte(src[i-1]) {
				continue
			}
			j := i
			for j < len(src) && isWordByte(src[j]) {
				j++
			}
			switch src[i:j] {
			case "if", "while", "until", "for", "case", "select":
				open()
			case "fi", "done", "esac":
				closeOne()
			}
			i = j - 1
		}
	}
	return maxDepth
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// walker walks one parsed script; src is that script's text, which
// positions index into.
type walker struct {
	a     *analyzer
	src   string
	file  *syntax.File
	loops map[syntax.Node]*loopSummary // built on the first loop met
}

func (w *walker) text(n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || end > len(w.src) || start > end {
		return ""
	}
	return w.src[start:end]
}

func (w *walker) stmts(list []*syntax.Stmt, sc *scope) {
	for _, s := range list {
		if w.a.full {
			return
		}
		w.stmt(s, sc)
	}
}

func (w *walker) stmt(s *syntax.Stmt, sc *scope) {
	if s == nil {
		return
	}
	if s.Background {
		// A background job runs in a subshell: its cd's and
		// assignments stay there.
		sc = sc.clone()
	}
	// Redirections are performed before the command runs, from the
	// directory the shell is in at that point.
	for _, r := range s.Redirs {
		w.redirect(r, sc)
	}
	switch c := s.Cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		w.call(c, s, sc)
	case *syntax.BinaryCmd:
		w.binary(c, sc, true)
	case *syntax.Subshell:
		w.stmts(c.Stmts, sc.clone())
	case *syntax.Block:
		w.stmts(c.Stmts, sc)
	case *syntax.IfClause:
		w.ifClause(c, sc)
	case *syntax.WhileClause:
		// Later iterations see what earlier ones changed.
		w.forgetChanged(c, sc)
		w.stmts(c.Cond, sc)
		body := sc.clone()
		w.stmts(c.Do, body)
		sc.merge(body)
	case *syntax.ForClause:
		w.forClause(c, sc)
	case *syntax.CaseClause:
		w.word(c.Word, sc)
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				w.word(p, sc)
			}
			body := sc.clone()
			w.stmts(item.Stmts, body)
			sc.merge(body)
		}
	case *syntax.FuncDecl:
		// The body runs whenever the function is called, with whatever
		// variables hold then: nothing known at definition time counts.
		// After the definition any call may have run it, so what it
		// changes is unknown from here on.
		fn := sc.clone()
		fn.vars = nil
		fn.args, fn.argsKnown = nil, false // a call's own arguments
		w.stmt(c.Body, fn)
		w.forgetChanged(c, sc)
	case *syntax.ArithmCmd:
		w.arith(c.X, sc)
	case *syntax.TestClause:
		w.test(c.X, sc)
	case *syntax.LetClause:
		for _, x := range c.Exprs {
			w.arith(x, sc)
		}
	case *syntax.DeclClause:
		w.decl(c, sc)
	case *syntax.TimeClause:
		w.stmt(c.Stmt, sc)
	case *syntax.CoprocClause:
		w.stmt(c.Stmt, sc.clone())
	case *syntax.TestDecl:
		w.word(c.Description, sc)
		w.stmt(c.Body, sc.clone())
	default:
		w.a.sentinel(SentinelOpaque, fmt.Sprintf("unsupported shell construct %T", c), sc.via)
	}
}

func (w *walker) binary(c *syntax.BinaryCmd, sc *scope, top bool) {
	switch c.Op {
	case syntax.Pipe, syntax.PipeAll:
		if top {
			w.compound(c, sc)
		}
		// Every element of a pipeline runs in its own subshell.
		left := sc.clone()
		w.pipeElem(c.X, left, false)
		right := sc.clone()
		right.pipedStdin = true
		w.pipeElem(c.Y, right, true)
	default: // && and ||
		if top {
			w.compound(c, sc)
		}
		w.andOrList(c, sc)
	}
}

// andOrList walks `a && b || c …`. The first element always runs; each
// later one runs only if the ones before it succeeded (&&) or failed (||),
// so a chain of && shares one branch state (`cd x && make > log` writes
// x/log) and whatever any branch changed is unknown afterwards.
func (w *walker) andOrList(c *syntax.BinaryCmd, sc *scope) {
	var elems []*syntax.Stmt
	var ops []syntax.BinCmdOperator
	var flatten func(s *syntax.Stmt)
	flatten = func(s *syntax.Stmt) {
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && len(s.Redirs) == 0 && !s.Background && !s.Negated && (b.Op == syntax.AndStmt || b.Op == syntax.OrStmt) {
			flatten(b.X)
			ops = append(ops, b.Op)
			flatten(b.Y)
			return
		}
		elems = append(elems, s)
	}
	flatten(c.X)
	ops = append(ops, c.Op)
	flatten(c.Y)

	w.stmt(elems[0], sc)
	var branches []*scope
	cur := sc
	for i, e := range elems[1:] {
		if ops[i] == syntax.OrStmt || cur == sc {
			for _, b := range branches {
				sc.merge(b)
			}
			cur = sc.clone()
			branches = append(branches, cur)
		}
		w.stmt(e, cur)
	}
	for _, b := range branches {
		sc.merge(b)
	}
}

// forgetChanged drops what a loop may change (variables it assigns or
// reads into, the directory if it cd's) before walking it, since every
// iteration after the first starts from the changed state.
func (w *walker) forgetChanged(loop syntax.Node, sc *scope) {
	if w.loops == nil {
		w.loops = summarizeLoops(w.file)
	}
	ls := w.loops[loop]
	if ls == nil {
		sc.vars, sc.dir = nil, "" // not summarised: assume the worst
		sc.args, sc.argsKnown = nil, false
		return
	}
	if ls.cd {
		sc.dir = ""
	}
	if ls.args {
		sc.args, sc.argsKnown = nil, false
	}
	if ls.all {
		sc.vars = nil
		return
	}
	for n := range ls.names {
		sc.forget(n)
	}
}

// loopSummary is what a loop or function body may change.
type loopSummary struct {
	names map[string]bool
	all   bool // too many names to list: every variable may change
	cd    bool
	args  bool // shift, set, source or eval: the positional parameters
}

// maxLoopNames bounds a loop summary; a loop assigning more names than
// this is taken to change every variable.
const maxLoopNames = 128

func (ls *loopSummary) addName(n string) {
	if ls.all || n == "" {
		return
	}
	if ls.names == nil {
		ls.names = make(map[string]bool)
	}
	ls.names[n] = true
	if len(ls.names) > maxLoopNames {
		ls.all, ls.names = true, nil
	}
}

func (ls *loopSummary) absorb(inner *loopSummary) {
	ls.cd = ls.cd || inner.cd
	ls.args = ls.args || inner.args
	if inner.all {
		ls.all, ls.names = true, nil
		return
	}
	for n := range inner.names {
		ls.addName(n)
	}
}

// summarizeLoops computes every loop's summary in one walk of the file:
// events go to the innermost loop, whose summary is folded into its
// parent's when the walk leaves it. Walking each loop's subtree on its
// own would cost the nesting depth times the script size.
func summarizeLoops(f *syntax.File) map[syntax.Node]*loopSummary {
	out := make(map[syntax.Node]*loopSummary)
	if f == nil {
		return out
	}
	var nodes []syntax.Node
	var loops []*loopSummary
	top := func() *loopSummary {
		if len(loops) == 0 {
			return nil
		}
		return loops[len(loops)-1]
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			last := nodes[len(nodes)-1]
			nodes = nodes[:len(nodes)-1]
			switch last.(type) {
			case *syntax.WhileClause, *syntax.ForClause, *syntax.FuncDecl:
				inner := loops[len(loops)-1]
				loops = loops[:len(loops)-1]
				if t := top(); t != nil {
					t.absorb(inner)
				}
			}
			return true
		}
		nodes = append(nodes, n)
		switch n := n.(type) {
		case *syntax.WhileClause, *syntax.ForClause, *syntax.FuncDecl:
			ls := &loopSummary{}
			out[n] = ls
			loops = append(loops, ls)
		}
		ls := top()
		if ls == nil {
			return true
		}
		switch n := n.(type) {
		case *syntax.Assign:
			if n.Name != nil {
				ls.addName(n.Name.Value)
			}
		case *syntax.WordIter:
			if n.Name != nil {
				ls.addName(n.Name.Value)
			}
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				break
			}
			switch n.Args[0].Lit() {
			case "cd", "pushd", "popd":
				ls.cd = true
			case "shift", "set":
				ls.args = true
			case "eval", "source", ".":
				// A same-shell body read at run time or from a file
				// may change anything.
				ls.cd, ls.args, ls.all, ls.names = true, true, true, nil
			case "read", "mapfile", "readarray", "getopts", "unset", "printf", "wait":
				for _, a := range n.Args[1:] {
					ls.addName(a.Lit())
				}
			}
		}
		return true
	})
	return out
}

func (w *walker) pipeElem(s *syntax.Stmt, sc *scope, piped bool) {
	if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && len(s.Redirs) == 0 && !s.Background && !s.Negated && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
		w.binary(b, sc, false)
		return
	}
	sc.pipedStdin = piped
	w.stmt(s, sc)
}

func (w *walker) compound(n syntax.Node, sc *scope) {
	line := strings.TrimSpace(w.text(n))
	if line != "" {
		w.a.compounds = append(w.a.compounds, Compound{Line: line, Via: sc.via})
	}
}

func (w *walker) ifClause(c *syntax.IfClause, sc *scope) {
	w.stmts(c.Cond, sc)
	then := sc.clone()
	w.stmts(c.Then, then)
	if c.Else != nil {
		other := sc.clone()
		w.ifClause(c.Else, other)
		sc.merge(other)
	}
	sc.merge(then)
}

func (w *walker) forClause(c *syntax.ForClause, sc *scope) {
	w.forgetChanged(c, sc)
	body := sc.clone()
	switch l := c.Loop.(type) {
	case *syntax.WordIter:
		for _, it := range l.Items {
			w.word(it, sc)
		}
		if l.Name != nil {
			sc.forget(l.Name.Value)
			body.forget(l.Name.Value)
		}
	case *syntax.CStyleLoop:
		w.arith(l.Init, sc)
		w.arith(l.Cond, body)
		w.arith(l.Post, body)
	}
	w.stmts(c.Do, body)
	sc.merge(body)
}

func (w *walker) decl(c *syntax.DeclClause, sc *scope) {
	fs := []field{{s: c.Variant.Value}}
	for _, as := range c.Args {
		w.assignWords(as, sc)
		if as.Naked && as.Name == nil && as.Value != nil {
			// `declare -x` style flag, or a word like "$name".
			fs = append(fs, w.fields(as.Value, sc)...)
			continue
		}
		fs = append(fs, w.assignField(as, sc))
		if as.Name == nil {
			continue
		}
		if as.Naked {
			continue // `export X` keeps X's value
		}
		if v, ok := w.assignValue(as, sc); ok {
			sc.set(as.Name.Value, v)
		} else {
			sc.forget(as.Name.Value)
		}
	}
	w.command(fs, nil, sc)
}

// assignField renders an assignment as a word of the command line.
func (w *walker) assignField(as *syntax.Assign, sc *scope) field {
	if sc.sourceDepth > 0 && as.Name != nil && !as.Naked {
		// `export TOKEN=…` in a sourced file: the value is not shown
		// (see scope.set).
		op := "="
		if as.Append {
			op = "+="
		}
		return field{s: as.Name.Value + op + "…", dyn: dynOne}
	}
	if v, ok := w.assignValue(as, sc); ok && as.Name != nil && !as.Naked && as.Index == nil {
		op := "="
		if as.Append {
			op = "+="
		}
		return field{s: as.Name.Value + op + v}
	}
	return field{s: w.text(as), dyn: dynOne}
}

func (w *walker) assignValue(as *syntax.Assign, sc *scope) (string, bool) {
	if as.Array != nil || as.Index != nil || as.Append {
		return "", false
	}
	if as.Value == nil {
		return "", true
	}
	return w.literal(as.Value, sc, false)
}

// assignWords walks the words of an assignment for command substitutions.
func (w *walker) assignWords(as *syntax.Assign, sc *scope) {
	w.arith(as.Index, sc)
	w.word(as.Value, sc)
	if as.Array != nil {
		for _, e := range as.Array.Elems {
			w.arith(e.Index, sc)
			w.word(e.Value, sc)
		}
	}
}

func (w *walker) call(c *syntax.CallExpr, s *syntax.Stmt, sc *scope) {
	for _, as := range c.Assigns {
		w.assignWords(as, sc)
	}
	if len(c.Args) == 0 {
		// A bare assignment changes the shell's own variables.
		for _, as := range c.Assigns {
			if as.Name == nil {
				continue
			}
			if v, ok := w.assignValue(as, sc); ok {
				sc.set(as.Name.Value, v)
			} else {
				sc.forget(as.Name.Value)
			}
		}
		return
	}
	fs := make([]field, 0, len(c.Args))
	for _, arg := range c.Args {
		w.word(arg, sc)
		fs = w.appendFields(fs, arg, sc)
	}
	w.command(fs, s, sc)
}

// command records a simple command and looks into what it runs.
func (w *walker) command(fs []field, s *syntax.Stmt, sc *scope) {
	if len(fs) == 0 {
		// Every word was a variable known to be empty: nothing runs.
		return
	}
	if fs[0].dyn != static {
		w.a.sentinel(SentinelOpaque, "command name is not static: "+fs[0].s, sc.via)
		return
	}
	argv, dyn := splitFields(fs)
	w.a.add(Unit{Argv: argv, Dynamic: dyn, Via: sc.via, Dir: sc.dir})
	name := fs[0].s
	if w.builtin(fs, sc) {
		return
	}
	switch name {
	case "command", "builtin":
		// `command cd x`, `builtin eval …` act on this shell as the
		// builtin alone would.
		if k := builtinOperand(fs); k > 0 && sameShellBuiltins[fs[k].s] && fs[k].dyn == static {
			in := sc.same(name)
			inArgv, inDyn := splitFields(fs[k:])
			w.a.add(Unit{Argv: inArgv, Dynamic: inDyn, Via: in.via, Dir: sc.dir})
			w.builtin(fs[k:], in)
			sc.adopt(in)
			return
		}
	case "exec":
		if len(fs) == 1 {
			return // only redirections: they were recorded already
		}
	}
	if IsShell(BaseName(name)) && s != nil {
		if _, _, mode, err := shellArgs(fs); err == "" && mode == shellModeStdin {
			w.shellStdin(BaseName(name), s, sc)
			return
		}
	}
	w.a.wrapped(BaseName(name), fs, sc)
}

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

// shellStdin handles a shell started without a script operand: a visible
// here-document or here-string is its script; a pipe is a script nobody
// can see before it runs.
func (w *walker) shellStdin(name string, s *syntax.Stmt, sc *scope) {
	for _, r := range s.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc == nil {
				w.a.script("", sc.inner(name+" <<", true))
				return
			}
			if body, ok := w.heredocBody(r); ok {
				w.a.script(body, sc.inner(name+" <<", true))
			} else {
				w.a.sentinel(SentinelOpaque, name+" reads a here-document with expansions", sc.via)
			}
			return
		case syntax.WordHdoc:
			if v, ok := w.literal(r.Word, sc, true); ok {
				w.a.script(v, sc.inner(name+" <<<", true))
			} else {
				w.a.sentinel(SentinelOpaque, name+" reads a here-string that is not static", sc.via)
			}
			return
		case syntax.RdrIn:
			w.a.sentinel(SentinelOpaque, name+" reads its script from "+w.text(r.Word), sc.via)
			return
		}
	}
	if sc.pipedStdin {
		w.a.sentinel(SentinelOpaque, name+" runs a script read from a pipe", sc.via)
	}
}

func (w *walker) heredocBody(r *syntax.Redirect) (string, bool) {
	var b strings.Builder
	for _, p := range r.Hdoc.Parts {
		lit, ok := p.(*syntax.Lit)
		if !ok {
			return "", false
		}
		b.WriteString(lit.Value)
	}
	return b.String(), true
}

func (w *walker) redirect(r *syntax.Redirect, sc *scope) {
	w.word(r.Word, sc)
	var acc Access
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob,
		syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		acc = AccessWrite
	case syntax.RdrIn:
		acc = AccessRead
	case syntax.RdrInOut:
		acc = AccessRead | AccessWrite
	case syntax.DplOut, syntax.DplIn:
		// `>&2` duplicates a descriptor; only bash's `>& file` (no
		// descriptor number, no "-") opens a file.
		v, ok := w.literal(r.Word, sc, true)
		if ok && (v == "-" || IsDigits(strings.TrimSuffix(v, "-"))) {
			return
		}
		if r.Op == syntax.DplIn {
			acc = AccessRead
		} else {
			acc = AccessWrite
		}
	case syntax.Hdoc, syntax.DashHdoc:
		if r.Hdoc != nil {
			w.word(r.Hdoc, sc)
		}
		return
	default: // here-strings open nothing
		return
	}
	v, ok := w.literal(r.Word, sc, true)
	computed := !ok
	if computed {
		// `> "$f"`, `> f$i.c`: the open is judged when it happens.
		v = w.text(r.Word)
	}
	if len(w.a.redirects) >= maxUnits {
		w.a.add(Unit{Sentinel: SentinelUnparseable, Detail: "too large: more than 10000 redirections", Via: sc.via})
		w.a.full = true
		return
	}
	w.a.redirects = append(w.a.redirects, Redirect{Access: acc, Path: v, Dir: sc.dir, Via: sc.via, Computed: computed})
}

func IsDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// word walks a word for the commands it runs: command and process
// substitutions, also inside parameter expansions and arithmetic. They
// run in subshells.
func (w *walker) word(wd *syntax.Word, sc *scope) {
	if wd == nil {
		return
	}
	for _, p := range wd.Parts {
		w.wordPart(p, sc)
	}
}

func (w *walker) wordPart(p syntax.WordPart, sc *scope) {
	switch p := p.(type) {
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			w.wordPart(q, sc)
		}
	case *syntax.CmdSubst:
		w.stmts(p.Stmts, sc.clone())
	case *syntax.ProcSubst:
		w.stmts(p.Stmts, sc.clone())
	case *syntax.ParamExp:
		if p.NestedParam != nil {
			w.wordPart(p.NestedParam, sc)
		}
		w.arith(p.Index, sc)
		if p.Slice != nil {
			w.arith(p.Slice.Offset, sc)
			w.arith(p.Slice.Length, sc)
		}
		if p.Repl != nil {
			w.word(p.Repl.Orig, sc)
			w.word(p.Repl.With, sc)
		}
		if p.Exp != nil {
			w.word(p.Exp.Word, sc)
		}
	case *syntax.ArithmExp:
		w.arith(p.X, sc)
	case *syntax.BraceExp:
		for _, e := range p.Elems {
			w.word(e, sc)
		}
	}
}

func (w *walker) arith(x syntax.ArithmExpr, sc *scope) {
	switch x := x.(type) {
	case nil:
	case *syntax.Word:
		w.word(x, sc)
	case *syntax.BinaryArithm:
		w.arith(x.X, sc)
		w.arith(x.Y, sc)
	case *syntax.UnaryArithm:
		w.arith(x.X, sc)
	case *syntax.ParenArithm:
		w.arith(x.X, sc)
	case *syntax.FlagsArithm:
		w.arith(x.X, sc)
	}
}

func (w *walker) test(x syntax.TestExpr, sc *scope) {
	switch x := x.(type) {
	case nil:
	case *syntax.Word:
		w.word(x, sc)
	case *syntax.BinaryTest:
		w.test(x.X, sc)
		w.test(x.Y, sc)
	case *syntax.UnaryTest:
		w.test(x.X, sc)
	case *syntax.ParenTest:
		w.test(x.X, sc)
	}
}

// fields expands a command word as far as it is statically known. A word
// with any unknown part is one field holding its source text.
func (w *walker) fields(wd *syntax.Word, sc *scope) []field {
	return w.appendFields(nil, wd, sc)
}

// appendFields is fields appending to dst; the common one-part word
// takes no builder.
func (w *walker) appendFields(dst []field, wd *syntax.Word, sc *scope) []field {
	if len(wd.Parts) == 1 {
		switch p := wd.Parts[0].(type) {
		case *syntax.DblQuoted:
			if words, ok := sc.positionalWords(wd); ok {
				return append(dst, words...)
			}
		case *syntax.Lit:
			if v, ok := unquoteLit(p.Value, true); ok {
				return append(dst, field{s: v})
			}
		case *syntax.SglQuoted:
			if !p.Dollar {
				return append(dst, field{s: p.Value})
			}
		}
	}
	fs := dst
	var cur strings.Builder
	have := false // cur holds a field, possibly empty ("")
	for _, p := range wd.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v, ok := unquoteLit(p.Value, len(fs) == len(dst) && !have && cur.Len() == 0)
			if !ok {
				return w.appendDynamic(dst, wd, dynSplit)
			}
			cur.WriteString(v)
			have = true
		case *syntax.SglQuoted:
			v, ok := sglQuoted(p)
			if !ok {
				return w.appendDynamic(dst, wd, quotedKind(wd))
			}
			cur.WriteString(v)
			have = true
		case *syntax.DblQuoted:
			v, ok := w.dblQuoted(p, sc)
			if !ok {
				return w.appendDynamic(dst, wd, quotedKind(wd))
			}
			cur.WriteString(v)
			have = true
		case *syntax.ParamExp:
			v, ok := w.param(p, sc)
			if !ok || strings.ContainsAny(v, "*?[") {
				return w.appendDynamic(dst, wd, dynSplit)
			}
			// Unquoted: the value is split into words on whitespace.
			parts := strings.Fields(v)
			if len(parts) == 0 {
				continue
			}
			if v[0] == ' ' || v[0] == '\t' || v[0] == '\n' {
				if have {
					fs = append(fs, field{s: cur.String()})
					cur.Reset()
					have = false
				}
			}
			for i, part := range parts {
				if i > 0 {
					fs = append(fs, field{s: cur.String()})
					cur.Reset()
				}
				cur.WriteString(part)
				have = true
			}
			if last := v[len(v)-1]; last == ' ' || last == '\t' || last == '\n' {
				fs = append(fs, field{s: cur.String()})
				cur.Reset()
				have = false
			}
		default:
			return w.appendDynamic(dst, wd, dynSplit)
		}
	}
	if have {
		fs = append(fs, field{s: cur.String()})
	}
	return fs
}

func (w *walker) appendDynamic(dst []field, wd *syntax.Word, k dynKind) []field {
	return append(dst, field{s: w.text(wd), dyn: k})
}

// quotedKind is dynOne for a word made only of quoted parts, which always
// stays a single word whatever its expansions hold.
func quotedKind(wd *syntax.Word) dynKind {
	for _, p := range wd.Parts {
		switch p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
		default:
			return dynSplit
		}
	}
	return dynOne
}

// literal is the single static value of a word (redirect targets,
// assignment values, here-strings): no field splitting or globbing
// applies there, so unquoted expansions are taken whole.
func (w *walker) literal(wd *syntax.Word, sc *scope, tildeIsDynamic bool) (string, bool) {
	if wd == nil {
		return "", true
	}
	var b strings.Builder
	for i, p := range wd.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v, ok := unquoteLit(p.Value, i == 0 && tildeIsDynamic)
			if !ok {
				if !tildeIsDynamic || !strings.HasPrefix(p.Value, "~") {
					return "", false
				}
				// A leading ~ in a path stays as written: the
				// supervisor expands it with the user's home.
				v2, ok2 := unquoteLit(p.Value, false)
				if !ok2 {
					return "", false
				}
				v = v2
			}
			b.WriteString(v)
		case *syntax.SglQuoted:
			v, ok := sglQuoted(p)
			if !ok {
				return "", false
			}
			b.WriteString(v)
		case *syntax.DblQuoted:
			v, ok := w.dblQuoted(p, sc)
			if !ok {
				return "", false
			}
			b.WriteString(v)
		case *syntax.ParamExp:
			v, ok := w.param(p, sc)
			if !ok {
				return "", false
			}
			b.WriteString(v)
		default:
			return "", false
		}
	}
	return b.String(), true
}

func (w *walker) dblQuoted(q *syntax.DblQuoted, sc *scope) (string, bool) {
	if q.Dollar {
		return "", false
	}
	var b strings.Builder
	for _, p := range q.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeDbl(p.Value))
		case *syntax.ParamExp:
			if p.Param != nil && p.Param.Value == "@" && len(sc.args) != 1 {
				// "a $@ b" makes as many words as there are
				// parameters; not worth modelling.
				return "", false
			}
			v, ok := w.param(p, sc)
			if !ok {
				return "", false
			}
			b.WriteString(v)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// param is the value of a plain $NAME / ${NAME} assigned earlier in the
// script; any operator, special parameter or unknown name is unknown.
func (w *walker) param(p *syntax.ParamExp, sc *scope) (string, bool) {
	if p.Param == nil || p.Excl || p.Length || p.Width || p.Index != nil || p.Slice != nil ||
		p.Repl != nil || p.Exp != nil || p.NestedParam != nil || p.Names != 0 || p.Flags != nil ||
		len(p.Modifiers) > 0 || p.IsSet {
		return "", false
	}
	return sc.lookup(p.Param.Value)
}

// lookup is the value of a variable or special parameter, if known.
func (s *scope) lookup(name string) (string, bool) {
	switch {
	case name == "@" || name == "*":
		// Joined by spaces: right for $* and for "$@" as a single
		// word; a "$@" that makes several words is handled by
		// positionalWords.
		if !s.argsKnown {
			return "", false
		}
		var b strings.Builder
		for i, f := range s.args {
			if f.dyn != static {
				return "", false
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(f.s)
		}
		return b.String(), true
	case name == "#":
		if !s.argsKnown {
			return "", false
		}
		return strconv.Itoa(len(s.args)), true
	case name != "0" && IsDigits(name):
		if !s.argsKnown {
			return "", false
		}
		n, err := strconv.Atoi(name)
		if err != nil || n > len(s.args) {
			return "", err == nil // unset: empty
		}
		f := s.args[n-1]
		return f.s, f.dyn == static
	}
	v, ok := s.vars[name]
	return v, ok
}

// positionalWords expands a word that is exactly "$@" (or "${@}") to one
// field per known positional parameter.
func (s *scope) positionalWords(wd *syntax.Word) ([]field, bool) {
	if len(wd.Parts) != 1 {
		return nil, false
	}
	q, ok := wd.Parts[0].(*syntax.DblQuoted)
	if !ok || q.Dollar || len(q.Parts) != 1 {
		return nil, false
	}
	p, ok := q.Parts[0].(*syntax.ParamExp)
	if !ok || p.Param == nil || p.Param.Value != "@" || p.Excl || p.Length || p.Width || p.Index != nil ||
		p.Slice != nil || p.Repl != nil || p.Exp != nil || p.NestedParam != nil || p.Names != 0 || p.Flags != nil ||
		len(p.Modifiers) > 0 || p.IsSet || !s.argsKnown {
		return nil, false
	}
	for _, f := range s.args {
		if f.dyn != static {
			return nil, false
		}
	}
	return s.args, true
}

// unquoteLit removes backslash escapes from an unquoted literal. It
// reports false for text the shell would still expand: globs, brace
// expansion, and a leading ~ when first is set.
func unquoteLit(s string, first bool) (string, bool) {
	if first && strings.HasPrefix(s, "~") {
		return "", false
	}
	if !strings.ContainsAny(s, `\*?[{`) {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 == len(s) {
				b.WriteByte(c) // a trailing backslash stays, as in bash
				continue
			}
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		case '*', '?':
			return "", false
		case '[':
			if strings.IndexByte(s[i+1:], ']') >= 0 {
				return "", false
			}
		case '{':
			if braceExpands(s[i+1:]) {
				return "", false
			}
		}
		b.WriteByte(c)
	}
	return b.String(), true
}

// unescapeDbl removes the backslashes that are special inside double
// quotes; others stay, as in the shell.
func unescapeDbl(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				b.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func sglQuoted(q *syntax.SglQuoted) (string, bool) {
	if !q.Dollar {
		return q.Value, true
	}
	return decodeANSIC(q.Value)
}

// decodeANSIC decodes the body of a $'…' string. Escapes it does not know
// make the word unknown rather than guessed.
func decodeANSIC(s string) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case 'x', 'u', 'U', '0', '1', '2', '3', '4', '5', '6', '7':
			base, max := 16, map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			j := i + 1
			if max == 0 {
				base, max, j = 8, 3, i
			}
			n, k := 0, j
			for ; k < len(s) && k-j < max; k++ {
				d := hexDigit(s[k])
				if d < 0 || d >= base {
					break
				}
				n = n*base + d
			}
			if k == j {
				return "", false
			}
			if e == 'u' || e == 'U' {
				b.WriteRune(rune(n))
			} else {
				if n == 0 {
					// A NUL ends the word in bash.
					return "", false
				}
				b.WriteByte(byte(n))
			}
			i = k - 1
		default:
			return "", false
		}
	}
	return b.String(), true
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
