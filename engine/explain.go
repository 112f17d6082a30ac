package engine

import (
	"fmt"
	"strings"

	"github.com/permwrap/permwrap/internal/display"
)

// Explanation is how the policy answered one check: the answer, the rule
// that decided and the layer it came from, and the other matching rules
// it beat, so a person can see why and what to change.
type Explanation struct {
	Check  Check
	Result Result
	// Abstained is true when no rule of the check's surface matched: the
	// answer is the fallback, and in a composed decision the surface
	// does not take part.
	Abstained bool
	// RunnerUps are the other matching rules in the order they would have
	// been consulted (hard guards, protected writes, session, policy; most
	// specific first within each layer).
	RunnerUps []Rule
	Notes     []string // yolo, fail-closed, session-vs-deny … in plain words
}

// Explain evaluates c like Evaluate and says why.
func (p *Policy) Explain(c Check) Explanation {
	e := p.evaluate(c)
	ex := Explanation{Check: c, Result: e.Result, Abstained: !e.matched}
	if c.Surface == SurfaceInvalid || c.Surface >= numSurfaces {
		return ex
	}
	var matches []*compiledRule
	matches = append(matches, p.hard[c.Surface].matching(c.Value)...)
	if c.Surface == SurfaceWrite {
		matches = append(matches, p.protected.matching(c.Value)...)
	}
	if ss := p.session.Load(); ss != nil {
		matches = append(matches, ss.lists[c.Surface].matching(c.Value)...)
	}
	matches = append(matches, p.rules[c.Surface].matching(c.Value)...)
	for _, r := range matches {
		if r != e.cr {
			ex.RunnerUps = append(ex.RunnerUps, r.Rule)
		}
	}
	switch e.Rule.Origin {
	case OriginYolo:
		ex.Notes = append(ex.Notes, "yolo mode rewrote ask to allow")
	case OriginFailClosed:
		ex.Notes = append(ex.Notes, "a --policy scope failed to load, so this allow was floored to ask (fail-closed)")
	}
	if e.HumanOnly {
		ex.Notes = append(ex.Notes, "only a person may approve this: no automated reviewer, no session approval, no yolo")
	}
	if e.Layer == LayerPolicy && e.Action == Deny {
		if ss := p.session.Load(); ss != nil && ss.lists[c.Surface].find(c.Value) != nil {
			ex.Notes = append(ex.Notes, "a session approval matches too, but it never lifts a deny the policy wrote")
		}
	}
	if ex.Abstained {
		ex.Notes = append(ex.Notes, fmt.Sprintf("no %s rule matched; in a composed decision this surface abstains", c.Surface))
	}
	return ex
}

func (ex Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", ex.Check.Surface, display.Printable(ex.Check.Value))
	fmt.Fprintf(&b, "  decision: %s\n", ex.Result.Action)
	fmt.Fprintf(&b, "  decided by: %s\n", describeRule(ex.Result))
	if ex.Result.Rule.Reason != "" {
		fmt.Fprintf(&b, "  reason: %s\n", display.Printable(ex.Result.Rule.Reason))
	}
	for _, n := range ex.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	if len(ex.RunnerUps) > 0 {
		fmt.Fprintf(&b, "  runner-ups:\n")
		for _, r := range ex.RunnerUps {
			fmt.Fprintf(&b, "    %s\n", describeRule(Result{Rule: r, Layer: layerOf(r)}))
		}
	}
	return b.String()
}

func layerOf(r Rule) Layer {
	switch r.Origin {
	case OriginHardGuard:
		return LayerHardGuard
	case OriginSession:
		return LayerSession
	}
	return LayerPolicy
}

// describeRule is the rule as Rule.String renders it, with what explain
// adds: where it stands among the layers and where it came from.
// "rule write:~/.bashrc (ask, default.jsonc:60:7); origin default, layer policy".
func describeRule(r Result) string {
	rule := r.Rule
	if r.Layer == LayerFallback {
		rule.Surface = SurfaceInvalid // permission["*"], whatever surface asked
	}
	s := rule.String()
	var parts []string
	if rule.Origin != OriginBuiltin && rule.Origin != OriginInvalid {
		parts = append(parts, "origin "+rule.Origin.String())
	}
	if r.Layer != LayerInvalid {
		parts = append(parts, "layer "+r.Layer.String())
	}
	if len(parts) > 0 {
		s += "; " + strings.Join(parts, ", ")
	}
	return s
}

// DecisionExplanation explains a composed decision: every surface
// consulted and the answer they compose to.
type DecisionExplanation struct {
	Result   Result
	Surfaces []Explanation
	// Extra holds surface-specific analysis (the shell analysis of a
	// command line), rendered after the surfaces.
	Extra string
}

// ExplainDecision explains Decide(checks...).
func (p *Policy) ExplainDecision(checks ...Check) DecisionExplanation {
	d := DecisionExplanation{Result: p.Decide(checks...)}
	for _, c := range checks {
		d.Surfaces = append(d.Surfaces, p.Explain(c))
	}
	return d
}

// ExplainPath explains DecidePath(a, path).
func (p *Policy) ExplainPath(a Access, path string) DecisionExplanation {
	var buf [4]Check
	checks := pathChecks(&buf, a, path)
	d := DecisionExplanation{Result: p.DecidePath(a, path)}
	for _, c := range checks {
		d.Surfaces = append(d.Surfaces, p.Explain(c))
	}
	return d
}

func (d DecisionExplanation) String() string {
	var b strings.Builder
	all := true
	for _, ex := range d.Surfaces {
		all = all && ex.Abstained
	}
	for _, ex := range d.Surfaces {
		if len(d.Surfaces) > 1 && ex.Abstained && !all {
			// Its fallback answer takes no part; saying "ask" would mislead.
			fmt.Fprintf(&b, "%s %s\n  abstains: no %s rule matched\n", ex.Check.Surface, display.Printable(ex.Check.Value), ex.Check.Surface)
			for _, r := range ex.RunnerUps {
				fmt.Fprintf(&b, "    matched but not deciding: %s\n", describeRule(Result{Rule: r, Layer: layerOf(r)}))
			}
			continue
		}
		b.WriteString(ex.String())
	}
	if len(d.Surfaces) > 1 {
		if all {
			fmt.Fprintf(&b, "every surface abstained: the fallback decides\n")
		} else {
			fmt.Fprintf(&b, "composed (most restrictive of the surfaces that matched): %s, from %s\n", d.Result.Action, d.Result.Check.Surface)
		}
	}
	if d.Extra != "" {
		b.WriteString(d.Extra)
		if !strings.HasSuffix(d.Extra, "\n") {
			b.WriteByte('\n')
		}
	}
	fmt.Fprintf(&b, "decision: %s\n", d.Result.Action)
	return b.String()
}

// CommandExplainer is the seam for the shell analysis: when set (by the
// shell analysis in this package, from an init function), `permwrap
// explain bash LINE` calls it to show how LINE splits into units and how
// each is decided. It returns the text to print and the overall result.
var CommandExplainer func(p *Policy, line string) (text string, overall Result)

// ExplainCommand explains a command line on the bash surface: the line as
// one value, plus the shell analysis when CommandExplainer is set, whose
// overall result then is the decision.
func (p *Policy) ExplainCommand(line string) DecisionExplanation {
	c := Check{Surface: SurfaceBash, Value: line}
	d := DecisionExplanation{Result: p.Evaluate(c), Surfaces: []Explanation{p.Explain(c)}}
	if f := CommandExplainer; f != nil {
		text, r := f(p, line)
		d.Extra = text
		d.Result = r
	}
	return d
}
