package egress

import (
	"context"
	"strings"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
)

// Judge decides the connections the proxy is asked to make.
type Judge interface {
	// Evaluate is the policy's answer alone: no ask, no log. The proxy
	// uses it to see whether a resolved address changes the answer its
	// name already got.
	Evaluate(in engine.NetIntent) engine.NetDecision
	// Decide answers for good: the policy, and on ask the authority
	// chain (a reviewer, a person, or a denial when nobody can answer).
	// Every decision is logged. ctx ends when the client goes away.
	Decide(ctx context.Context, in engine.NetIntent) Verdict
}

// Verdict is a Judge's final answer.
type Verdict struct {
	Allow bool
	// Reason is one line for the 403 body and the person: the decision,
	// the connection, the rule and who decided.
	Reason string
}

// Decider answers asks (the authority chain; supervisor.Decider).
type Decider interface {
	Resolve(ctx context.Context, r authority.Request) authority.Decision
}

// Logger is the review log (authority.Log; supervisor.Logger).
type Logger interface {
	Decided(r authority.Request, asked bool, d authority.Decision)
	Asked(r authority.Request)
}

// PolicyJudge is the Judge a permwrap run uses: the policy decides, an
// ask goes to the Decider, a person's "allow for this session" becomes
// a session rule, and every decision is written to the review log with
// the process that asked.
type PolicyJudge struct {
	Policy  *engine.Policy
	Decider Decider // nil: every ask is denied ("confirmation unavailable")
	Log     Logger  // nil: nothing is logged
	Agent   []string
	// Process describes a pid for people and the log; nil gives the pid
	// alone.
	Process func(pid int) authority.Process
	// Denied is told about every connection refused (to write the
	// denial notice to the person and to the process); nil: nobody.
	Denied func(in engine.NetIntent, reason string)
}

// Evaluate implements Judge.
func (j *PolicyJudge) Evaluate(in engine.NetIntent) engine.NetDecision {
	return j.Policy.DecideNet(in)
}

// Decide implements Judge.
func (j *PolicyJudge) Decide(ctx context.Context, in engine.NetIntent) Verdict {
	d := j.Policy.DecideNet(in)
	// Audit mode (--audit): an ask or deny is let through and logged as
	// would_ask/would_deny, as for the tree's own connections.
	d.Result = j.Policy.Audit(d.Result)
	req := authority.NewRequest(d.Result.Check)
	req.Access = "connect"
	req.Net = &in
	req.Agent = j.Agent
	req.Rule = d.Result.Rule
	req.HumanOnly = d.Result.HumanOnly
	req.Managed = d.Result.Managed
	req.Process = authority.Process{PID: in.PID}
	if j.Process != nil && in.PID > 0 {
		req.Process = j.Process(in.PID)
	}
	var dec authority.Decision
	asked := false
	switch {
	case d.Result.Action == engine.Allow:
		dec = authority.FromRule(d.Result.Rule)
	case d.Result.Action == engine.Deny && d.Result.Layer == engine.LayerBuiltin:
		dec = authority.Denied(authority.ByError{Reason: d.Result.Rule.Reason}, d.Result.Rule.Reason)
	case d.Result.Action == engine.Deny:
		dec = authority.FromRule(d.Result.Rule)
	default:
		asked = true
		req.Suggested = []authority.SessionPattern{{Surface: engine.SurfaceNet, Pattern: engine.SuggestNetPattern(d.Result)}}
		if j.Log != nil {
			j.Log.Asked(req)
		}
		if j.Decider == nil {
			dec = authority.Denied(authority.ByUnavailable{Reason: authority.ReasonUnavailable}, authority.ReasonUnavailable)
		} else {
			dec = j.Decider.Resolve(ctx, req)
		}
		// An "allow for this session" or "always deny": the answer
		// stands for this connection either way; a rule that could not be
		// added means the next one asks again.
		dec, _ = dec.AddSessionRules(j.Policy)
	}
	if j.Log != nil {
		j.Log.Decided(req, asked, dec)
	}
	if dec.Action() == engine.Allow {
		return Verdict{Allow: true}
	}
	reason := denialReason(in, d, dec)
	if j.Denied != nil {
		j.Denied(in, reason)
	}
	return Verdict{Reason: reason}
}

// denialReason is the line a refused connection is explained with: the
// engine's account of the rule, and who turned an ask into a deny.
func denialReason(in engine.NetIntent, d engine.NetDecision, dec authority.Decision) string {
	s := d.Reason(in)
	if d.Result.Action != engine.Ask {
		return s
	}
	by := dec.DecidedBy().String()
	if r := dec.Reason(); r != "" && !strings.Contains(by, r) {
		by += ": " + r
	}
	return "deny" + strings.TrimPrefix(s, "ask") + " — asked, and denied by " + by
}
