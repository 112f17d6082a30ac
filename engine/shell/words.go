package shell

import (
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

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
