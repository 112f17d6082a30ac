package authority

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/permwrap/permwrap/engine"
)

// DecidedBy says what decided a request. It is set at the site that
// decided and never inferred later from an event name: a human's approval
// and an automated one must leave different records.
//
// The interface is sealed; the concrete kinds are ByUser, ByAuthorizer,
// ByRule, BySessionApproval, ByYolo, ByAudit, ByKernel, ByUnavailable,
// ByError and ByForwarded.
type DecidedBy interface {
	// Kind is the JSON discriminator: "user", "authorizer", "rule", ...
	Kind() string
	// String is the short human form used by prompts and `permwrap log`.
	String() string
	json.Marshaler
	decidedBy()
}

// ByUser: a person answered a prompt.
type ByUser struct {
	Via string // "dialog", ScriptApprovalVia, SaveApprovalVia, AlwaysDenyVia
}

// How a person's earlier answer decided a request nobody was asked about
// again (ByUser.Via).
const (
	// ScriptApprovalVia: a person allowed a script, and this request is
	// one of its commands or one of the files they name, made by the
	// script's own process tree.
	ScriptApprovalVia = "script approval"
	// SaveApprovalVia: a person allowed the save of a file through a
	// temporary file, and this request is the rest of that save (the
	// temporary file's chmod, its rename over the file).
	SaveApprovalVia = "save approval"
	// AlwaysDenyVia: a person answered "always deny" earlier in this run.
	AlwaysDenyVia = "always deny"
)

// ByAuthorizer: a configured chain link answered allow or deny.
type ByAuthorizer struct {
	Name    string
	Verdict Verdict // VerdictAllow or VerdictDeny
	Reason  string
}

// ByRule: recorded authority (a policy or hard-guard rule) decided
// without asking anyone.
type ByRule struct {
	Surface engine.Surface
	Pattern string
	Origin  engine.Origin
	Pos     engine.Position
}

// BySessionApproval: an earlier "allow for this session" answered.
type BySessionApproval struct {
	Surface engine.Surface
	Pattern string
}

// ByYolo: yolo mode rewrote an ask to allow.
type ByYolo struct {
	Pattern string
}

// ByAudit: audit mode (--audit) let through what the policy would have
// asked about or denied; Would is that action, and the rest names the
// rule that would have decided (empty Pattern: no rule matched).
type ByAudit struct {
	Would   engine.Action
	Surface engine.Surface
	Pattern string
	Pos     engine.Position
}

// ByKernel: the request could change nothing, so it was answered as the
// kernel answers it, without asking anyone: a mkdir of a directory that
// exists (EEXIST), an open of a missing file (ENOENT), a write the file's
// own permissions refuse (EACCES). Errno is the errno's name, Reason
// what made the answer certain. The log calls it "answered without
// asking" (EventAnswered); nobody is told, as nobody is when the kernel
// itself refuses.
type ByKernel struct {
	Errno  string
	Reason string
}

// ByUnavailable: nobody could be asked (headless, timed out), so the
// request was denied.
type ByUnavailable struct {
	Reason string
}

// ByError: the request could not be decided (unreadable argument,
// unresolvable path, internal failure), so it was denied.
type ByError struct {
	Reason string
}

// ByForwarded: another permwrap node answered. Decision is what decided
// within that node, nil when it sent none. On a nested permwrap's records
// Responder is the node that adjudicated (the root, "root") and Node the
// node the request came from, as the root labels it ("reviewer#3").
type ByForwarded struct {
	Responder string
	Decision  DecidedBy
	Node      string
}

func (ByUser) decidedBy()            {}
func (ByAuthorizer) decidedBy()      {}
func (ByRule) decidedBy()            {}
func (BySessionApproval) decidedBy() {}
func (ByYolo) decidedBy()            {}
func (ByAudit) decidedBy()           {}
func (ByKernel) decidedBy()          {}
func (ByUnavailable) decidedBy()     {}
func (ByError) decidedBy()           {}
func (ByForwarded) decidedBy()       {}

func (ByUser) Kind() string            { return "user" }
func (ByAuthorizer) Kind() string      { return "authorizer" }
func (ByRule) Kind() string            { return "rule" }
func (BySessionApproval) Kind() string { return "session_approval" }
func (ByYolo) Kind() string            { return "yolo" }
func (ByAudit) Kind() string           { return "audit" }
func (ByKernel) Kind() string          { return "kernel" }
func (ByUnavailable) Kind() string     { return "unavailable" }
func (ByError) Kind() string           { return "error" }
func (ByForwarded) Kind() string       { return "forwarded" }

// DecidedByKinds lists every kind, for flag validation in `permwrap log`.
var DecidedByKinds = []string{"user", "authorizer", "rule", "session_approval", "yolo", "audit", "kernel", "unavailable", "error", "forwarded"}

func (b ByUser) String() string { return "user (" + b.Via + ")" }
func (b ByAuthorizer) String() string {
	return "authorizer " + b.Name + " (" + b.Verdict.String() + ")"
}
func (b ByRule) String() string {
	return engine.Rule{Surface: b.Surface, Pattern: b.Pattern, Origin: b.Origin, Pos: b.Pos}.String()
}
func (b BySessionApproval) String() string {
	return fmt.Sprintf("session approval %s:%s", b.Surface, b.Pattern)
}
func (b ByYolo) String() string { return "yolo " + b.Pattern }
func (b ByAudit) String() string {
	rule := "no rule matched"
	if b.Pattern != "" {
		rule = fmt.Sprintf("rule %s:%s", b.Surface, b.Pattern)
		if p := b.Pos.String(); p != "" {
			rule += " (" + p + ")"
		}
	}
	return fmt.Sprintf("audit: would %s, %s", b.Would, rule)
}
func (b ByKernel) String() string {
	s := "the kernel: " + b.Errno
	if b.Reason != "" {
		s += " (" + b.Reason + ")"
	}
	return s + ", answered without asking"
}
func (b ByUnavailable) String() string { return "unavailable: " + b.Reason }
func (b ByError) String() string       { return "error: " + b.Reason }
func (b ByForwarded) String() string {
	inner := "unknown"
	if b.Decision != nil {
		inner = b.Decision.String()
	}
	return "forwarded from " + b.Responder + ": " + inner
}

// The JSON forms are flat objects with a "kind" discriminator, e.g.
// {"kind":"rule","surface":"write","pattern":"/etc/**","origin":"global","position":"policy.jsonc:12:5"}.

func (b ByUser) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind string `json:"kind"`
		Via  string `json:"via"`
	}{b.Kind(), b.Via})
}

func (b ByAuthorizer) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind    string `json:"kind"`
		Name    string `json:"name"`
		Verdict string `json:"verdict"`
		Reason  string `json:"reason,omitempty"`
	}{b.Kind(), b.Name, b.Verdict.String(), b.Reason})
}

func (b ByRule) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind     string `json:"kind"`
		Surface  string `json:"surface"`
		Pattern  string `json:"pattern"`
		Origin   string `json:"origin"`
		Position string `json:"position,omitempty"`
	}{b.Kind(), b.Surface.String(), b.Pattern, b.Origin.String(), b.Pos.String()})
}

func (b BySessionApproval) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind    string `json:"kind"`
		Surface string `json:"surface"`
		Pattern string `json:"pattern"`
	}{b.Kind(), b.Surface.String(), b.Pattern})
}

func (b ByYolo) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind    string `json:"kind"`
		Pattern string `json:"pattern"`
	}{b.Kind(), b.Pattern})
}

func (b ByAudit) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind     string `json:"kind"`
		Would    string `json:"would"`
		Surface  string `json:"surface"`
		Pattern  string `json:"pattern"`
		Position string `json:"position,omitempty"`
	}{b.Kind(), b.Would.String(), b.Surface.String(), b.Pattern, b.Pos.String()})
}

func (b ByKernel) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind   string `json:"kind"`
		Errno  string `json:"errno"`
		Reason string `json:"reason"`
	}{b.Kind(), b.Errno, b.Reason})
}

func (b ByUnavailable) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind   string `json:"kind"`
		Reason string `json:"reason"`
	}{b.Kind(), b.Reason})
}

func (b ByError) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind   string `json:"kind"`
		Reason string `json:"reason"`
	}{b.Kind(), b.Reason})
}

func (b ByForwarded) MarshalJSON() ([]byte, error) {
	var inner json.RawMessage = []byte("null")
	if b.Decision != nil {
		var err error
		if inner, err = b.Decision.MarshalJSON(); err != nil {
			return nil, err
		}
	}
	return json.Marshal(struct {
		Kind      string          `json:"kind"`
		Responder string          `json:"responder"`
		Decision  json.RawMessage `json:"decision"`
		Node      string          `json:"node,omitempty"`
	}{b.Kind(), b.Responder, inner, b.Node})
}

// MaxForwardDepth bounds how many forwarded layers ParseDecidedBy follows:
// the JSON comes from another process, and an unbounded recursive reader
// over untrusted input is a stack-exhaustion surface.
const MaxForwardDepth = 8

// ErrForwardTooDeep is returned for forwarded provenance nested deeper
// than MaxForwardDepth.
var ErrForwardTooDeep = errors.New("decidedBy: forwarded provenance nested too deeply")

// ParseDecidedBy reads the JSON form back. Unknown kinds and malformed
// objects are errors; a forwarded record whose inner decision is missing
// or unreadable (an older or foreign responder) keeps Decision nil rather
// than failing, so version skew degrades instead of losing the record.
func ParseDecidedBy(data []byte) (DecidedBy, error) {
	return parseDecidedBy(data, 0)
}

func parseDecidedBy(data []byte, depth int) (DecidedBy, error) {
	if depth > MaxForwardDepth {
		return nil, ErrForwardTooDeep
	}
	var w struct {
		Kind      string          `json:"kind"`
		Via       string          `json:"via"`
		Name      string          `json:"name"`
		Verdict   string          `json:"verdict"`
		Reason    string          `json:"reason"`
		Surface   string          `json:"surface"`
		Pattern   string          `json:"pattern"`
		Origin    string          `json:"origin"`
		Position  string          `json:"position"`
		Responder string          `json:"responder"`
		Decision  json.RawMessage `json:"decision"`
		Would     string          `json:"would"`
		Errno     string          `json:"errno"`
		Node      string          `json:"node"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("decidedBy: %w", err)
	}
	surface := func() (engine.Surface, error) {
		s, ok := engine.ParseSurface(w.Surface)
		if !ok {
			return 0, fmt.Errorf("decidedBy %s: unknown surface %q", w.Kind, w.Surface)
		}
		return s, nil
	}
	switch w.Kind {
	case "user":
		return ByUser{Via: w.Via}, nil
	case "authorizer":
		v, ok := ParseVerdict(w.Verdict)
		if !ok || v == VerdictDefer {
			return nil, fmt.Errorf("decidedBy authorizer: verdict %q is not allow or deny", w.Verdict)
		}
		return ByAuthorizer{Name: w.Name, Verdict: v, Reason: w.Reason}, nil
	case "rule":
		s, err := surface()
		if err != nil {
			return nil, err
		}
		return ByRule{Surface: s, Pattern: w.Pattern, Origin: engine.ParseOrigin(w.Origin), Pos: parsePosition(w.Position)}, nil
	case "session_approval":
		s, err := surface()
		if err != nil {
			return nil, err
		}
		return BySessionApproval{Surface: s, Pattern: w.Pattern}, nil
	case "yolo":
		return ByYolo{Pattern: w.Pattern}, nil
	case "audit":
		s, err := surface()
		if err != nil {
			return nil, err
		}
		a, ok := engine.ParseAction(w.Would)
		if !ok || a == engine.Allow {
			return nil, fmt.Errorf("decidedBy audit: would %q is not ask or deny", w.Would)
		}
		return ByAudit{Would: a, Surface: s, Pattern: w.Pattern, Pos: parsePosition(w.Position)}, nil
	case "kernel":
		if w.Errno == "" {
			return nil, errors.New("decidedBy kernel: missing errno")
		}
		return ByKernel{Errno: w.Errno, Reason: w.Reason}, nil
	case "unavailable":
		return ByUnavailable{Reason: w.Reason}, nil
	case "error":
		return ByError{Reason: w.Reason}, nil
	case "forwarded":
		f := ByForwarded{Responder: w.Responder, Node: w.Node}
		if len(w.Decision) > 0 && !bytes.Equal(bytes.TrimSpace(w.Decision), []byte("null")) {
			inner, err := parseDecidedBy(w.Decision, depth+1)
			if errors.Is(err, ErrForwardTooDeep) {
				return nil, err
			}
			f.Decision = inner // nil on a foreign inner shape: tolerated
		}
		return f, nil
	case "":
		return nil, errors.New("decidedBy: missing kind")
	}
	return nil, fmt.Errorf("decidedBy: unknown kind %q", w.Kind)
}

// parsePosition reads "file:line:col" (or "file:line", or "file") back.
// A file name that itself contains ':' is kept whole when the tail is
// not numeric.
func parsePosition(s string) engine.Position {
	p := engine.Position{File: s}
	num := func(t string) (int, bool) {
		if t == "" || t[0] < '0' || t[0] > '9' {
			return 0, false // strconv would accept "+1"
		}
		n, err := strconv.Atoi(t)
		return n, err == nil && n > 0
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return p
	}
	last, ok := num(s[i+1:])
	if !ok {
		return p
	}
	if j := strings.LastIndexByte(s[:i], ':'); j >= 0 {
		if line, ok := num(s[j+1 : i]); ok {
			return engine.Position{File: s[:j], Line: line, Column: last}
		}
	}
	return engine.Position{File: s[:i], Line: last}
}

// SessionPattern is a rule to remember for the rest of the session: what
// "allow for this session" adds (with origin session), or what "always
// deny" denies until the run ends.
type SessionPattern struct {
	Surface engine.Surface
	Pattern string
}

func (p SessionPattern) String() string { return p.Surface.String() + ":" + p.Pattern }

// Decision is the answer to one request: allow or deny, why, and who
// decided. It has no defer, and it can only be built by Allowed, Denied,
// AllowedForSession and DeniedForSession, each of which takes a
// DecidedBy: no decision exists without provenance.
//
// The zero Decision denies, with ByError provenance, so a forgotten
// assignment fails closed.
type Decision struct {
	allow   bool
	reason  string
	by      DecidedBy
	session []SessionPattern
	saved   []SavedRule
}

// Allowed is an allow decided by by. A nil by yields a deny: an answer
// without provenance is not an answer.
func Allowed(by DecidedBy) Decision {
	if by == nil {
		return Decision{}
	}
	return Decision{allow: true, by: by}
}

// AllowedForSession is an allow that also asks the caller to add ps as
// session rules (allow) for the rest of the run: one for each part of
// the request that asked (a script's commands and the files they use).
// Patterns without a surface or text are dropped.
func AllowedForSession(by DecidedBy, ps ...SessionPattern) Decision {
	d := Allowed(by)
	if d.allow {
		d.session = validPatterns(ps)
	}
	return d
}

// DeniedForSession is a deny that also asks the caller to deny requests
// matching ps, which would otherwise ask, for the rest of the run
// without asking again: a person's "always deny", whose saved rule only
// applies from the next run on.
func DeniedForSession(by DecidedBy, reason string, ps ...SessionPattern) Decision {
	d := Denied(by, reason)
	d.session = validPatterns(ps)
	return d
}

func validPatterns(ps []SessionPattern) []SessionPattern {
	var out []SessionPattern
	for _, p := range ps {
		if p.Surface != engine.SurfaceInvalid && p.Pattern != "" {
			out = append(out, p)
		}
	}
	return out
}

// Denied is a deny decided by by, with a reason that may reach the agent
// (a link's teaching reason, a person's typed reason, a rule's reason).
func Denied(by DecidedBy, reason string) Decision {
	return Decision{by: by, reason: reason}
}

// Answered is the kernel's own answer to a request that could change
// nothing (ByKernel): the call fails with that errno, and nobody was
// asked. Its Action is Deny — the call did not happen — but it is not a
// denial of the policy's: its record is EventAnswered.
func Answered(by ByKernel) Decision {
	return Decision{by: by}
}

// Action is engine.Allow or engine.Deny, never Ask.
func (d Decision) Action() engine.Action {
	if d.allow && d.by != nil {
		return engine.Allow
	}
	return engine.Deny
}

// Reason is the reason given with the decision ("" when none).
func (d Decision) Reason() string {
	if d.by == nil && d.reason == "" {
		return "decision without provenance"
	}
	return d.reason
}

// DecidedBy is who decided. Never nil.
func (d Decision) DecidedBy() DecidedBy {
	if d.by == nil {
		return ByError{Reason: "decision without provenance"}
	}
	return d.by
}

// SessionRules are the session rules the decision asks for, to be added
// with its action (Action): allows for "allow for this session", denies
// for "always deny". nil when none; a decision without provenance has
// none.
func (d Decision) SessionRules() []SessionPattern {
	if d.by == nil || len(d.session) == 0 {
		return nil
	}
	return append([]SessionPattern(nil), d.session...)
}

// withoutSession is d with no session rules and no saved rules: the same
// answer for this request only.
func (d Decision) withoutSession() Decision {
	d.session, d.saved = nil, nil
	return d
}

// AddSessionRules adds the decision's session rules to p with its action
// (engine.Policy.AddSessionRule, AddSessionDeny). It returns the decision
// with the rules that were added, for the review log to record what
// holds, and an error naming each pattern that could not be added; the
// answer to this request stands either way.
func (d Decision) AddSessionRules(p *engine.Policy) (Decision, error) {
	return d.AddSessionRulesBy(func(allow bool, sp SessionPattern) error {
		var err error
		if allow {
			_, err = p.AddSessionRule(sp.Surface, sp.Pattern)
		} else {
			_, err = p.AddSessionDeny(sp.Surface, sp.Pattern)
		}
		return err
	})
}

// AddSessionRulesBy is AddSessionRules with the adding done by add (allow:
// the decision allows; else it denies), for rules that belong elsewhere
// than one policy (a nested node's chain).
func (d Decision) AddSessionRulesBy(add func(allow bool, sp SessionPattern) error) (Decision, error) {
	var added []SessionPattern
	var errs []error
	for _, sp := range d.SessionRules() {
		if err := add(d.Action() == engine.Allow, sp); err != nil {
			errs = append(errs, fmt.Errorf("session rule %s: %w", sp, err))
			continue
		}
		added = append(added, sp)
	}
	d.session = added
	return d, errors.Join(errs...)
}

// Saved are the rules a person's "always allow" or "always deny" wrote
// to the policy file, if any.
func (d Decision) Saved() []SavedRule {
	return append([]SavedRule(nil), d.saved...)
}

// withSaved records that the decision was also written to the policy file.
func (d Decision) withSaved(s ...SavedRule) Decision {
	d.saved = append(append([]SavedRule(nil), d.saved...), s...)
	return d
}

func (d Decision) String() string {
	s := d.Action().String() + " by " + d.DecidedBy().String()
	if r := d.Reason(); r != "" {
		s += ": " + r
	}
	if rules := d.SessionRules(); len(rules) > 0 {
		list := make([]string, len(rules))
		for i, p := range rules {
			list[i] = p.String()
		}
		s += " (session rules " + strings.Join(list, ", ") + ")"
	}
	for _, r := range d.saved {
		s += " (saved: " + r.Surface.String() + ":" + r.Pattern + " " + r.Action.String() + " in " + r.File + ")"
	}
	return s
}
