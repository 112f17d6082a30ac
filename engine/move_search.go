package engine

import (
	"sort"
	"strconv"
	"strings"
)

// key names the search: the automata it follows and their starting
// states on both sides, which are all its outcome depends on (with the
// session rules, which are among the automata).
func (s *moveSearch) key() string {
	var b strings.Builder
	b.WriteByte(s.start.lex)
	for i, sl := range s.slots {
		b.WriteString(sl.pattern)
		b.WriteByte(0)
		writeSet(&b, s.start.from[i])
		writeSet(&b, s.start.to[i])
	}
	return b.String()
}

// linkSearch is what a symlink search from given starting states found:
// the first place beneath that its link would guard more strictly than
// its target ("" for none), under the session rules it was made under.
type linkSearch struct {
	session *sessionSet
	witness string
}

// maxLinkSearches bounds the symlink searches remembered.
const maxLinkSearches = 1024

// rememberLinkSearch records what a finished symlink search from the
// starting states key found, under the session rules now in force.
func (p *Policy) rememberLinkSearch(key, witness string) {
	if p.linkSearchN.Add(1) > maxLinkSearches {
		p.linkSearches.Clear()
		p.linkSearchN.Store(1)
	}
	p.linkSearches.Store(key, &linkSearch{session: p.session.Load(), witness: witness})
}

// moveSlot is one automaton followed from both names.
type moveSlot struct {
	a    *moveNFA
	rule *compiledRule // one rule using it, for the fallback answer
	// pattern names the automaton: its pattern, and which of the
	// pattern's automata it is.
	pattern string
}

// moveSearch explores the suffixes p that can follow "from/" and "to/".
type moveSearch struct {
	slots   []moveSlot
	start   moveNode
	classes []byte // one representative byte per class of bytes no automaton tells apart
	// tooBig: the automata exceed maxMoveElems and are not followed.
	tooBig bool
	// writes: only the rules a write meets are followed (a symlink's).
	writes bool
	// upper is the strictest answer any path beneath could get, and
	// upperRule a rule that gives it (nil: the builtin answer);
	// upperHuman: some rule beneath could make an ask human-only.
	upper      Action
	upperRule  *compiledRule
	upperHuman bool
}

// moveNode is where a search starts: each slot's state set after from/
// and after to/ (one shared set for basename automata, which restart at
// the '/' both names end with), and where p stands in its last
// component.
type moveNode struct {
	from, to [][]uint64
	lex      uint8
}

const (
	lexStart  uint8 = iota // p is empty or ends with '/'
	lexDot                 // the last component is "."
	lexDotDot              // the last component is ".."
	lexName                // the last component is a name
)

// movePattern is one distinct path pattern of the policy, with the
// strictest rule that uses it and its literal beginning.
type movePattern struct {
	pp   *pathPattern
	rule *compiledRule
	lit  string
}

// movePatterns lists the distinct path patterns of the fixed layers
// (hard guards, protected writes, policy, content rules), once.
func (p *Policy) movePatterns() []movePattern {
	p.moveOnce.Do(func() {
		idx := map[string]int{}
		p.eachPathRule(false, func(r *compiledRule) {
			p.moveList = addMovePattern(p.moveList, idx, r.path, r)
		})
		// Socket paths: anything beneath a moved directory may be a socket.
		p.eachUnixRule(false, func(r *compiledRule, pp *pathPattern) {
			if pp == nil || pp.anyValue {
				return
			}
			p.moveList = addMovePattern(p.moveList, idx, pp, r)
		})
	})
	return p.moveList
}

// writePatterns is movePatterns for the rules a write meets: those on
// the write and path surfaces.
func (p *Policy) writePatterns() []movePattern {
	p.writeOnce.Do(func() {
		idx := map[string]int{}
		p.eachPathRule(false, func(r *compiledRule) {
			if writeRule(r) {
				p.writeList = addMovePattern(p.writeList, idx, r.path, r)
			}
		})
	})
	return p.writeList
}

// writeRule reports whether a write can meet r.
func writeRule(r *compiledRule) bool {
	return r.Surface == SurfaceWrite || r.Surface == SurfacePath
}

// addMovePattern adds pp to list, once per distinct pattern (idx), with
// the strictest rule that uses it.
func addMovePattern(list []movePattern, idx map[string]int, pp *pathPattern, r *compiledRule) []movePattern {
	if i, ok := idx[pp.expanded]; ok {
		if r.Action > list[i].rule.Action {
			list[i].rule = r
		}
		return list
	}
	idx[pp.expanded] = len(list)
	return append(list, movePattern{pp: pp, rule: r, lit: literalPrefix(pp.expanded)})
}

// eachUnixRule visits every net rule that can match a Unix socket file:
// pp is its socket path pattern, or nil for a rule on any host (`*`,
// which Unix sockets match too). With session set, session rules too.
func (p *Policy) eachUnixRule(session bool, f func(r *compiledRule, pp *pathPattern)) {
	visit := func(l *ruleList) {
		l.each(func(r *compiledRule) {
			switch {
			case r.net == nil:
			case r.net.kind == hostAny && r.net.port == 0:
				f(r, nil)
			case unixPathPattern(r) != nil:
				f(r, unixPathPattern(r))
			}
		})
	}
	visit(&p.managed[SurfaceNet])
	visit(&p.hard[SurfaceNet])
	visit(&p.rules[SurfaceNet])
	visit(&p.baseRules[SurfaceNet])
	visit(&p.tight[SurfaceNet])
	if ss := p.session.Load(); session && ss != nil {
		visit(&ss.lists[SurfaceNet])
	}
}

// unixPathPattern is a net rule's socket path pattern (`unix:PATH`), or
// nil for any other net rule.
func unixPathPattern(r *compiledRule) *pathPattern {
	if r.net == nil || r.net.kind != hostUnix {
		return nil
	}
	return r.net.unixPath
}

// newMoveSearch returns nil when the same rules match from/p and to/p
// for every p.
//
// With writes set, only the rules a write meets are followed (a
// symlink's search).
func newMoveSearch(p *Policy, from, to string, writes bool) *moveSearch {
	s := &moveSearch{writes: writes}
	fromDir, toDir := from+"/", to+"/"
	differ := false
	elems := 0
	consider := func(mp movePattern) {
		pp := mp.pp
		if pp.anyValue || s.tooBig {
			return
		}
		if !pp.basename && !prefixCompatible(mp.lit, fromDir) && !prefixCompatible(mp.lit, toDir) {
			return // anchored elsewhere: matches nothing beneath either name
		}
		autos := pp.moveAutomata()
		for k := len(autos) - 1; k >= 0; k-- {
			// `X` before `X/**`: the targeted search then names X itself.
			a := autos[k]
			if a == nil {
				continue
			}
			if elems += len(a.elems); elems > maxMoveElems {
				s.tooBig, differ = true, true
				return
			}
			var f, t []uint64
			if !a.basename {
				f, t = a.run(fromDir), a.run(toDir)
				if f == nil && t == nil {
					continue
				}
				differ = differ || !sameSet(f, t)
			}
			s.slots = append(s.slots, moveSlot{a: a, rule: mp.rule, pattern: pp.expanded + "\x00" + strconv.Itoa(k)})
			s.start.from = append(s.start.from, f)
			s.start.to = append(s.start.to, t)
		}
	}
	patterns := p.movePatterns()
	if writes {
		patterns = p.writePatterns()
	}
	for _, mp := range patterns {
		consider(mp)
	}
	if ss := p.session.Load(); ss != nil {
		for _, r := range ss.rules {
			if r.path != nil && (!writes || writeRule(r)) {
				consider(movePattern{pp: r.path, rule: r, lit: literalPrefix(r.path.expanded)})
			}
			if writes {
				continue
			}
			if pp := unixPathPattern(r); pp != nil {
				consider(movePattern{pp: pp, rule: r, lit: literalPrefix(pp.expanded)})
			}
		}
	}
	if !differ {
		return nil
	}
	if s.tooBig {
		s.bound(p)
		return s
	}
	// Basename automata restart at the '/' both names end with.
	for i, sl := range s.slots {
		if sl.a.basename {
			s.start.from[i] = sl.a.start()
			s.start.to[i] = s.start.from[i]
		}
	}
	s.classes = byteClasses(s.slots)
	s.bound(p)
	return s
}

// bound computes the strictest answer any path beneath could get: the
// actions of the rules that can still match there, of the rules that
// match everything, and of the fallback. The search stops once it has
// found that answer (and, if a rule beneath could make an ask
// human-only, a human-only one); past its budget it answers it.
func (s *moveSearch) bound(p *Policy) {
	up := func(a Action, r *compiledRule) {
		if r != nil && (r.Origin == OriginHardGuard || r.Origin == OriginManaged) && a != Deny {
			s.upperHuman = true
		}
		if a > s.upper || a == s.upper && s.upperRule == nil && r != nil {
			s.upper, s.upperRule = a, r
		}
	}
	s.upper = Allow
	for i, sl := range s.slots {
		if s.writes && !sl.a.basename && s.start.to[i] == nil {
			// A symlink's answer is one at To/p: a rule that can match
			// only beneath From makes From/p stricter, never To/p.
			continue
		}
		up(sl.rule.Action, sl.rule)
	}
	p.eachPathRule(true, func(r *compiledRule) {
		// Too big to follow: any rule might match beneath.
		if r.path != nil && (r.path.anyValue || s.tooBig) && (!s.writes || writeRule(r)) {
			up(r.Action, r)
		}
	})
	if !s.writes {
		p.eachUnixRule(true, func(r *compiledRule, pp *pathPattern) {
			if pp == nil || pp.anyValue || s.tooBig {
				up(r.Action, r)
			}
		})
	}
	switch {
	case p.fallback != nil:
		up(p.fallback.Action, p.fallback)
	default:
		up(Ask, nil) // the builtin answer
	}
	if p.failClosed {
		up(Ask, nil)
	}
}

// done reports whether nothing beneath can make r stricter.
func (s *moveSearch) done(r Result) bool {
	return r.Action == Deny || r.Action == s.upper && (r.HumanOnly || !s.upperHuman)
}

// literalPrefix is a pattern's beginning before its first special
// character.
func literalPrefix(pattern string) string {
	if i := strings.IndexAny(pattern, `*?[\`); i >= 0 {
		return pattern[:i]
	}
	return pattern
}

// prefixCompatible reports whether a value starting with dir could match
// a pattern beginning with lit, as far as lit tells.
func prefixCompatible(lit, dir string) bool {
	n := min(len(lit), len(dir))
	return lit[:n] == dir[:n]
}

// eachPathRule visits every rule on a path surface, in every fixed layer
// and, with session set, the session rules too.
func (p *Policy) eachPathRule(session bool, f func(*compiledRule)) {
	visit := func(l *ruleList) { l.each(f) }
	for s := range p.hard {
		if Surface(s).IsPath() {
			visit(&p.managed[s])
			visit(&p.hard[s])
			visit(&p.rules[s])
			visit(&p.baseRules[s])
			visit(&p.content[s])
			visit(&p.tight[s])
		}
	}
	visit(&p.protected)
	visit(&p.self)
	if ss := p.session.Load(); session && ss != nil {
		for s := range ss.lists {
			if Surface(s).IsPath() {
				visit(&ss.lists[s])
			}
		}
	}
}

// targeted finds, for each automaton whose states differ between the
// two names, its shortest valid suffix where it matches on one side
// only, and judges it. It returns true when judge says nothing can be
// stricter.
func (s *moveSearch) targeted(judge func(sub string) bool) bool {
	// Only a rule that asks or denies can make a place stricter; the
	// smaller automata first, whose differences lie nearest.
	var idx []int
	for i, sl := range s.slots {
		if !sl.a.basename && sl.rule.Action != Allow && !sameSet(s.start.from[i], s.start.to[i]) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(x, y int) bool { return len(s.slots[idx[x]].a.elems) < len(s.slots[idx[y]].a.elems) })
	for _, i := range idx {
		if sub, ok := s.shortestDifference(i); ok && judge(sub) {
			return true
		}
	}
	return false
}

// shortestDifference searches one automaton alone, breadth-first over
// its own byte classes, for a suffix where it accepts after from/ and
// not after to/ or the other way round.
func (s *moveSearch) shortestDifference(i int) (string, bool) {
	a := s.slots[i].a
	classes := byteClasses(s.slots[i : i+1])
	type node struct {
		f, t []uint64
		sub  string
		lex  uint8
	}
	var kb strings.Builder
	key := func(n *node) string {
		kb.Reset()
		kb.WriteByte(n.lex)
		writeSet(&kb, n.f)
		writeSet(&kb, n.t)
		return kb.String()
	}
	start := node{f: s.start.from[i], t: s.start.to[i]}
	visited := map[string]bool{key(&start): true}
	queue := []node{start}
	for len(queue) > 0 && len(visited) < maxMoveStates {
		n := queue[0]
		queue = queue[1:]
		for _, c := range classes {
			lex, ok := nextLex(n.lex, c)
			if !ok {
				continue
			}
			next := node{sub: n.sub + string(c), lex: lex, f: stepScratch(a, make([]uint64, a.words), n.f, c), t: stepScratch(a, make([]uint64, a.words), n.t, c)}
			if next.f == nil && next.t == nil || sameSet(next.f, next.t) {
				continue // from here on both sides agree for this automaton
			}
			if lex == lexName && a.accepts(next.f) != a.accepts(next.t) {
				return next.sub, true
			}
			if k := key(&next); !visited[k] {
				visited[k] = true
				queue = append(queue, next)
			}
		}
	}
	return "", false
}

// nextLex follows where a suffix stands in its last component after c,
// refusing empty, "." and ".." components.
func nextLex(lex uint8, c byte) (uint8, bool) {
	switch {
	case c == '/':
		return lexStart, lex == lexName
	case c == '.' && lex == lexStart:
		return lexDot, true
	case c == '.' && lex == lexDot:
		return lexDotDot, true
	}
	return lexName, true
}

// explore searches breadth-first, so the first witnesses are the
// shortest, calling judge at every valid path beneath where the matching
// rules differ, until judge returns true. It returns false when the
// search did not finish within maxMoveStates states or maxMoveSteps
// automaton steps.
//
// Each automaton is followed as a DFA built as the search goes: its state
// sets are interned (an id each) and each (set, byte class) step is
// computed once, so a search state is a vector of ids and a step one
// lookup per automaton. A search that must visit every state (a symlink
// between two areas the policy treats alike: nothing is found, so
// nothing ends it early) stays in the milliseconds.
func (s *moveSearch) explore(judge func(sub string) bool) bool {
	n := len(s.slots)
	dfas := make([]slotDFA, n)
	// A node: lex, then per slot the id after from/p and after to/p.
	start := make([]int32, 2*n)
	for i, sl := range s.slots {
		dfas[i].init(sl.a, len(s.classes))
		start[2*i] = dfas[i].intern(s.start.from[i])
		start[2*i+1] = dfas[i].intern(s.start.to[i])
	}
	type node struct {
		lex uint8
		ids []int32
		sub string
	}
	keyOf := func(lex uint8, ids []int32, buf []byte) []byte {
		buf = append(buf[:0], lex)
		for _, id := range ids {
			buf = append(buf, byte(id), byte(id>>8), byte(id>>16), byte(id>>24))
		}
		return buf
	}
	var kb []byte
	kb = keyOf(s.start.lex, start, kb)
	visited := map[string]bool{string(kb): true}
	queue := []node{{lex: s.start.lex, ids: start}}
	next := make([]int32, 2*n)
	steps := 0
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if steps += len(s.classes) * n; steps > maxMoveSteps {
			return false
		}
		for ci, c := range s.classes {
			lex, ok := nextLex(cur.lex, c)
			if !ok {
				continue // no empty, "." or ".." components
			}
			converged, differs := true, false
			for i := range s.slots {
				d := &dfas[i]
				f := d.step(cur.ids[2*i], ci, c)
				t := f
				if !d.a.basename {
					t = d.step(cur.ids[2*i+1], ci, c)
					if f != t {
						converged = false
					}
				}
				next[2*i], next[2*i+1] = f, t
				if d.acc[f] != d.acc[t] {
					differs = true
				}
			}
			if converged {
				continue // the same rules match beneath on both sides
			}
			kb = keyOf(lex, next, kb)
			if visited[string(kb)] {
				continue
			}
			if len(visited) >= maxMoveStates {
				return false
			}
			visited[string(kb)] = true
			nd := node{lex: lex, ids: append([]int32(nil), next...), sub: cur.sub + string(c)}
			if lex == lexName && differs && judge(nd.sub) {
				return true
			}
			queue = append(queue, nd)
		}
	}
	return true
}

// strictest is the answer when the search could not finish: the
// strictest answer anything beneath could get, naming the rule that
// gives it (a builtin ask when only the fallback could).
func (s *moveSearch) strictest(to string) Result {
	c := Check{SurfaceWrite, to}
	r := s.upperRule
	if r == nil {
		return Result{Action: s.upper, Check: c, Layer: LayerBuiltin, HumanOnly: s.upperHuman,
			Rule: Rule{Surface: SurfaceWrite, Action: s.upper, Origin: OriginBuiltin, Reason: "the paths beneath this move could not be analysed within bounds"}}
	}
	rule := r.Rule
	rule.Action = s.upper
	return Result{Action: s.upper, Check: c, Rule: rule, Layer: layerOf(rule), HumanOnly: s.upperHuman && s.upper == Ask}
}
