package authority

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/permwrap/permwrap/engine"
)

// Verdict is a chain link's answer. The zero value is not a verdict: a
// link that returns it is treated as answering nonsense, and defers.
type Verdict uint8

const (
	VerdictAllow Verdict = iota + 1
	VerdictDeny
	VerdictDefer
)

func (v Verdict) String() string {
	switch v {
	case VerdictAllow:
		return "allow"
	case VerdictDeny:
		return "deny"
	case VerdictDefer:
		return "defer"
	}
	return fmt.Sprintf("verdict(%d)", v)
}

// ParseVerdict reads "allow", "deny" or "defer".
func ParseVerdict(s string) (Verdict, bool) {
	switch s {
	case "allow":
		return VerdictAllow, true
	case "deny":
		return VerdictDeny, true
	case "defer":
		return VerdictDefer, true
	}
	return 0, false
}

// QueryResult is the policy's answer to one (surface, value) question.
type QueryResult struct {
	Action engine.Action
	Rule   engine.Rule
}

// Querier evaluates another (surface, value) against the same composed
// policy the request was judged by ("is this sub-command denied?"). The
// supervisor adapts engine.Policy.Evaluate to it.
type Querier interface {
	Query(engine.Check) QueryResult
}

// QuerierFunc adapts a function to Querier.
type QuerierFunc func(engine.Check) QueryResult

func (f QuerierFunc) Query(c engine.Check) QueryResult { return f(c) }

// Authorizer is a non-terminal chain link. It may allow, deny (reason is
// a teaching reason for the agent) or defer to the next link. An error,
// a panic, a verdict outside the three, or running past the link's
// timeout all count as defer. ctx is cancelled at the timeout; a link
// that ignores it is abandoned, not waited for.
type Authorizer interface {
	Review(ctx context.Context, r Request, q Querier) (v Verdict, reason string, err error)
}

// Terminal is the end of the chain: it must answer, and since a Decision
// can only be an allow or a deny, it cannot defer.
type Terminal interface {
	// Name labels the terminal in the review log ("prompt", "deny", "parent").
	Name() string
	// Human reports whether a person answers. Human-only requests
	// (protectedWrites) reaching a terminal that is not human are denied.
	Human() bool
	Decide(ctx context.Context, r Request) Decision
}

// ReasonUnavailable is the headless denial reason.
const ReasonUnavailable = "confirmation unavailable"

// DenyingTerminal denies every request that reaches it: the terminal for
// a permwrap with no terminal and no parent.
type DenyingTerminal struct {
	Reason string // "" means ReasonUnavailable
}

func (t DenyingTerminal) Name() string { return "deny" }
func (t DenyingTerminal) Human() bool  { return false }
func (t DenyingTerminal) Decide(_ context.Context, _ Request) Decision {
	reason := t.Reason
	if reason == "" {
		reason = ReasonUnavailable
	}
	return Denied(ByUnavailable{Reason: reason}, reason)
}

// DefaultSecretPatterns are always excluded from delegation, whatever the
// configuration says: a path with a component matching one of these is
// never allowed by a link. They are basename patterns in the policy's
// syntax, matched against each path component.
var DefaultSecretPatterns = []string{
	".ssh", ".aws", ".gnupg", ".kube", ".azure", ".docker", ".password-store",
	".netrc", ".npmrc", ".pypirc", ".git-credentials", ".pgpass",
	".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "*.keystore",
	"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
	"credentials", "credentials.json", "secrets", "secrets.*", "*.secret",
}

// secretMatchers are DefaultSecretPatterns compiled by the one glob
// matcher (glob.go).
var secretMatchers = mustCompileGlobs(DefaultSecretPatterns)

// maxReasonBytes caps a link's teaching reason: it reaches the agent and
// the log, and a link is not trusted to be brief.
const maxReasonBytes = 1024

// ChainConfig is the part of the settings the chain needs, filled by the
// caller from engine.Settings.
type ChainConfig struct {
	Links    []string                 // authorizerChain, in order
	Timeouts map[string]time.Duration // per link; missing or ≤0 → engine.DefaultAuthorizerTimeout
	// Delegation bounds what links may grant. An allow is kept only on a
	// surface named in AllowedSurfaces, not named in ExcludedSurfaces,
	// and for a request that touches no secret-shaped path
	// (DefaultSecretPatterns); any other allow is turned into defer.
	// Denies are never touched: they are only ever more restrictive. With
	// AllowedSurfaces empty, links can deny but not allow.
	Delegation engine.Delegation
	// Warn receives a one-line warning the first time a configured link
	// is found missing (the supervisor prints it on stderr). May be nil.
	Warn func(msg string)
	// Managed are the managed policy's own reviewers (managed.go): the
	// only links a managed ask (Request.Managed) meets, before the
	// person; nil when the managed policy names none.
	Managed *ManagedLinks
}

// ManagedLinks are the reviewers the managed policy names
// ("authorizerChain"/"authorizers" in managed.jsonc), in order, with the
// registry authority.Links built from its specs and their timeouts.
// The user's delegation envelope does not bound them: the administrator
// chose them, and the user cannot widen or narrow what they may answer.
type ManagedLinks struct {
	Links    []string
	Registry map[string]Authorizer
	Timeouts map[string]time.Duration
}

// Chain is one node's live authority: the configured links in config
// order, then the terminal.
type Chain struct {
	cfg   ChainConfig
	links []namedLink
	term  Terminal
	log   *Log
	query Querier

	warnOnce sync.Map // link name → struct{}
}

type namedLink struct {
	name string
	a    Authorizer // nil: configured but not registered
}

// NewChain composes the chain. Links are taken from registry in the order
// cfg.Links names them; a registered link that is not named decides
// nothing. q answers links' policy queries (nil: every query is answered
// "ask" with no rule, which grants nothing).
func NewChain(cfg ChainConfig, registry map[string]Authorizer, term Terminal, log *Log, q Querier) *Chain {
	if term == nil {
		term = DenyingTerminal{}
	}
	if q == nil {
		q = QuerierFunc(func(c engine.Check) QueryResult { return QueryResult{Action: engine.Ask} })
	}
	c := &Chain{cfg: cfg, term: term, log: log, query: q}
	for _, name := range cfg.Links {
		c.links = append(c.links, namedLink{name: name, a: registry[name]})
	}
	return c
}

// Terminal returns the chain's terminal.
func (c *Chain) Terminal() Terminal { return c.term }

// LinkOutcome is one link's part in a resolution, as logged.
type LinkOutcome struct {
	Name    string `json:"name"`
	Verdict string `json:"verdict"`          // allow, deny, defer, or "skipped" for an unregistered name
	Reason  string `json:"reason,omitempty"` // the link's reason
	Note    string `json:"note,omitempty"`   // why the chain overrode it: error, timeout, envelope
}

// Resolve takes an ask to a decision. It never returns without one, and
// the decision always names who made it.
func (c *Chain) Resolve(ctx context.Context, r Request) Decision {
	if r.HumanOnly && r.Managed {
		return c.resolveManaged(ctx, r)
	}
	if r.HumanOnly {
		return c.resolveHumanOnly(ctx, r)
	}
	var outcomes []LinkOutcome
	for _, l := range c.links {
		if l.a == nil {
			outcomes = append(outcomes, LinkOutcome{Name: l.name, Verdict: "skipped", Note: "not registered"})
			c.log.unregisteredLink(r.ID, l.name)
			if _, seen := c.warnOnce.LoadOrStore(l.name, struct{}{}); !seen && c.cfg.Warn != nil {
				c.cfg.Warn(fmt.Sprintf("authorizer %q is named in authorizerChain but not defined; skipping it (asks go on to the next link)", l.name))
			}
			continue
		}
		o := c.consult(ctx, l, r)
		outcomes = append(outcomes, o)
		if d, ok := c.linkDecided(r, o, outcomes); ok {
			return d
		}
	}
	if d, ok := c.abandoned(ctx, r, outcomes); ok {
		return d
	}
	d := c.term.Decide(ctx, r.clone())
	if len(c.links) > 0 {
		c.log.chainResolved(r.ID, outcomes, c.term.Name(), d)
	}
	return d
}

// linkDecided is the decision a link's outcome o makes, logged with the
// outcomes so far: an allow or a deny decides (named as o names the
// link); a defer does not.
func (c *Chain) linkDecided(r Request, o LinkOutcome, outcomes []LinkOutcome) (Decision, bool) {
	var d Decision
	switch o.Verdict {
	case "allow":
		d = Allowed(ByAuthorizer{Name: o.Name, Verdict: VerdictAllow, Reason: o.Reason})
	case "deny":
		d = Denied(ByAuthorizer{Name: o.Name, Verdict: VerdictDeny, Reason: o.Reason}, o.Reason)
	default:
		return Decision{}, false
	}
	c.log.chainResolved(r.ID, outcomes, "", d)
	return d, true
}

// abandoned is the denial of an ask whose context ended while the links
// were consulted, logged with their outcomes.
func (c *Chain) abandoned(ctx context.Context, r Request, outcomes []LinkOutcome) (Decision, bool) {
	err := ctx.Err()
	if err == nil {
		return Decision{}, false
	}
	d := Denied(ByError{Reason: "ask abandoned: " + err.Error()}, "ask abandoned")
	c.log.chainResolved(r.ID, outcomes, "", d)
	return d, true
}

// resolveHumanOnly: protected writes skip every link and every session
// option; only a person may allow them, once.
func (c *Chain) resolveHumanOnly(ctx context.Context, r Request) Decision {
	d := c.personOnce(ctx, r, "protected write needs a person to confirm", "protected write: ")
	c.log.chainResolved(r.ID, nil, c.term.Name()+" (human-only: links skipped)", d)
	return d
}

// personOnce asks the person at the terminal with no suggested rules, and
// keeps only "allow once" of an allow (a terminal must not widen the ask
// to a session rule); with nobody there it denies, saying why.
func (c *Chain) personOnce(ctx context.Context, r Request, unavailable, prefix string) Decision {
	if !c.term.Human() {
		return Denied(ByUnavailable{Reason: unavailable}, prefix+ReasonUnavailable)
	}
	hr := r.clone()
	hr.Suggested = nil
	d := c.term.Decide(ctx, hr)
	if d.Action() == engine.Allow && len(d.SessionRules()) > 0 {
		d = d.withoutSession()
	}
	return d
}

func (c *Chain) consult(ctx context.Context, l namedLink, r Request) LinkOutcome {
	return c.consultWith(ctx, l, r, c.cfg.Timeouts[l.name], true)
}

// consultWith asks one link, within timeout; with envelope, an allow
// outside the delegation envelope becomes defer.
func (c *Chain) consultWith(ctx context.Context, l namedLink, r Request, timeout time.Duration, envelope bool) (o LinkOutcome) {
	o.Name = l.name
	if timeout <= 0 {
		timeout = engine.DefaultAuthorizerTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	type answer struct {
		v      Verdict
		reason string
		err    error
	}
	ch := make(chan answer, 1) // buffered: an abandoned link's late answer must not block it forever
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- answer{err: fmt.Errorf("panic: %v", p)}
			}
		}()
		v, reason, err := l.a.Review(cctx, r.clone(), c.query)
		ch <- answer{v, reason, err}
	}()

	var a answer
	select {
	case a = <-ch:
	case <-cctx.Done():
		o.Verdict = "defer"
		o.Note = fmt.Sprintf("no answer within %s", timeout)
		return o
	}
	o.Reason = elide(a.reason, maxReasonBytes)
	switch {
	case a.err != nil:
		o.Verdict, o.Note = "defer", "error: "+elide(a.err.Error(), maxReasonBytes)
	case a.v == VerdictAllow:
		if why := c.outsideEnvelope(r); envelope && why != "" {
			o.Verdict, o.Note = "defer", "allow downgraded: "+why
		} else {
			o.Verdict = "allow"
		}
	case a.v == VerdictDeny:
		o.Verdict = "deny"
	case a.v == VerdictDefer:
		o.Verdict = "defer"
	default:
		o.Verdict, o.Note = "defer", "invalid verdict "+a.v.String()
	}
	return o
}

// outsideEnvelope says why an allow of r may not be delegated, or "".
func (c *Chain) outsideEnvelope(r Request) string {
	s := r.Check.Surface
	d := c.cfg.Delegation
	if slices.Contains(d.ExcludedSurfaces, s) {
		return "surface " + s.String() + " is excluded from delegation"
	}
	if !slices.Contains(d.AllowedSurfaces, s) {
		return "surface " + s.String() + " is not delegated (modelDelegation.allowedSurfaces)"
	}
	if p := secretShaped(r); p != "" {
		return "touches a secret-shaped path (" + p + ")"
	}
	return ""
}

// secretShaped returns the first secret-shaped word in the request's
// value, runs or units, or "". For command lines every word is checked as
// a potential path, since `cat ~/.ssh/id_rsa` is as secret as the open.
func secretShaped(r Request) string {
	check := func(v string) string {
		for _, word := range strings.FieldsFunc(v, func(c rune) bool {
			return c == ' ' || c == '\t' || c == '\n' || c == '"' || c == '\'' || c == '=' || c == ';' || c == '|' || c == '&' || c == '<' || c == '>' || c == '(' || c == ')'
		}) {
			for _, comp := range strings.Split(word, "/") {
				if comp == "" {
					continue
				}
				if matchesAny(comp, secretMatchers) {
					return word
				}
			}
		}
		return ""
	}
	if r.Check.Surface.IsPath() {
		// A path value is one word even when it contains spaces.
		for _, comp := range strings.Split(r.Check.Value, "/") {
			if comp != "" && matchesAny(comp, secretMatchers) {
				return r.Check.Value
			}
		}
	} else if w := check(r.Check.Value); w != "" {
		return w
	}
	if w := check(r.Command); w != "" {
		return w
	}
	for _, list := range [][]string{r.Runs, r.Units, r.SetUp} {
		for _, v := range list {
			if w := check(v); w != "" {
				return w
			}
		}
	}
	return ""
}

func matchesAny(name string, matchers []func(string) bool) bool {
	for _, m := range matchers {
		if m(name) {
			return true
		}
	}
	return false
}

// FromRule is the decision recorded authority made without asking: the
// engine's matched rule decides, and its origin says how (a session
// approval and yolo are rules too, but they name themselves). A rule
// whose action is ask cannot decide; it yields an error deny.
func FromRule(r engine.Rule) Decision {
	by := ruleProvenance(r)
	if _, ok := by.(ByAudit); ok {
		// Audit mode allowed what the rule would have asked about or
		// denied (engine.Policy.Audit); the log says would_ask/would_deny.
		return Allowed(by)
	}
	switch r.Action {
	case engine.Allow:
		return Allowed(by)
	case engine.Deny:
		reason := r.Reason
		if u, ok := by.(ByUser); ok && u.Via == AlwaysDenyVia && reason == "" {
			reason = ReasonDeniedByUser
		}
		return Denied(by, reason)
	}
	return Denied(ByError{Reason: r.String() + " does not decide"}, "internal: an ask reached a rule decision")
}

// ruleProvenance names a rule as a decider: session approvals, a
// person's "always deny" in this run and yolo are rules in the engine but
// distinct deciders in the log.
func ruleProvenance(r engine.Rule) DecidedBy {
	switch r.Origin {
	case engine.OriginSession:
		if r.Action == engine.Deny {
			return ByUser{Via: AlwaysDenyVia}
		}
		return BySessionApproval{Surface: r.Surface, Pattern: r.Pattern}
	case engine.OriginYolo:
		return ByYolo{Pattern: r.Surface.String() + ":" + r.Pattern}
	case engine.OriginAudit:
		return ByAudit{Would: r.Action, Surface: r.Surface, Pattern: r.Pattern, Pos: r.Pos}
	}
	return ByRule{Surface: r.Surface, Pattern: r.Pattern, Origin: r.Origin, Pos: r.Pos}
}

// resolveManaged: an ask of the managed policy goes to the managed
// policy's own reviewers, in order, and then, if none of them answered,
// to a person for "allow once" only, like a protected write; headless it
// is denied. The user's links are never consulted.
func (c *Chain) resolveManaged(ctx context.Context, r Request) Decision {
	var outcomes []LinkOutcome
	if m := c.cfg.Managed; m != nil {
		for _, name := range m.Links {
			l := namedLink{name: name, a: m.Registry[name]}
			if l.a == nil {
				outcomes = append(outcomes, LinkOutcome{Name: name, Verdict: "skipped", Note: "not defined in the managed policy"})
				continue
			}
			o := c.consultWith(ctx, l, r, m.Timeouts[name], false)
			o.Name = "managed:" + name
			outcomes = append(outcomes, o)
			if d, ok := c.linkDecided(r, o, outcomes); ok {
				return d
			}
		}
	}
	if d, ok := c.abandoned(ctx, r, outcomes); ok {
		return d
	}
	d := c.personOnce(ctx, r, "the managed policy asks: a person must confirm", "managed policy: ")
	c.log.chainResolved(r.ID, outcomes, c.term.Name()+" (managed: user links skipped)", d)
	return d
}
