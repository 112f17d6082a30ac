package engine

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync"

	"github.com/permwrap/permwrap/engine/shell"
)

// Path patterns are matched by a small automaton of our own rather than
// github.com/gobwas/glob. gobwas v0.2.3 panics on valid inputs (its Row
// matcher slices out of range, e.g. `/a{/**/,/}b` against `/a/b`) and
// takes unbounded time on patterns like `0*???…?*`; its v1.1.0 rewrite
// matches by backtracking, so k stars against n bytes cost about
// n^(k+1): `*a*a*a*a*a*c*x` against 80 bytes takes seconds, one more
// star minutes. A matcher that sits on every syscall must neither panic
// nor stall, so this one simulates a nondeterministic automaton in
// O(len(value) × states) with a fixed-size state set: no recursion over
// the value, no allocation.
//
// Syntax (the gobwas/gitignore syntax people expect):
//
//	*      any run of characters within one path component
//	**     any run of characters across components; `/**/` also matches `/`
//	       (zero directories) and a trailing `/**` also matches the
//	       directory itself
//	?      one byte other than '/'
//	[abc] [a-z] [!a-c] [^a-c]   one byte other than '/' from (or not from) a set
//	\x     the character x literally
//
// `{a,b}` alternatives are rejected rather than read literally: a user who
// writes them expects alternation, and a deny that silently matches nothing
// would fail open.

// maxPatternStates bounds the automaton; the state set is a fixed array.
const maxPatternStates = 5 * 64

type elemKind uint8

const (
	elLit   elemKind = iota // one literal byte
	elAny1                  // ?
	elClass                 // [...]
	elStar                  // *
	elDStar                 // **
	elEps                   // consumes nothing; epsilon edges to the next element and to skip
)

type elem struct {
	kind  elemKind
	c     byte  // elLit
	class uint8 // elClass: index into automaton.classes
	// skip is elEps's extra epsilon edge. It makes `**/` optional as a
	// whole, so `/a/**/b` matches `/a/b`; it sits before the `**` so it is
	// only taken when the group is entered, not after `**` consumed.
	skip int32
}

type byteSet [4]uint64

func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }
func (s *byteSet) add(c byte)      { s[c>>6] |= 1 << (c & 63) }

type stateSet [maxPatternStates/64 + 1]uint64

// automaton matches the middle of a pattern: the part between its literal
// prefix and literal suffix, which are checked with string comparisons first.
type automaton struct {
	elems   []elem
	classes []byteSet
	// small is the same automaton in one machine word, when it fits. It
	// is built at the first match (bits), not at compile: its tables are
	// 4 KiB a pattern, and most of a policy's patterns are rejected by
	// their literal prefix or suffix before the automaton runs, so
	// building every one made loading the default policy cost
	// milliseconds at every start (docs/kernel.md, "Start-up").
	smallOnce sync.Once
	small     *bitNFA
}

// bits returns the word-sized automaton, building it once; nil when the
// automaton does not fit one.
func (a *automaton) bits() *bitNFA {
	a.smallOnce.Do(func() { a.small = newBitNFA(a) })
	return a.small
}

// bitNFA runs an automaton of fewer than 64 states with the state set in
// one word: a byte costs a table look-up, a shift and a short closure,
// instead of a walk over the set.
type bitNFA struct {
	adv    [256]uint64 // states that consume the byte and advance
	loop   [256]uint64 // star states that consume the byte and stay
	skip1  uint64      // states with an epsilon edge to the next (stars, eps)
	skip3  uint64      // eps states, whose extra edge jumps over `**/`
	accept uint64
}

func newBitNFA(a *automaton) *bitNFA {
	n := len(a.elems)
	if n >= 63 {
		return nil
	}
	b := &bitNFA{accept: 1 << uint(n)}
	for i := range a.elems {
		e := &a.elems[i]
		bit := uint64(1) << uint(i)
		for c := 0; c < 256; c++ {
			switch e.next(a.classes, i, byte(c)) {
			case i + 1:
				b.adv[c] |= bit
			case i:
				b.loop[c] |= bit
			}
		}
		switch e.kind {
		case elStar, elDStar:
			b.skip1 |= bit
		case elEps:
			b.skip1 |= bit
			if int(e.skip) != i+3 {
				return nil // not a shape this encoding knows
			}
			b.skip3 |= bit
		}
	}
	return b
}

func (b *bitNFA) closure(x uint64) uint64 {
	for {
		y := x | (x&b.skip1)<<1 | (x&b.skip3)<<3
		if y == x {
			return x
		}
		x = y
	}
}

func (b *bitNFA) match(v string) bool {
	cur := b.closure(1)
	for i := 0; i < len(v); i++ {
		c := v[i]
		cur = (cur&b.adv[c])<<1 | cur&b.loop[c]
		if cur == 0 {
			return false
		}
		cur = b.closure(cur)
	}
	return cur&b.accept != 0
}

// next is the state element i (e) moves to on byte c: i+1 when it
// consumes c and advances, i when a star consumes c and stays, -1 when c
// does not fit. An epsilon element consumes nothing.
func (e *elem) next(classes []byteSet, i int, c byte) int {
	switch e.kind {
	case elLit:
		if c == e.c {
			return i + 1
		}
	case elAny1:
		if c != '/' {
			return i + 1
		}
	case elClass:
		if c != '/' && classes[e.class].has(c) {
			return i + 1
		}
	case elStar:
		if c != '/' {
			return i
		}
	case elDStar:
		return i
	}
	return -1
}

// addClosure adds state i to s with every state reachable from it
// without consuming a byte: past stars (which may match nothing) and
// along epsilon edges.
func addClosure(elems []elem, s []uint64, i int) {
	for {
		if has(s, i) {
			return
		}
		set(s, i)
		if i >= len(elems) {
			return
		}
		e := &elems[i]
		if e.kind == elEps {
			addClosure(elems, s, int(e.skip))
		} else if e.kind != elStar && e.kind != elDStar {
			return
		}
		i++ // a star may match nothing
	}
}

// stepStates adds to dst the states that cur reaches by consuming c and
// reports whether there are any.
func stepStates(elems []elem, classes []byteSet, dst, cur []uint64, c byte) bool {
	any := false
	n := len(elems)
	for w, word := range cur {
		for word != 0 {
			b := word & -word
			word ^= b
			i := w*64 + bits.TrailingZeros64(b)
			if i >= n {
				continue
			}
			if to := elems[i].next(classes, i, c); to >= 0 {
				addClosure(elems, dst, to)
				any = true
			}
		}
	}
	return any
}

func has(s []uint64, i int) bool { return s[i>>6]&(1<<(uint(i)&63)) != 0 }
func set(s []uint64, i int)      { s[i>>6] |= 1 << (uint(i) & 63) }

func (a *automaton) match(v string) bool {
	if b := a.bits(); b != nil {
		return b.match(v)
	}
	var cur, next stateSet
	addClosure(a.elems, cur[:], 0)
	for j := 0; j < len(v); j++ {
		next = stateSet{}
		if !stepStates(a.elems, a.classes, next[:], cur[:], v[j]) {
			return false
		}
		cur = next
	}
	return has(cur[:], len(a.elems))
}

// globMatcher is one compiled glob: literal prefix and suffix checked
// first, the automaton only on what lies between.
type globMatcher struct {
	prefix, suffix string
	mid            *automaton // nil when the pattern is literal
	fast           midKind    // a middle simple enough to skip the automaton
	// must is the longest run of literal bytes every match of the middle
	// contains (`.git/hooks/` in `**/.git/hooks/?**`): a value without it
	// is rejected by a substring search before the automaton runs.
	must string
}

// midKind names middles that need no automaton: they are most patterns
// (`X/**`, `*.ext`, `X/*`), and the automaton costs ~20 ns per byte.
type midKind uint8

const (
	midAutomaton midKind = iota
	midAnything          // only `**`: matches any string
	midNoSlash           // only `*`: matches any string without '/'
)

func (g *globMatcher) match(v string) bool {
	if len(v) < len(g.prefix)+len(g.suffix) ||
		v[:len(g.prefix)] != g.prefix ||
		v[len(v)-len(g.suffix):] != g.suffix {
		return false
	}
	if g.mid == nil {
		return len(v) == len(g.prefix)+len(g.suffix)
	}
	mid := v[len(g.prefix) : len(v)-len(g.suffix)]
	switch g.fast {
	case midAnything:
		return true
	case midNoSlash:
		return strings.IndexByte(mid, '/') < 0
	}
	if g.must != "" && !strings.Contains(mid, g.must) {
		return false
	}
	return g.mid.match(mid)
}

// specificity orders rules: exact, then more literal characters, then
// fewer wildcards, then longer pattern. Declaration order breaks the
// remaining ties and is kept beside it.
type specificity struct {
	exact     bool
	literals  int
	wildcards int
	length    int
}

// moreSpecific reports whether a beats b (strictly).
func (a specificity) moreSpecific(b specificity) bool {
	if a.exact != b.exact {
		return a.exact
	}
	if a.literals != b.literals {
		return a.literals > b.literals
	}
	if a.wildcards != b.wildcards {
		return a.wildcards < b.wildcards
	}
	return a.length > b.length
}

// pathPattern is a compiled path-surface pattern.
type pathPattern struct {
	expanded string
	exact    bool // no wildcard: compared by equality (full paths only)
	basename bool // no '/': matched against the last component
	// anyValue is the pattern `*` (or `**`): it matches every value,
	// relative ones included.
	anyValue bool
	main     globMatcher
	self     *globMatcher // `X/**` also matches X
	spec     specificity

	// The whole-pattern automata DecideMove follows beneath a moved
	// directory, built when first needed.
	moveOnce sync.Once
	moveNFAs []*moveNFA
}

var errBraces = errors.New("{a,b} alternatives are not supported: write one rule per alternative (or escape the brace as \\{)")

// compilePathPattern compiles an already-expanded path pattern.
func compilePathPattern(p string) (*pathPattern, error) {
	if p == "" {
		return nil, errors.New("empty pattern")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return nil, errors.New("pattern contains a NUL byte")
	}
	pp := &pathPattern{expanded: p, basename: !strings.Contains(p, "/")}
	if p == "*" || p == "**" {
		pp.anyValue = true
	}
	m, spec, err := compileGlob(p)
	if err != nil {
		return nil, err
	}
	pp.main = m
	pp.spec = spec
	pp.exact = m.mid == nil && !pp.basename
	pp.spec.exact = pp.exact
	if !pp.basename && strings.HasSuffix(p, "/**") && !strings.HasSuffix(p, `\/**`) && len(p) > 3 {
		self, _, err := compileGlob(p[:len(p)-3])
		if err != nil {
			return nil, err
		}
		pp.self = &self
	}
	return pp, nil
}

// compileGlob turns a pattern into a globMatcher and measures it.
func compileGlob(p string) (globMatcher, specificity, error) {
	elems, classes, spec, anchor, err := parseGlob(p)
	if err != nil {
		return globMatcher{}, spec, err
	}
	// Peel literal prefix and suffix off so most values are rejected by a
	// string comparison.
	lo := 0
	for lo < len(elems) && elems[lo].kind == elLit && lo != anchor {
		lo++
	}
	hi := len(elems)
	for hi > lo && elems[hi-1].kind == elLit && hi-1 != anchor {
		hi--
	}
	var g globMatcher
	g.prefix = litString(elems[:lo])
	g.suffix = litString(elems[hi:])
	if lo == hi {
		return g, spec, nil
	}
	mid := elems[lo:hi]
	if len(mid) >= maxPatternStates {
		return globMatcher{}, spec, fmt.Errorf("pattern too complex: at most %d wildcard-bearing characters", maxPatternStates-1)
	}
	out := make([]elem, len(mid))
	copy(out, mid)
	for k := range out {
		if out[k].skip != 0 {
			out[k].skip -= int32(lo)
		}
	}
	g.mid = &automaton{elems: out, classes: classes}
	g.must = mandatoryLiteral(out)
	if len(out) == 1 {
		switch out[0].kind {
		case elDStar:
			g.fast = midAnything
		case elStar:
			g.fast = midNoSlash
		}
	}
	return g, spec, nil
}

// parseGlob reads a pattern into automaton elements for the whole
// pattern, its classes and its specificity. anchor is the index of a
// '/' that ends a `**/` group (-1 without one): it must stay in the
// automaton, since the group's skip edge jumps to just after it.
func parseGlob(p string) (elems []elem, classes []byteSet, spec specificity, anchor int, err error) {
	spec = specificity{length: len(p)}
	anchor = -1
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '\\':
			if i+1 == len(p) {
				return nil, nil, spec, anchor, errors.New("pattern ends with a lone backslash")
			}
			i++
			elems = append(elems, elem{kind: elLit, c: p[i]})
			spec.literals++
		case '{', '}':
			return nil, nil, spec, anchor, errBraces
		case '?':
			elems = append(elems, elem{kind: elAny1})
			spec.wildcards++
		case '*':
			if i+1 < len(p) && p[i+1] == '*' {
				atBoundary := i == 0 || p[i-1] == '/'
				for i+1 < len(p) && p[i+1] == '*' {
					i++
				}
				// `**` counts as two wildcards: it is broader than `*`.
				spec.wildcards += 2
				if atBoundary && i+1 < len(p) && p[i+1] == '/' {
					// `**/`: optional as a whole.
					elems = append(elems, elem{kind: elEps, skip: int32(len(elems) + 3)}, elem{kind: elDStar})
					i++
					elems = append(elems, elem{kind: elLit, c: '/'})
					anchor = len(elems) - 1
					continue
				}
				elems = append(elems, elem{kind: elDStar})
				continue
			}
			elems = append(elems, elem{kind: elStar})
			spec.wildcards++
		case '[':
			set, n, err := parseClass(p[i:])
			if err != nil {
				return nil, nil, spec, anchor, err
			}
			if len(classes) >= 255 {
				return nil, nil, spec, anchor, errors.New("too many [...] classes in one pattern")
			}
			classes = append(classes, set)
			elems = append(elems, elem{kind: elClass, class: uint8(len(classes) - 1)})
			spec.wildcards++
			i += n - 1
		default:
			elems = append(elems, elem{kind: elLit, c: c})
			spec.literals++
		}
	}
	return elems, classes, spec, anchor, nil
}

// mandatoryLiteral returns the longest run of literal elements that every
// match passes through in order. The '/' of a `**/` group is skipped by
// the group's epsilon edge, so it breaks a run.
func mandatoryLiteral(es []elem) string {
	best, cur := "", []byte(nil)
	optional := -1 // index of the '/' a `**/` group may skip
	for i, e := range es {
		if e.kind == elEps {
			optional = int(e.skip) - 1
		}
		if e.kind == elLit && i != optional {
			cur = append(cur, e.c)
			if len(cur) > len(best) {
				best = string(cur)
			}
			continue
		}
		cur = cur[:0]
	}
	return best
}

func litString(es []elem) string {
	b := make([]byte, len(es))
	for i, e := range es {
		b[i] = e.c
	}
	return string(b)
}

// parseClass reads a [...] class at the start of s and returns its set
// and length in bytes.
func parseClass(s string) (byteSet, int, error) {
	var set byteSet
	i := 1
	neg := false
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		neg = true
		i++
	}
	first := true
	for {
		if i >= len(s) {
			return set, 0, errors.New("unterminated [ character class")
		}
		c := s[i]
		if c == ']' && !first {
			i++
			break
		}
		first = false
		if c == '\\' {
			i++
			if i >= len(s) {
				return set, 0, errors.New("unterminated [ character class")
			}
			c = s[i]
		}
		if c >= 0x80 {
			return set, 0, errors.New("non-ASCII characters in a [...] class are not supported")
		}
		if c == '/' {
			return set, 0, errors.New("'/' cannot appear in a [...] class")
		}
		lo, hi := c, c
		if i+2 < len(s) && s[i+1] == '-' && s[i+2] != ']' {
			hi = s[i+2]
			if hi == '\\' && i+3 < len(s) {
				hi = s[i+3]
				i++
			}
			if hi >= 0x80 {
				return set, 0, errors.New("non-ASCII characters in a [...] class are not supported")
			}
			if hi < lo {
				return set, 0, fmt.Errorf("bad range %c-%c in [...] class", lo, hi)
			}
			i += 2
		}
		for x := int(lo); x <= int(hi); x++ {
			set.add(byte(x))
		}
		i++
	}
	if neg {
		for w := range set {
			set[w] = ^set[w]
		}
	}
	return set, i, nil
}

// match reports whether the path pattern matches value. Values that are
// not absolute match only basename patterns (and `*`): a relative path
// cannot be placed under a full-path rule without guessing.
func (pp *pathPattern) match(v string) bool {
	if pp.anyValue {
		return true
	}
	if pp.basename {
		return pp.main.match(lastComponent(v))
	}
	if len(v) == 0 || v[0] != '/' {
		return false
	}
	if pp.main.match(v) {
		return true
	}
	return pp.self != nil && pp.self.match(v)
}

func lastComponent(v string) string {
	for len(v) > 1 && v[len(v)-1] == '/' {
		v = v[:len(v)-1]
	}
	if i := strings.LastIndexByte(v, '/'); i >= 0 {
		return v[i+1:]
	}
	return v
}

// bashPattern is a compiled command-line pattern: `*` matches any run of
// characters (spaces and '/' included); `\*` is a literal star and `\\` a
// literal backslash; every other character is literal. A trailing ` *`
// also matches an empty rest, so `git push *` matches `git push`.
type bashPattern struct {
	segs  []string // literal pieces between stars
	short []string // segs for the pattern without its trailing " *", or nil
	spec  specificity
	// opt is the pattern read as operands and options, which matches
	// a command's option readings (shell.IsOptionReading); nil for a
	// pattern that is not a run of plain words.
	opt *shell.CommandPattern
}

func compileBashPattern(p string) (*bashPattern, error) {
	if p == "" {
		return nil, errors.New("empty pattern")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return nil, errors.New("pattern contains a NUL byte")
	}
	bp := &bashPattern{spec: specificity{length: len(p)}}
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '\\' && i+1 < len(p) && (p[i+1] == '*' || p[i+1] == '\\') {
			i++
			cur.WriteByte(p[i])
			bp.spec.literals++
			continue
		}
		if c == '*' {
			bp.segs = append(bp.segs, cur.String())
			cur.Reset()
			bp.spec.wildcards++
			continue
		}
		cur.WriteByte(c)
		bp.spec.literals++
	}
	bp.segs = append(bp.segs, cur.String())
	bp.spec.exact = len(bp.segs) == 1
	bp.opt = shell.CompileCommandPattern(p)
	if n := len(bp.segs); n >= 2 && bp.segs[n-1] == "" && strings.HasSuffix(bp.segs[n-2], " ") && !strings.HasSuffix(p, `\*`) {
		short := append([]string(nil), bp.segs[:n-1]...)
		short[n-2] = strings.TrimSuffix(short[n-2], " ")
		bp.short = short
	}
	return bp, nil
}

func (bp *bashPattern) match(v string) bool {
	if shell.IsOptionReading(v) {
		return bp.opt != nil && bp.opt.Match(v)
	}
	if matchSegs(bp.segs, v) {
		return true
	}
	return bp.short != nil && matchSegs(bp.short, v)
}

// matchSegs matches literal pieces separated by stars (shell.MatchSegs).
func matchSegs(segs []string, v string) bool { return shell.MatchSegs(segs, v) }
