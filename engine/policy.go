package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Layer names the stage of composition that produced a Result.
type Layer uint8

const (
	LayerInvalid        Layer = iota
	LayerHardGuard            // hard-guards.jsonc permission rules
	LayerProtectedWrite       // hard-guards.jsonc protectedWrites
	LayerSession              // "allow for this session"
	LayerPolicy               // policy.jsonc (or the embedded default) and --policy scopes
	LayerFallback             // permission["*"]
	LayerBuiltin              // nothing matched: ask
	LayerProject              // an untrusted project policy, which only tightens
	LayerManaged              // the managed policy's permission rules (managed.go)
)

var layerNames = [...]string{"invalid", "hard-guard", "protected-write", "session", "policy", "fallback", "builtin", "project", "managed"}

func (l Layer) String() string { return enumName(layerNames[:], int(l), "layer") }

// Result is the answer to one or more checks.
type Result struct {
	Action Action
	Check  Check // the check that decided
	Rule   Rule  // the deciding rule (Origin==OriginBuiltin, Pattern "" when nothing matched)
	// HumanOnly marks a protectedWrites match or a hard-guard ask: only a
	// person may approve, with no session option, no automated reviewer
	// and no yolo.
	HumanOnly bool
	// Managed marks an ask of the managed policy (always with
	// HumanOnly): the managed policy's own reviewers may answer it before
	// the person; the user's reviewers never do.
	Managed bool
	Layer   Layer
	// DependsOnContent is set when the answer depends on whether the file
	// holds secret material: a `"content": "secret"` rule matched. Action
	// is then the stricter of the two possible answers, so a caller that
	// cannot look stays fail-closed. A caller that can look reads the file
	// (see LooksSecret) and asks DecidePathContent (or DecideMoveContent)
	// for the final answer.
	DependsOnContent bool
}

func (r Result) String() string {
	s := fmt.Sprintf("%s (%s by %s)", r.Action, r.Check, r.Rule)
	if r.Managed {
		s += " [managed]"
	}
	if r.HumanOnly {
		s += " [human only]"
	}
	if r.DependsOnContent {
		s += " [depends on content]"
	}
	return s
}

// Policy is a compiled, composed policy. It is safe for concurrent use:
// session rules are swapped in atomically, everything else is immutable.
type Policy struct {
	env       Env
	self      ruleList              // permwrap's own files: write denies above everything (see Protected)
	managed   [numSurfaces]ruleList // the managed policy: above everything (managed.go)
	mgd       *ManagedInfo          // nil: no managed policy
	hard      [numSurfaces]ruleList
	protected ruleList
	rules     [numSurfaces]ruleList // policy.jsonc, trusted projects, --policy scopes
	// base holds the base profile's rules (the embedded default unless
	// "extends" or --profile says otherwise); see policyRule.
	baseRules [numSurfaces]ruleList
	fallback  *compiledRule
	// tight holds untrusted project policies: their answer composes
	// most-restrictive-wins with the rest, so they can only tighten.
	tight         [numSurfaces]ruleList
	tightFallback *compiledRule
	// content holds the `"content": "secret"` rules, apart from rules so
	// that evaluating as "not secret" simply skips them.
	content    [numSurfaces]ruleList
	tightened  bool
	yolo       bool
	audit      bool
	failClosed bool
	settings   Settings
	base       string   // the base profile, "" or "none" for none
	sources    []string // files composed, for Summary
	cfg        Config   // what it was compiled from, for WithScope

	sessMu  sync.Mutex
	session atomic.Pointer[sessionSet]

	moveOnce sync.Once
	moveList []movePattern // DecideMove's view of the fixed layers
	// writeOnce, writeList: the same for the rules a write meets (the
	// write and path surfaces), what a symlink's search follows.
	writeOnce sync.Once
	writeList []movePattern
	// linkSearches: what finished symlink searches found, by their
	// starting states (a *linkSearch; beneath); linkSearchN counts them.
	linkSearches sync.Map
	linkSearchN  atomic.Int32
}

// Env returns the environment patterns were expanded with.
func (p *Policy) Env() Env { return p.env }

// GlobalFile is the user's policy.jsonc as this policy was compiled from
// it: its name and the bytes read (a copy). ok is false when there was
// none. A caller that writes the file back (the prompt's "always allow")
// compares against these bytes, not a second read.
func (p *Policy) GlobalFile() (f File, ok bool) {
	g := p.cfg.Global
	if g == nil {
		return File{}, false
	}
	return File{Name: g.Name, Data: append([]byte{}, g.Data...)}, true
}

// Settings returns the non-rule configuration. The result is a copy:
// changing it does not change the policy.
func (p *Policy) Settings() Settings {
	s := p.settings
	s.AuthorizerChain = append([]string(nil), s.AuthorizerChain...)
	s.Authorizers = make(map[string]AuthorizerSpec, len(p.settings.Authorizers))
	for k, v := range p.settings.Authorizers {
		v.Command = append([]string(nil), v.Command...)
		v.Remote = v.Remote.clone()
		s.Authorizers[k] = v
	}
	s.ModelDelegation.AllowedSurfaces = append([]Surface(nil), s.ModelDelegation.AllowedSurfaces...)
	s.ModelDelegation.ExcludedSurfaces = append([]Surface(nil), s.ModelDelegation.ExcludedSurfaces...)
	s.TypoPaths = append([]TypoPath(nil), s.TypoPaths...)
	return s
}

// AuditMode reports whether audit mode is on.
func (p *Policy) AuditMode() bool { return p.audit }

// Audit is the last stage of composition in audit mode (--audit): an
// answer of ask or deny becomes allow, with the deciding rule's Origin
// set to OriginAudit and its Action kept as what the policy chose, so the
// review log records it as would_ask or would_deny. Hard guards,
// protected writes, permwrap's protected paths, human-only asks and the
// refusals of what could not be decided stay as they are. Without audit
// mode r is returned unchanged. The supervisor applies it once, to the
// composed answer of a request (every path and spelling already
// combined), so the log names what would really have been refused.
func (p *Policy) Audit(r Result) Result {
	if !p.audit || r.Action == Allow || r.HumanOnly {
		return r
	}
	switch r.Layer {
	case LayerPolicy, LayerProject, LayerFallback:
	case LayerBuiltin:
		if r.Action != Ask {
			return r // could not be decided: never fail open, not even in audit
		}
	default:
		return r // hard guards, protected writes and paths, unknown layers
	}
	r.Rule.Action = r.Action
	r.Rule.Origin = OriginAudit
	r.Action = Allow
	return r
}

// evaluation is an internal Result with what EvaluateAny ranks by.
type evaluation struct {
	Result
	matched bool // some rule of the surface matched (the surface did not abstain)
	spec    specificity
	order   int
	cr      *compiledRule // the deciding rule, nil for builtin answers
	// content: a content rule took part in the answer (it decided, or it
	// was skipped), so the answer in the other content mode may differ.
	content bool
}

// contentMode says how content rules are treated by one evaluation.
type contentMode uint8

const (
	// assumeSecret applies content rules as if the file's content looked
	// secret: the answer for a caller that does not look.
	assumeSecret contentMode = iota
	// notSecret skips content rules: the file was read and holds nothing
	// secret-looking.
	notSecret
)

func (p *Policy) ruleResult(c Check, r *compiledRule, a Action, layer Layer) evaluation {
	rule := r.Rule
	rule.Action = a
	return evaluation{Result: Result{Action: a, Check: c, Rule: rule, Layer: layer}, matched: true, spec: r.spec, order: r.order, cr: r}
}

// lower applies yolo and fail-closed to an answer from the policy layers,
// the fallback or the builtin ask. Fail-closed wins over yolo: a scope
// that could not be read may have held denies nobody can see, so a
// person must look even in yolo mode.
func (p *Policy) lower(e evaluation) evaluation {
	switch {
	case e.Action == Allow && p.failClosed:
		e.Action, e.Rule.Action, e.Rule.Origin = Ask, Ask, OriginFailClosed
	case e.Action == Ask && p.yolo:
		e.Action, e.Rule.Action, e.Rule.Origin = Allow, Allow, OriginYolo
	}
	return e
}

// policyRule is the policy layer's rule for v. The user's rules
// (policy.jsonc, trusted project policies, --policy scopes) and the base
// profile's compete by specificity, as if written in one file, except in
// one way: a user rule that matches and is at least as restrictive as the
// base profile's answer wins even when less specific, so a tweak that
// tightens is never a silent no-op ("DENIED*": deny still denies inside the
// workspace the default allows with "${WORKSPACE}/**"). A catch-all ("*")
// is a fallback, not a tweak: it competes by specificity only. A user rule
// that loosens wins only where it is at least as specific, so a broad
// allow ("~/**") cannot lift the default's narrower asks (~/.bashrc).
func (p *Policy) policyRule(s Surface, v string) *compiledRule {
	u := p.rules[s].find(v)
	if p.baseRules[s].n == 0 {
		return u
	}
	b := p.baseRules[s].find(v)
	switch {
	case b == nil:
		return u
	case u == nil:
		return b
	case u.Action >= b.Action && !u.catchAll():
		return u
	case u.namesOptions() || b.namesOptions():
		// Command rules that name options: the less strict one wins
		// only by naming more (docs/bash-rules.md §2.2); `git push
		// origin *` in policy.jsonc does not lift the default profile's
		// ask for `git push --force*`.
		if u.bash != nil && b.bash != nil && cmdCompare(u, b) > 0 {
			return u
		}
		return b
	case u.beats(b):
		return u
	}
	return b
}

// catchAll reports whether the rule's pattern matches every value.
func (r *compiledRule) catchAll() bool {
	switch r.Pattern {
	case "*", "**", "/**":
		return true
	}
	return false
}

// evaluate runs the composition for one check. See docs/policy.md.
func (p *Policy) evaluate(c Check, mode contentMode) (e evaluation) {
	s := c.Surface
	if s == SurfaceInvalid || s >= numSurfaces {
		// Could not decide: never fail open.
		return evaluation{Result: Result{Action: Deny, Check: c, Layer: LayerBuiltin,
			Rule: Rule{Surface: s, Action: Deny, Origin: OriginBuiltin, Reason: "invalid surface"}}, matched: true}
	}
	if p.mgd == nil {
		return p.evaluateBelow(c, mode)
	}
	return p.evaluateManaged(c, mode)
}

// evaluateBelow is the composition beneath the managed policy.
func (p *Policy) evaluateBelow(c Check, mode contentMode) (e evaluation) {
	s := c.Surface
	v := c.Value
	if s == SurfaceWrite {
		if r := p.self.find(v); r != nil {
			return p.ruleResult(c, r, Deny, LayerHardGuard)
		}
	}
	var hardAsk *compiledRule
	if r := p.hard[s].find(v); r != nil {
		switch r.Action {
		case Deny:
			return p.ruleResult(c, r, Deny, LayerHardGuard)
		case Ask:
			hardAsk = r
		}
		// A hard-guard allow means only "not blocked here".
	}
	if s == SurfaceWrite {
		if r := p.protected.find(v); r != nil {
			e = p.ruleResult(c, r, Ask, LayerProtectedWrite)
			e.HumanOnly = true
			return e
		}
	}
	if hardAsk != nil {
		e = p.ruleResult(c, hardAsk, Ask, LayerHardGuard)
		e.HumanOnly = true
		return e
	}
	pol := p.policyRule(s, v)
	content := false
	if p.content[s].index != nil || p.content[s].exact != nil {
		// A content rule that would win makes the answer depend on what
		// the file holds; one that loses to a more specific rule does not.
		if cr := p.content[s].find(v); cr != nil && (pol == nil || cr.beats(pol)) {
			content = true
			if mode == assumeSecret {
				pol = cr
			}
		}
	}
	defer func() { e.content = content }()
	if pol != nil && pol.Action == Deny {
		// A session approval never lifts a deny the policy wrote.
		return p.ruleResult(c, pol, Deny, LayerPolicy)
	}
	var tight *compiledRule
	if p.tightened {
		if tight = p.tight[s].find(v); tight == nil {
			tight = p.tightFallback
		}
		if tight != nil && tight.Action == Deny {
			return p.ruleResult(c, tight, Deny, LayerProject)
		}
	}
	sess := p.sessionRule(s, v)
	if sess != nil && sess.Action == Allow {
		return p.ruleResult(c, sess, Allow, LayerSession)
	}
	switch {
	case pol != nil && tight != nil && tight.Action > pol.Action:
		e = p.lower(p.ruleResult(c, tight, tight.Action, LayerProject))
	case pol != nil:
		e = p.lower(p.ruleResult(c, pol, pol.Action, LayerPolicy))
	default:
		e = p.fallbackFor(c)
		e.matched = false
		if tight != nil && tight.Action > p.unlowered(e).Action {
			e = p.lower(p.ruleResult(c, tight, tight.Action, LayerProject))
		}
	}
	if sess != nil && sess.Action == Deny && e.Action == Ask {
		// A person's "always deny" earlier in this run answers what
		// would otherwise ask them again; it never overrides an allow.
		return p.ruleResult(c, sess, Deny, LayerSession)
	}
	return e
}

// unlowered is the answer e had before yolo and fail-closed.
func (p *Policy) unlowered(e evaluation) evaluation {
	if e.cr != nil {
		e.Action = e.cr.Action
	} else if e.Rule.Origin != OriginBuiltin {
		e.Action = Ask // the builtin answer, rewritten
	}
	return e
}

// sessionRule returns the most specific session rule for v on s (the
// later one on a tie), or nil.
func (p *Policy) sessionRule(s Surface, v string) *compiledRule {
	if ss := p.session.Load(); ss != nil {
		return ss.lists[s].find(v)
	}
	return nil
}

// fallbackFor answers when no rule matched: permission["*"], else ask.
func (p *Policy) fallbackFor(c Check) evaluation {
	if f := p.fallback; f != nil {
		e := p.ruleResult(c, f, f.Action, LayerFallback)
		e.Rule.Surface = c.Surface
		return p.lower(e)
	}
	return p.lower(evaluation{Result: Result{Action: Ask, Check: c, Layer: LayerBuiltin,
		Rule: Rule{Surface: c.Surface, Action: Ask, Origin: OriginBuiltin}}})
}

// Evaluate answers one check on one surface. With no matching rule the
// answer is permission["*"] or, without one, the builtin ask. Content
// rules apply as if the file's content looked secret (Evaluate does not
// compose, so it does not set DependsOnContent; DecidePath does).
func (p *Policy) Evaluate(c Check) Result { return p.evaluate(c, assumeSecret).Result }

// stronger reports whether a should replace b when composing surfaces:
// the more restrictive action wins; on equal actions a human-only answer
// wins so the restriction on who may approve is not lost.
func stronger(a, b *evaluation) bool { return a.Stricter(b.Result) }

// Stricter reports whether r is a stricter answer than b: the more
// restrictive action; on equal actions the one fewer may approve (a
// human-only ask over a managed one, which the managed policy's
// reviewers may also answer, over any other).
func (r Result) Stricter(b Result) bool {
	if r.Action != b.Action {
		return r.Action > b.Action
	}
	return r.approvers() > b.approvers()
}

// approvers ranks who may approve an ask: 0 anyone the chain holds, 1
// the managed reviewers or a person, 2 a person only.
func (r Result) approvers() int {
	switch {
	case !r.HumanOnly:
		return 0
	case r.Managed:
		return 1
	}
	return 2
}

// Decide composes independent checks of one access most-restrictive-wins.
// A check whose surface has no matching rule abstains; when every check
// abstains the answer is permission["*"] or the builtin ask. Content
// rules apply as if the content looked secret; DependsOnContent says
// whether the answer would be different otherwise.
func (p *Policy) Decide(checks ...Check) Result {
	var r Result
	if !p.decide(checks, assumeSecret, &r) {
		return r
	}
	var plain Result
	p.decide(checks, notSecret, &plain)
	return bothModes(r, plain)
}

// bothModes combines the answers for a file that looks secret and one
// that does not: the stricter of the two, with DependsOnContent set when
// they differ. (A content rule that asks can outrank a deny beneath it,
// so the stricter answer may be the one for a file without secrets.)
func bothModes(secret, plain Result) Result {
	if plain.Action == secret.Action {
		return secret
	}
	if plain.Action > secret.Action {
		secret = plain
	}
	secret.DependsOnContent = true
	return secret
}

// decide composes checks in one content mode into out and reports
// whether a content rule took part.
func (p *Policy) decide(checks []Check, mode contentMode, out *Result) (content bool) {
	var best evaluation
	have := false
	for i := range checks {
		e := p.evaluate(checks[i], mode)
		content = content || e.content
		if !e.matched {
			continue
		}
		if !have || stronger(&e, &best) {
			best, have = e, true
		}
	}
	if have {
		*out = best.Result
		return content
	}
	var c Check
	if len(checks) > 0 {
		c = checks[0]
	}
	*out = p.fallbackFor(c).Result
	return content
}

// DecidePath decides an access to a path: read → (read, path),
// write → (write, path), exec → (exec, path); several bits combine, and
// the path surface is consulted once.
//
// When a `"content": "secret"` rule matches, the answer is the stricter
// of "the file looks secret" and "it does not", with DependsOnContent
// set; see DecidePathContent.
func (p *Policy) DecidePath(a Access, path string) Result {
	var buf [4]Check
	checks := pathChecks(&buf, a, path)
	if len(checks) == 1 {
		return noAccess(checks[0])
	}
	return p.Decide(checks...)
}

// DecidePathContent is DecidePath once the caller knows what the file
// holds: secret is LooksSecret(path, head) for the file's first bytes.
// With secret false, content rules are skipped and the next most
// specific rule decides; with secret true they apply. The answer never
// has DependsOnContent set.
//
// The contract for the caller (the supervisor), which does the I/O the
// engine does not:
//   - call it only after DecidePath returned DependsOnContent;
//   - classify the object the access will use, not another one: read
//     from the file it has opened (and will hand over), never by
//     reopening the path;
//   - only a regular file has content: a directory, device, FIFO or
//     socket counts as not secret (secret=false), so a directory named
//     like a secret file can be listed;
//   - a regular file that cannot be read counts as secret (secret=true):
//     never fail open.
func (p *Policy) DecidePathContent(a Access, path string, secret bool) Result {
	var buf [4]Check
	checks := pathChecks(&buf, a, path)
	if len(checks) == 1 {
		return noAccess(checks[0])
	}
	mode := notSecret
	if secret {
		mode = assumeSecret
	}
	var r Result
	p.decide(checks, mode, &r)
	return r
}

func noAccess(c Check) Result {
	return Result{Action: Deny, Check: c, Layer: LayerBuiltin,
		Rule: Rule{Surface: SurfacePath, Action: Deny, Origin: OriginBuiltin, Reason: "no access kind given"}}
}

func pathChecks(buf *[4]Check, a Access, path string) []Check {
	n := 0
	if a&AccessRead != 0 {
		buf[n] = Check{SurfaceRead, path}
		n++
	}
	if a&AccessWrite != 0 {
		buf[n] = Check{SurfaceWrite, path}
		n++
	}
	if a&AccessExec != 0 {
		buf[n] = Check{SurfaceExec, path}
		n++
	}
	buf[n] = Check{SurfacePath, path}
	n++
	return buf[:n]
}

// rank orders layers for EvaluateAny: a hard guard's word on any
// spelling stands above everything; a fallback or builtin answer is
// weaker than any rule that matched.
func (e *evaluation) rank() int {
	switch e.Layer {
	case LayerManaged:
		return 4
	case LayerHardGuard, LayerProtectedWrite:
		return 3
	case LayerSession, LayerPolicy, LayerProject:
		return 2
	case LayerFallback:
		return 1
	}
	return 0
}

// EvaluateAny evaluates several spellings of one value on surface s (for
// example `git push x` and `/usr/bin/git push x`); content rules apply as
// if the content looked secret. A hard guard's answer
// on any spelling wins, the more restrictive if several; otherwise the
// spelling whose deciding rule is the most specific decides, and equally
// specific answers compose most-restrictive-wins. This way a rule written
// for either spelling applies, and a precise allow is not overruled by
// the broad rule another spelling happened to hit.
//
// On the bash surface the deciding rules of the spellings are compared
// as command rules (cmdCompare), which two rules naming different
// things may leave unordered: of the answers no other is more specific
// than, the most restrictive decides.
func (p *Policy) EvaluateAny(s Surface, values ...string) Result {
	if len(values) == 0 {
		return p.fallbackFor(Check{Surface: s}).Result
	}
	if s == SurfaceBash && len(values) > 1 {
		return p.evaluateCommand(values)
	}
	best := p.evaluate(Check{s, values[0]}, assumeSecret)
	for _, v := range values[1:] {
		e := p.evaluate(Check{s, v}, assumeSecret)
		if e.better(&best) {
			best = e
		}
	}
	return best.Result
}

// evaluateCommand is EvaluateAny for the spellings of a command.
func (p *Policy) evaluateCommand(values []string) Result {
	var buf [8]evaluation
	evals := buf[:0]
	for _, v := range values {
		evals = append(evals, p.evaluate(Check{SurfaceBash, v}, assumeSecret))
	}
	best := -1
	for i := range evals {
		dominated := false
		for j := range evals {
			if i != j && evals[j].moreSpecific(&evals[i]) {
				dominated = true
				break
			}
		}
		if !dominated && (best < 0 || stronger(&evals[i], &evals[best])) {
			best = i
		}
	}
	if best < 0 {
		// No answer stands above the others: the most restrictive.
		best = 0
		for i := range evals {
			if stronger(&evals[i], &evals[best]) {
				best = i
			}
		}
	}
	return evals[best].Result
}

// moreSpecific reports whether e's answer outranks b's on the bash
// surface: a higher layer rank, or for two rules the more specific by
// cmdCompare. Equals are for the most restrictive to decide.
func (e *evaluation) moreSpecific(b *evaluation) bool {
	if e.Layer == LayerManaged || b.Layer == LayerManaged {
		return stronger(e, b) // the managed word stands, and anything stricter with it
	}
	re, rb := e.rank(), b.rank()
	if re != rb {
		return re > rb
	}
	if re != 2 || e.cr == nil || b.cr == nil {
		return false
	}
	return cmdCompare(e.cr, b.cr) > 0
}

func (e *evaluation) better(b *evaluation) bool {
	if e.Layer == LayerManaged || b.Layer == LayerManaged {
		return stronger(e, b) // the managed word stands, and anything stricter with it
	}
	re, rb := e.rank(), b.rank()
	if re != rb {
		return re > rb
	}
	if re == 2 && e.spec != b.spec {
		return e.spec.moreSpecific(b.spec)
	}
	return stronger(e, b)
}
