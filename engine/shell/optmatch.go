package shell

import (
	"strings"
)

// An option reading travels through the policy as a bash-surface value
// like any spelling, encoded so that no command line can be mistaken
// for one: it starts with a NUL byte, which no argument and no pattern
// contains, and its items are separated by NUL bytes. Only a rule's
// CommandPattern reads it (the engine's bashPattern); a glob never
// matches it.
const (
	itemOperand = 'a'
	itemOption  = 'o' // starts an option: its canonical name
	itemName    = 'n' // another name of the option
	itemValue   = 'v'
	itemFrom    = 'f' // the word that implies the option
)

// IsOptionReading reports whether a bash-surface value is an option
// reading rather than a command line.
func IsOptionReading(v string) bool { return len(v) > 0 && v[0] == 0 }

// encodeCommand is the value an option reading is judged as.
func encodeCommand(c Command) string {
	var b strings.Builder
	n := 0
	for _, o := range c.Operands {
		n += len(o) + 2
	}
	for _, o := range c.Options {
		for _, name := range o.Names {
			n += len(name) + 2
		}
		n += len(o.Value) + len(o.From) + 4
	}
	b.Grow(n)
	item := func(kind byte, s string) {
		b.WriteByte(0)
		b.WriteByte(kind)
		b.WriteString(s)
	}
	for _, o := range c.Operands {
		item(itemOperand, o)
	}
	for _, o := range c.Options {
		for i, n := range o.Names {
			if i == 0 {
				item(itemOption, n)
			} else {
				item(itemName, n)
			}
		}
		if o.HasValue {
			item(itemValue, o.Value)
		}
		if o.From != "" {
			item(itemFrom, o.From)
		}
	}
	return b.String()
}

// decodeCommand reads an encoded option reading.
func decodeCommand(v string) (Command, bool) {
	var c Command
	if !IsOptionReading(v) {
		return c, false
	}
	for _, it := range strings.Split(v[1:], "\x00") {
		if it == "" {
			return c, false
		}
		s := it[1:]
		switch it[0] {
		case itemOperand:
			c.Operands = append(c.Operands, s)
		case itemOption:
			c.Options = append(c.Options, Option{Names: []string{s}})
		case itemName, itemValue, itemFrom:
			if len(c.Options) == 0 {
				return c, false
			}
			o := &c.Options[len(c.Options)-1]
			switch it[0] {
			case itemName:
				o.Names = append(o.Names, s)
			case itemValue:
				o.Value, o.HasValue = s, true
			default:
				o.From = s
			}
		default:
			return c, false
		}
	}
	return c, true
}

// ShowReading is the form of a value a person reads: an option reading
// as its operands followed by its options by their canonical names
// (`git push origin main [options: --force (+main), --quiet]`), any
// other value as it is.
func ShowReading(v string) string {
	c, ok := decodeCommand(v)
	if !ok {
		return v
	}
	var b strings.Builder
	for i, o := range c.Operands {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteWord(o, i == 0))
	}
	b.WriteString(" [options:")
	if len(c.Options) == 0 {
		b.WriteString(" none")
	}
	for i, o := range c.Options {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(' ')
		b.WriteString(quoteWord(o.Names[0], false))
		if o.HasValue {
			b.WriteString("=" + quoteWord(o.Value, false))
		}
		if o.From != "" {
			b.WriteString(" (" + quoteWord(o.From, false) + ")")
		}
	}
	b.WriteString("]")
	return b.String()
}

// CommandPattern is a bash-surface pattern read as operands and option
// requirements: `git push --force* origin *` requires an option named
// --force* (anywhere in the command), the operands git push origin in
// that order, and admits any further operands and options (the `*`).
type CommandPattern struct {
	items []patItem
	reqs  []optReq
	// open: a `*` word admits options the pattern does not name.
	open bool
	// unknown are option words the program's table has no option for.
	unknown []string
}

// UnknownOptions are the option words of the pattern that name no option
// its program accepts (`git push --froce*`): such a rule matches only a
// command line written that way, which the program refuses. Empty when
// the program has no option table.
func (p *CommandPattern) UnknownOptions() []string { return p.unknown }

// patItem is one operand word of a pattern, or a `*` word (any run of
// operands, possibly none).
type patItem struct {
	star bool
	g    wordGlob
}

// optReq is an option the pattern requires: a name, and a value when
// the pattern names one (`--push-option=ci.*`, `-o ci.skip`).
type optReq struct {
	name  wordGlob
	value *wordGlob
	raw   string // as the pattern writes it, for comparing rules
}

// wordGlob is a glob over one word: literal pieces between stars.
type wordGlob struct{ segs []string }

func (g wordGlob) literal() (string, bool) {
	if len(g.segs) == 1 {
		return g.segs[0], true
	}
	return "", false
}

func (g wordGlob) match(v string) bool { return MatchSegs(g.segs, v) }

// MatchSegs matches literal pieces separated by stars (segs: the pieces,
// at least one). With one kind of star, taking the leftmost occurrence
// of each middle piece is optimal, so this is linear in practice and
// never backtracks. The engine's path and command globs use it too.
func MatchSegs(segs []string, v string) bool {
	if len(segs) == 1 {
		return v == segs[0]
	}
	first, last := segs[0], segs[len(segs)-1]
	if len(v) < len(first)+len(last) || !strings.HasPrefix(v, first) || !strings.HasSuffix(v, last) {
		return false
	}
	rest := v[len(first) : len(v)-len(last)]
	for _, s := range segs[1 : len(segs)-1] {
		i := strings.Index(rest, s)
		if i < 0 {
			return false
		}
		rest = rest[i+len(s):]
	}
	return true
}

func globOf(w string) wordGlob {
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c == '\\' && i+1 < len(w) {
			i++
			cur.WriteByte(w[i])
			continue
		}
		if c == '*' {
			segs = append(segs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	return wordGlob{segs: append(segs, cur.String())}
}

// hasUnescapedTrailingStar reports whether w ends with a star that is
// not escaped.
func hasUnescapedTrailingStar(w string) bool {
	for i := 0; i < len(w); i++ {
		switch w[i] {
		case '\\':
			i++
		case '*':
			if i == len(w)-1 {
				return true
			}
		}
	}
	return false
}

// hasStar reports whether a pattern word has an unescaped star.
func hasStar(w string) bool {
	for i := 0; i < len(w); i++ {
		switch w[i] {
		case '\\':
			i++
		case '*':
			return true
		}
	}
	return false
}

// Options is the number of options the pattern requires.
func (p *CommandPattern) Options() int { return len(p.reqs) }

// Compare orders two command patterns by what they name, for a command
// both match (docs/bash-rules.md §2.2): +1 when p names everything q
// names and more (q's options among p's, and at least as many literal
// characters in its operand words), -1 the other way round, 0 when they
// name the same or different things. A caller breaks 0 by the most
// restrictive answer, or for the same things by the usual order.
func (p *CommandPattern) Compare(q *CommandPattern) int {
	pq, qp := p.covers(q), q.covers(p)
	switch {
	case pq && !qp:
		return 1
	case qp && !pq:
		return -1
	}
	return 0
}

// Same reports whether two patterns name the same options and as many
// operand characters: neither names more than the other.
func (p *CommandPattern) Same(q *CommandPattern) bool { return p.covers(q) && q.covers(p) }

// covers reports whether p names every option q names and at least as
// many operand characters.
func (p *CommandPattern) covers(q *CommandPattern) bool {
	if p.operandLiterals() < q.operandLiterals() {
		return false
	}
	for _, r := range q.reqs {
		found := false
		for _, o := range p.reqs {
			if o.raw == r.raw {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// operandLiterals counts the literal characters of the operand words.
func (p *CommandPattern) operandLiterals() int {
	n := 0
	for _, it := range p.items {
		for _, s := range it.g.segs {
			n += len(s)
		}
	}
	return n
}

// CompileCommandPattern reads a bash-surface pattern as operands and
// options, with the option table of the program its first word names.
// It returns nil for a pattern that is not a plain run of words (quotes,
// doubled or leading spaces, tabs, a backslash other than `\*` or
// `\\`, a shell operator as in `curl * | sh`): such a pattern matches
// the command line as written only.
func CompileCommandPattern(pat string) *CommandPattern {
	if pat == "" || strings.HasPrefix(pat, " ") || strings.HasSuffix(pat, " ") ||
		strings.Contains(pat, "  ") || strings.ContainsAny(pat, "'\"\t\n\r\x00`|&;<>()") {
		return nil
	}
	for i := 0; i < len(pat); i++ {
		if pat[i] == '\\' {
			if i+1 >= len(pat) || pat[i+1] != '*' && pat[i+1] != '\\' {
				return nil
			}
			i++
		}
	}
	words := strings.Split(pat, " ")
	// A trailing star admits further operands and options, whether it
	// is a word of its own (`git push *`) or ends the last word (`git
	// push --force*`, which as a command line matches whatever follows).
	last := words[len(words)-1]
	cp := &CommandPattern{open: hasUnescapedTrailingStar(last)}
	var t *optTable
	if !hasStar(words[0]) {
		t = optionTables()[BaseName(globOf(words[0]).segs[0])]
	}
	cp.items = append(cp.items, patItem{star: words[0] == "*", g: globOf(words[0])})
	if words[0] == "*" {
		cp.open = true
	}
	ended, subChosen, operands := false, t == nil || t.subs == nil, 0
	for i := 1; i < len(words); i++ {
		w := words[i]
		next := ""
		if i+1 < len(words) && words[i+1] != "*" {
			next = words[i+1]
		}
		switch {
		case w == "*":
			cp.items = append(cp.items, patItem{star: true})
			cp.open = true
			continue
		case !ended && w == "--":
			ended = true
			continue
		case !ended && len(w) >= 2 && w[0] == '-':
			n := len(cp.reqs)
			if cp.requirement(t, w, next) {
				i++
			}
			if t != nil {
				for _, r := range cp.reqs[n:] {
					if !t.knows(r.name) {
						cp.unknown = append(cp.unknown, w)
						break
					}
				}
			}
			continue
		}
		g := globOf(w)
		cp.items = append(cp.items, patItem{g: g})
		operands++
		if !subChosen {
			subChosen = true
			lit, ok := g.literal()
			if ok && t.subs[lit] != nil {
				t = t.subs[lit]
			} else {
				t = nil
			}
			continue
		}
		if t != nil && t.inOrder {
			ended = true
		}
	}
	if cp.open && last != "*" {
		cp.items = append(cp.items, patItem{star: true})
	}
	return cp
}

// requirement adds the option requirements of pattern word w (next the
// word after it, "" when none or a `*`), reporting whether it took next
// as a value.
func (cp *CommandPattern) requirement(t *optTable, w, next string) bool {
	add := func(name string, value *wordGlob) {
		if t != nil && t.abbrev && strings.HasPrefix(name, "--") && !hasStar(name) && t.opts[name] == nil {
			// An abbreviation in a rule, as the program reads it in a
			// command: `--recur` is --recursive.
			if c := abbreviations(t, name); len(c) == 1 {
				name = c[0].names[0]
			}
		}
		raw := name
		if value != nil {
			raw += "=" + strings.Join(value.segs, "*")
		}
		cp.reqs = append(cp.reqs, optReq{name: globOf(name), value: value, raw: raw})
	}
	valueOf := func(s string) *wordGlob { g := globOf(s); return &g }
	if name, v, ok := strings.Cut(w, "="); ok && (strings.HasPrefix(w, "--") || len(name) == 2) {
		add(name, valueOf(v))
		return false
	}
	if hasStar(w) || t == nil {
		add(w, nil)
		return false
	}
	lit := globOf(w).segs[0]
	if strings.HasPrefix(lit, "--") || len(lit) == 2 || !t.clusters {
		if sp := t.opts[lit]; sp != nil && sp.kind == optValue && next != "" {
			add(w, valueOf(next))
			return true
		}
		add(w, nil)
		return false
	}
	for j := 1; j < len(lit); j++ {
		name := "-" + lit[j:j+1]
		sp := t.opts[name]
		if sp == nil || sp.kind == optFlag {
			add(name, nil)
			continue
		}
		switch {
		case j+1 < len(lit):
			add(name, valueOf(strings.TrimPrefix(lit[j+1:], "=")))
		case sp.kind == optValue && next != "":
			add(name, valueOf(next))
			return true
		default:
			add(name, nil)
		}
		return false
	}
	return false
}

// Match reports whether an option reading (see IsOptionReading) meets
// the pattern: every required option is among the command's, the
// operands match in order, and unless the pattern has a trailing star
// the command has no option the pattern does not name. It reads the
// encoding in place: it runs for every rule a reading meets.
func (p *CommandPattern) Match(v string) bool {
	if !IsOptionReading(v) {
		return false
	}
	var opsBuf [32]string
	var optBuf [16]encodedOption
	ops, opts := opsBuf[:0], optBuf[:0]
	for i := 0; i < len(v); {
		// v[i] is the NUL that starts an item.
		end := len(v)
		if j := strings.IndexByte(v[i+1:], 0); j >= 0 {
			end = i + 1 + j
		}
		if end-i < 2 {
			return false
		}
		item := v[i+2 : end]
		switch v[i+1] {
		case itemOperand:
			ops = append(ops, item)
		case itemOption:
			opts = append(opts, encodedOption{names: v[i:end]})
		case itemName, itemValue, itemFrom:
			if len(opts) == 0 {
				return false
			}
			o := &opts[len(opts)-1]
			switch v[i+1] {
			case itemName:
				o.names = v[i-len(o.names) : end] // the names are contiguous
			case itemValue:
				o.value, o.hasValue = item, true
			}
		default:
			return false
		}
		i = end
	}
	for i := range p.reqs {
		found := false
		for j := range opts {
			if p.reqs[i].meetsEncoded(&opts[j]) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if !p.open {
		for j := range opts {
			named := false
			for i := range p.reqs {
				if p.reqs[i].meetsEncoded(&opts[j]) {
					named = true
					break
				}
			}
			if !named {
				return false
			}
		}
	}
	return p.matchOperands(ops)
}

// encodedOption is one option of an encoded reading: names is its run
// of name items (each a NUL, a kind byte and the name).
type encodedOption struct {
	names    string
	value    string
	hasValue bool
}

func (r *optReq) meetsEncoded(o *encodedOption) bool {
	if r.value != nil && (!o.hasValue || !r.value.match(o.value)) {
		return false
	}
	for n := o.names; n != ""; {
		end := len(n)
		if j := strings.IndexByte(n[1:], 0); j >= 0 {
			end = 1 + j
		}
		if r.name.match(n[2:end]) {
			return true
		}
		n = n[end:]
	}
	return false
}

// matchOperands matches the pattern's operand words against ops, a `*`
// word matching any run: the classic wildcard walk, which backtracks
// only to the last star, is exact when every other item matches one
// element.
func (p *CommandPattern) matchOperands(ops []string) bool {
	items := p.items
	i, j := 0, 0
	star, mark := -1, 0
	for j < len(ops) {
		switch {
		case i < len(items) && !items[i].star && items[i].g.match(ops[j]):
			i++
			j++
		case i < len(items) && items[i].star:
			star, mark = i, j
			i++
		case star >= 0:
			i = star + 1
			mark++
			j = mark
		default:
			return false
		}
	}
	for i < len(items) && items[i].star {
		i++
	}
	return i == len(items)
}

// ReadingProgram is the first operand of an option reading: the program
// as spelled.
func ReadingProgram(v string) (string, bool) {
	if len(v) < 2 || v[0] != 0 || v[1] != itemOperand {
		return "", false
	}
	w := v[2:]
	if i := strings.IndexByte(w, 0); i >= 0 {
		w = w[:i]
	}
	return w, true
}

// ReadingHasOptions reports whether an option reading has any option.
func ReadingHasOptions(v string) bool {
	return IsOptionReading(v) && strings.Contains(v, "\x00o")
}

// knows reports whether some option name of t matches g, or a --no-
// form of one for a table that negates.
func (t *optTable) knows(g wordGlob) bool {
	for n, sp := range t.opts {
		if g.match(n) || t.negate && strings.HasPrefix(n, "--") && g.match("--no-"+n[2:]) {
			return true
		}
		for _, a := range sp.names {
			if g.match(a) {
				return true
			}
		}
	}
	return false
}
