package forwarding

import (
	"fmt"
	"strings"

	"github.com/permwrap/permwrap/engine"
)

// Conveniences over Judge for the package's tests. Production code calls
// Judge (permwrap explain --node) and Strictest (the supervisor's per-node
// verdicts) directly; these lived in chain.go and tree.go with no caller
// outside the tests (deadcode).

func identity(r engine.Result) engine.Result { return r }

// JudgeResult is Judge for judges that return an engine.Result.
func JudgeResult(layers []Layer, judge func(*engine.Policy) engine.Result) Verdict {
	_, v := Judge(layers, judge, identity)
	return v
}

// Decide composes independent checks of one access in every layer
// (engine.Policy.Decide) and combines the layers.
func Decide(layers []Layer, checks ...engine.Check) Verdict {
	return JudgeResult(layers, func(p *engine.Policy) engine.Result { return p.Decide(checks...) })
}

// DecideExec decides an exec in every layer; the returned decision is the
// deciding layer's.
func DecideExec(layers []Layer, in engine.ExecIntent) (engine.ExecDecision, Verdict) {
	return Judge(layers, func(p *engine.Policy) engine.ExecDecision { return p.DecideExec(in) },
		func(d engine.ExecDecision) engine.Result { return d.Result })
}

// String is one line per layer, the decider marked, for test failures.
func (v Verdict) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", v.Result.Action)
	if v.Decider != nil {
		fmt.Fprintf(&b, " by %s", v.Decider.Label())
	}
	if v.Ambiguous {
		b.WriteString(" (ambiguous node: every candidate's chain consulted)")
	}
	for _, l := range v.Layers {
		mark := " "
		if l.Node == v.Decider && l.Result == v.Result {
			mark = "*"
		}
		fmt.Fprintf(&b, "\n %s %s: %s", mark, l.Node.Label(), l.Result)
	}
	return b.String()
}

// LayerExplanation is how one layer answered a check, and why.
type LayerExplanation struct {
	Node        *Node
	Explanation engine.Explanation
}

// Explain evaluates one check in every layer (engine.Policy.Explain) and
// says which layer's answer stands.
func Explain(layers []Layer, c engine.Check) ([]LayerExplanation, Verdict) {
	out := make([]LayerExplanation, 0, len(layers))
	for _, l := range layers {
		out = append(out, LayerExplanation{Node: l.Node, Explanation: l.Policy.Explain(c)})
	}
	v := JudgeResult(layers, func(p *engine.Policy) engine.Result { return p.Evaluate(c) })
	return out, v
}

// JudgeMembership is Judge over the membership's layers; the verdict is
// marked Ambiguous when the process may belong to several nodes.
func JudgeMembership[T any](m Membership, judge func(*engine.Policy) T, result func(T) engine.Result) (T, Verdict) {
	x, v := Judge(m.Layers(), judge, result)
	v.Ambiguous = m.Ambiguous()
	return x, v
}

// DecideIn decides independent checks of one access for a process of m.
func DecideIn(m Membership, checks ...engine.Check) Verdict {
	_, v := JudgeMembership(m, func(p *engine.Policy) engine.Result { return p.Decide(checks...) }, identity)
	return v
}
