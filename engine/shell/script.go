package shell

import (
	"fmt"
	"slices"
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
