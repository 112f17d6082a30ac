package engine

import (
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
	if !v.have || r.Stricter(v.best) {
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
