package engine

import (
	"sort"
	"strconv"
	"strings"
)

// MoveKind is the operation that gives an object a new name.
type MoveKind uint8

const (
	MoveInvalid MoveKind = iota
	// MoveRename is rename(From, To): the object leaves From and appears
	// at To; both names are written.
	MoveRename
	// MoveExchange is renameat2(RENAME_EXCHANGE): the objects at From
	// and To swap names; a rename each way.
	MoveExchange
	// MoveLink is link(From, To): the file at From gets a second name,
	// To. From is unchanged; To is written. (Directories cannot be
	// hard-linked.)
	MoveLink
	// MoveSymlink is symlink(target, To) with From the target resolved to
	// an absolute path: To is written, and every later use of To/p reaches
	// From/p — by permwrap judged at From/p, by anyone outside it later
	// read as To/p.
	MoveSymlink
)

var moveNames = [...]string{"invalid", "rename", "exchange", "link", "symlink"}

func (k MoveKind) String() string { return enumName(moveNames[:], int(k), "move") }

// Move is one rename, exchange, link or symlink for DecideMove. Paths are
// absolute and cleaned, as for DecidePath.
type Move struct {
	Kind     MoveKind
	From, To string
	// FromDir says the object at From is a directory (for a symlink: the
	// target is one, may become one, or does not exist yet — pass true
	// unless it is known to be something else). ToDir is the same for the
	// object at To, and matters only for an exchange.
	FromDir, ToDir bool
	// FromSocket says the object at From is a Unix socket file (ToSocket:
	// the object at To, for an exchange): a connection to it is judged on
	// the net surface by its path (`unix:PATH`), and that answer must not
	// become looser at its new name either.
	FromSocket, ToSocket bool
}

func (m Move) String() string { return m.Kind.String() + " " + m.From + " -> " + m.To }

// The search DecideMove makes beneath a directory is bounded in states
// visited, in automaton steps taken (a state costs one step per
// automaton per byte class) and in the size of the automata it follows;
// past any bound the answer is the strictest anything beneath could get.
// Ordinary policies stay far below (the default: a few dozen states and
// automata); the bounds keep a huge or hostile policy from stalling a
// rename. (Variables so that a test can exhaust them.)
var (
	maxMoveStates = 1 << 15
	maxMoveSteps  = 1 << 24
	maxMoveElems  = 1 << 13
)

// DecideMove judges a rename, exchange, link or symlink as a whole, so
// that a new name never carries an object past a rule. It answers the
// strictest of:
//
//   - the names: a write of each name the call changes (From and To for
//     a rename or exchange, To for a link or symlink);
//   - Landlock's "refer" principle on the names: for a rename, exchange
//     or link, what the policy refuses (asks or denies) for reading,
//     writing or executing at From must not become allowed at To — the
//     refusing answer at From is the result;
//   - a Unix socket file carries its `unix:` answer on the net surface:
//     a rename, exchange or link may not make a connection to it looser
//     (moving the SSH agent's socket out of /tmp/ssh-*/ asks as
//     connecting to it would);
//   - for a directory (and any symlink target), every path beneath:
//     writes beneath From and To, and refer, at each From/p, To/p whose
//     matching rules differ (`unix:` rules included: anything beneath
//     may be a socket). Where the same rules match From/p and To/p
//     for every p, moving the tree changes no decision and nothing
//     beneath is judged: `mv build build.old` stays silent, while moving
//     `.git` aside (or back) meets `**/.git/hooks/?**`. The path named
//     in the result's Check is the shortest such place (e.g.
//     `/w/.git/hooks/a`).
//
// A symlink moves nothing: every access through it is judged at the
// target's own path, so creating one is a write of the link's own name.
// One thing more counts beneath a directory target: the link makes what
// lies at From/p appear at To/p to anyone outside permwrap later (git
// running hooks, a login reading autostart entries). Where writing To/p
// is refused (asked or denied) but writing From/p is looser, the link
// would let the tree put there, without that answer, what the policy
// guards at To/p (`ln -s /tmp/x ~/.config/autostart`, then
// `/tmp/x/evil.desktop`): the answer at To/p is the result. A link
// between places the policy treats alike (`ln -s /usr/lib ./lib`,
// `ln -s / /tmp/root`) asks nothing.
//
// Content rules apply as if the moved file looked secret; when that
// changes the answer, DependsOnContent is set and DecideMoveContent gives
// the final answer. The search beneath a directory is exact (it explores
// every state the rules' automata can reach from the two names) within
// maxMoveStates; past that it answers the strictest action anything
// beneath From or To could get.
//
// The supervisor calls it for rename(at)(2) (MoveRename, or MoveExchange
// with RENAME_EXCHANGE), link(at) (MoveLink) and symlink(at) (MoveSymlink,
// From being the target resolved against the link's directory), instead
// of judging the names with DecidePath: the result covers the names too.
func (p *Policy) DecideMove(m Move) Result {
	r, content := p.decideMove(m, assumeSecret)
	if !content {
		return r
	}
	plain, _ := p.decideMove(m, notSecret)
	return bothModes(r, plain)
}

// DecideMoveContent is DecideMove once the caller knows whether the
// moved file looks secret (LooksSecret on the content of the object at
// From; for an exchange, true if either object does). The rules of
// DecidePathContent apply: a directory is not secret, an unreadable file
// is.
func (p *Policy) DecideMoveContent(m Move, secret bool) Result {
	mode := notSecret
	if secret {
		mode = assumeSecret
	}
	r, _ := p.decideMove(m, mode)
	return r
}

// moveVerdict collects the strictest answer of a move.
type moveVerdict struct {
	best    Result
	have    bool
	content bool
}

func (v *moveVerdict) add(r Result) {
	if !v.have || r.Action > v.best.Action || r.Action == v.best.Action && r.HumanOnly && !v.best.HumanOnly {
		v.best, v.have = r, true
	}
}

func (p *Policy) decideMove(m Move, mode contentMode) (Result, bool) {
	if m.Kind == MoveInvalid || m.Kind > MoveSymlink || !strings.HasPrefix(m.From, "/") || !strings.HasPrefix(m.To, "/") {
		return Result{Action: Deny, Check: Check{SurfaceWrite, m.To}, Layer: LayerBuiltin,
			Rule: Rule{Surface: SurfaceWrite, Action: Deny, Origin: OriginBuiltin, Reason: "a move that cannot be judged: " + m.String()}}, false
	}
	var v moveVerdict
	decide := func(a Access, path string) Result {
		var buf [4]Check
		var r Result
		v.content = p.decide(pathChecks(&buf, a, path), mode, &r) || v.content
		return r
	}
	// The names.
	switch m.Kind {
	case MoveRename, MoveExchange:
		v.add(decide(AccessWrite, m.From))
		v.add(decide(AccessWrite, m.To))
	default:
		v.add(decide(AccessWrite, m.To))
	}
	refer := func(from, to string, kinds Access) {
		for _, a := range []Access{AccessRead, AccessWrite, AccessExec} {
			if kinds&a == 0 {
				continue
			}
			before := decide(a, from)
			if after := decide(a, to); after.Action < before.Action {
				v.add(before)
			}
		}
	}
	switch m.Kind {
	case MoveRename:
		refer(m.From, m.To, AccessRead|AccessExec) // a write at From is judged above
	case MoveExchange:
		refer(m.From, m.To, AccessRead|AccessExec)
		refer(m.To, m.From, AccessRead|AccessExec)
	case MoveLink:
		refer(m.From, m.To, AccessRead|AccessWrite|AccessExec)
	}
	if m.Kind != MoveSymlink { // a connect through a symlink is judged at its target
		if m.FromSocket {
			v.add(p.referUnix(m.From, m.To))
		}
		if m.Kind == MoveExchange && m.ToSocket {
			v.add(p.referUnix(m.To, m.From))
		}
	}
	// Beneath.
	if v.best.Action < Deny {
		switch m.Kind {
		case MoveRename:
			if m.FromDir {
				p.beneath(m.From, m.To, true, &v)
			}
		case MoveExchange:
			if m.FromDir {
				p.beneath(m.From, m.To, true, &v)
			}
			if m.ToDir {
				p.beneath(m.To, m.From, true, &v)
			}
		case MoveSymlink:
			if m.FromDir {
				p.beneath(m.From, m.To, false, &v)
			}
		}
	}
	return v.best, v.content
}

// unixResult is the answer for connecting to a Unix socket at path.
func (p *Policy) unixResult(path string) Result {
	return p.evaluate(Check{SurfaceNet, "unix:" + path}, assumeSecret).Result
}

// referUnix is the refer check on the net surface for a socket moving
// from one name to another: the answer at from when the new name would
// be looser, else an allow that adds nothing.
func (p *Policy) referUnix(from, to string) Result {
	before := p.unixResult(from)
	if after := p.unixResult(to); after.Action < before.Action {
		return before
	}
	return Result{Action: Allow}
}

// beneath judges every path beneath from and to (see DecideMove). With
// rename set, writes beneath both names and refer count; otherwise (a
// symlink, where from is the target) a write beneath to that is refused
// where the same write beneath from is looser.
func (p *Policy) beneath(from, to string, rename bool, v *moveVerdict) {
	s := newMoveSearch(p, from, to, !rename)
	if s == nil || s.done(v.best) {
		return // the same rules match beneath both, or nothing can be stricter
	}
	if s.tooBig {
		v.add(s.strictest(to))
		return
	}
	// What lies beneath has content nobody has looked at: content rules
	// apply as for a secret file, and the answer does not wait for a look.
	decide := func(a Access, path string) Result {
		var buf [4]Check
		var r Result
		p.decide(pathChecks(&buf, a, path), assumeSecret, &r)
		return r
	}
	// A symlink's search must often prove a negative (no place beneath
	// is guarded at the link and looser at the target), visiting every
	// state: what it found from a pair of starting states is kept, and a
	// link between the same two areas asks nothing of the search again
	// (or, where it found a place, judges that place for this link).
	var key string
	var cached *linkSearch
	if !rename {
		key = s.key()
		if c, ok := p.linkSearches.Load(key); ok && c.(*linkSearch).session == p.session.Load() {
			cached = c.(*linkSearch)
			if cached.witness == "" {
				return
			}
		}
	}
	witness := ""
	judge := func(sub string) bool {
		f, t := from+"/"+sub, to+"/"+sub
		if rename {
			v.add(decide(AccessWrite, f))
			v.add(decide(AccessWrite, t))
			for _, a := range []Access{AccessRead, AccessExec} {
				before := decide(a, f)
				if after := decide(a, t); after.Action < before.Action {
					v.add(before)
				}
			}
			v.add(p.referUnix(f, t))
		} else if at := decide(AccessWrite, t); at.Action > decide(AccessWrite, f).Action {
			v.add(at)
			if witness == "" {
				witness = sub
			}
		}
		return s.done(v.best)
	}
	if cached != nil && judge(cached.witness) {
		return // the place the same search found before, judged again here
	}
	// First each rule on its own: its shortest suffix where it matches on
	// one side only. These are real places, judged like any other, and
	// usually reach the strictest possible answer at once. Then the
	// search over all rules together, or its bound.
	if s.targeted(judge) || s.explore(judge) {
		if !rename {
			p.rememberLinkSearch(key, witness)
		}
		return
	}
	v.add(s.strictest(to))
}

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

// moveNFA is a whole pattern as an automaton over the whole value
// (literal prefix and suffix included), for the search beneath a moved
// directory. It is built once per pattern, when first needed.
type moveNFA struct {
	elems    []elem
	classes  []byteSet
	words    int
	basename bool     // matches the last component: restarts at each '/'
	live     []uint64 // states from which the accepting state is reachable
}

func newMoveNFA(pattern string, basename bool) *moveNFA {
	elems, classes, _, _, err := parseGlob(pattern)
	if err != nil {
		return nil // compiled before, so it does not happen
	}
	a := &moveNFA{elems: elems, classes: classes, words: (len(elems)+1)/64 + 1, basename: basename}
	n := len(elems)
	a.live = make([]uint64, a.words)
	set(a.live, n)
	// Edges go forward only (and stars loop), so one backward pass finds
	// every state that can still reach the end.
	for i := n - 1; i >= 0; i-- {
		e := &elems[i]
		ok := false
		switch e.kind {
		case elEps:
			ok = has(a.live, i+1) || has(a.live, int(e.skip))
		case elClass:
			c := a.classes[e.class]
			ok = has(a.live, i+1) && classUsable(&c)
		default:
			ok = has(a.live, i+1)
		}
		if ok {
			set(a.live, i)
		}
	}
	return a
}

func classUsable(c *byteSet) bool {
	for b := 1; b < 256; b++ {
		if b != '/' && c.has(byte(b)) {
			return true
		}
	}
	return false
}

func (a *moveNFA) start() []uint64 {
	s := make([]uint64, a.words)
	addClosure(a.elems, s, 0)
	return s
}

// stepInto writes the set after consuming c into dst and reports whether
// it can still lead to a match.
func (a *moveNFA) stepInto(dst, cur []uint64, c byte) bool {
	clear(dst)
	if a.basename && c == '/' {
		addClosure(a.elems, dst, 0)
		return true
	}
	return cur != nil && stepStates(a.elems, a.classes, dst, cur, c) && a.alive(dst)
}

func (a *moveNFA) run(s string) []uint64 {
	cur, next := a.start(), make([]uint64, a.words)
	for i := 0; i < len(s); i++ {
		if !a.stepInto(next, cur, s[i]) {
			return nil
		}
		cur, next = next, cur
	}
	return cur
}

func (a *moveNFA) accepts(s []uint64) bool { return s != nil && has(s, len(a.elems)) }

func (a *moveNFA) alive(s []uint64) bool {
	for i, w := range s {
		if w&a.live[i] != 0 {
			return true
		}
	}
	return false
}

func sameSet(a, b []uint64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// moveAutomata returns the automata of a path pattern for the move
// search: the pattern itself and, for `X/**`, X. nil for a pattern that
// matches everything.
func (pp *pathPattern) moveAutomata() []*moveNFA {
	pp.moveOnce.Do(func() {
		if pp.anyValue {
			return
		}
		pp.moveNFAs = append(pp.moveNFAs, newMoveNFA(pp.expanded, pp.basename))
		if pp.self != nil {
			pp.moveNFAs = append(pp.moveNFAs, newMoveNFA(pp.expanded[:len(pp.expanded)-3], false))
		}
	})
	return pp.moveNFAs
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
		if r != nil && r.Origin == OriginHardGuard && a != Deny {
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

// byteClasses partitions the bytes 1..255 by how every automaton treats
// them and returns one readable representative per class.
func byteClasses(slots []moveSlot) []byte {
	const prefer = "abcdefghijklmnopqrstuvwxyz0123456789._-ABCDEFGHIJKLMNOPQRSTUVWXYZ/"
	var lits [256]bool
	lits['/'], lits['.'] = true, true // they shape components
	classes := false
	for _, sl := range slots {
		for _, e := range sl.a.elems {
			switch e.kind {
			case elLit:
				lits[e.c] = true
			case elClass:
				classes = true
			}
		}
	}
	if !classes {
		// Without [...] classes every byte that is no literal anywhere
		// behaves the same: one representative stands for them all.
		var out []byte
		other := byte(0)
		for b := 1; b < 256; b++ {
			if lits[b] {
				out = append(out, byte(b))
			}
		}
		for i := 0; i < len(prefer); i++ {
			if !lits[prefer[i]] {
				other = prefer[i]
				break
			}
		}
		for b := 1; other == 0 && b < 256; b++ {
			if !lits[b] {
				other = byte(b)
			}
		}
		if other != 0 {
			out = append(out, other)
		}
		return out
	}
	sigs := map[string]byte{}
	var order []string
	sig := make([]byte, 0, 64)
	bytesInOrder := []byte(prefer)
	for b := 1; b < 256; b++ {
		if strings.IndexByte(prefer, byte(b)) < 0 {
			bytesInOrder = append(bytesInOrder, byte(b))
		}
	}
	for _, c := range bytesInOrder {
		sig = sig[:0]
		sig = append(sig, b2(c == '/'), b2(c == '.'))
		for _, sl := range slots {
			for _, e := range sl.a.elems {
				switch e.kind {
				case elLit:
					sig = append(sig, b2(c == e.c))
				case elClass:
					sig = append(sig, b2(sl.a.classes[e.class].has(c)))
				}
			}
		}
		if _, ok := sigs[string(sig)]; !ok {
			k := string(sig)
			sigs[k] = c
			order = append(order, k)
		}
	}
	out := make([]byte, 0, len(order))
	for _, k := range order {
		out = append(out, sigs[k])
	}
	return out
}

func b2(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func writeSet(b *strings.Builder, s []uint64) {
	if s == nil {
		b.WriteByte(0)
		return
	}
	b.WriteByte(1)
	for _, w := range s {
		for k := 0; k < 8; k++ {
			b.WriteByte(byte(w >> (8 * k)))
		}
	}
}

// stepScratch steps cur by c into buf and returns buf, or nil for the
// empty set.
func stepScratch(a *moveNFA, buf, cur []uint64, c byte) []uint64 {
	if cur == nil && !(a.basename && c == '/') {
		return nil
	}
	if !a.stepInto(buf, cur, c) {
		return nil
	}
	return buf
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

// slotDFA is one automaton of a search followed as a DFA: its state sets
// interned (id 0 is the empty set), their acceptance, and the steps
// computed so far (-1: not yet).
type slotDFA struct {
	a       *moveNFA
	classes int
	sets    [][]uint64
	acc     []bool
	idx     map[string]int32
	next    []int32 // next[id*classes+class]
	buf     []uint64
}

func (d *slotDFA) init(a *moveNFA, classes int) {
	d.a, d.classes = a, classes
	d.idx = map[string]int32{}
	d.buf = make([]uint64, a.words)
	d.sets = [][]uint64{nil}
	d.acc = []bool{false}
	d.next = make([]int32, classes)
	for i := range d.next {
		d.next[i] = -1
	}
}

// intern returns the id of the state set st (nil: the empty set).
func (d *slotDFA) intern(st []uint64) int32 {
	if st == nil {
		return 0
	}
	var kb strings.Builder
	writeSet(&kb, st)
	k := kb.String()
	if id, ok := d.idx[k]; ok {
		return id
	}
	id := int32(len(d.sets))
	d.idx[k] = id
	d.sets = append(d.sets, append([]uint64(nil), st...))
	d.acc = append(d.acc, d.a.accepts(st))
	for range d.classes {
		d.next = append(d.next, -1)
	}
	return id
}

// step is the id after the set id reads c (class ci).
func (d *slotDFA) step(id int32, ci int, c byte) int32 {
	k := int(id)*d.classes + ci
	if n := d.next[k]; n >= 0 {
		return n
	}
	n := d.intern(stepScratch(d.a, d.buf, d.sets[id], c))
	d.next[k] = n
	return n
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

// DecideMkdir judges creating the directory path: a write of it, except
// that a directory on the way to a tree the policy lets the agent write
// in is allowed where only a catch-all would ask (`go` makes ~/.config on
// the way to ~/.config/go/telemetry/, which is allowed; so is the way to
// the workspace). An empty directory runs nothing and holds nothing, and
// whatever is put in it later is judged at its own path; a directory a
// rule names itself (`~/.ssh`, `~/.config/autostart` through
// `~/.config/autostart/**`) is judged by that rule.
func (p *Policy) DecideMkdir(path string) Result {
	r := p.DecidePath(AccessWrite, path)
	if r.Action != Ask || r.HumanOnly || !catchAll(r) {
		return r
	}
	if allow := p.allowedBeneath(path); allow != nil {
		return Result{Action: Allow, Check: r.Check, Layer: LayerBuiltin,
			Rule: Rule{Surface: SurfaceWrite, Action: Allow, Origin: OriginBuiltin,
				Reason: "a directory on the way to " + allow.Surface.String() + ":" + allow.Pattern + ", where writing is allowed"}}
	}
	return r
}

// catchAll reports whether r was decided by no rule about its value in
// particular: a surface's `*`, the universal fallback or the builtin
// answer.
func catchAll(r Result) bool {
	switch r.Layer {
	case LayerFallback, LayerBuiltin:
		return true
	case LayerPolicy, LayerProject, LayerSession:
		return r.Rule.Pattern == "*" || r.Rule.Pattern == "**"
	}
	return false
}

// allowedBeneath returns a rule that allows writing somewhere strictly
// beneath dir — its pattern's literal beginning lies beneath dir — or
// nil.
func (p *Policy) allowedBeneath(dir string) *Rule {
	prefix := strings.TrimSuffix(dir, "/") + "/"
	var found *Rule
	visit := func(r *compiledRule) {
		if found != nil || r.path == nil || r.Action != Allow || !writeRule(r) || r.path.basename || r.path.anyValue {
			return
		}
		if lit := literalPrefix(r.path.expanded); len(lit) > len(prefix) && strings.HasPrefix(lit, prefix) {
			found = &r.Rule
		}
	}
	p.eachPathRule(true, visit)
	return found
}
