package engine

import (
	"fmt"
	"strings"

	"github.com/permwrap/permwrap/internal/display"

	"github.com/permwrap/permwrap/engine/shell"
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
	wholeLine bool     // a command line as one value, before the shell analysis
}

// Explain evaluates c like Evaluate and says why.
func (p *Policy) Explain(c Check) Explanation {
	e := p.evaluate(c, assumeSecret)
	ex := Explanation{Check: c, Result: e.Result, Abstained: !e.matched}
	if c.Surface == SurfaceInvalid || c.Surface >= numSurfaces {
		return ex
	}
	var matches []*compiledRule
	if c.Surface == SurfaceWrite {
		matches = append(matches, p.self.matching(c.Value)...)
	}
	matches = append(matches, p.managed[c.Surface].matching(c.Value)...)
	matches = append(matches, p.hard[c.Surface].matching(c.Value)...)
	if c.Surface == SurfaceWrite {
		matches = append(matches, p.protected.matching(c.Value)...)
	}
	if ss := p.session.Load(); ss != nil {
		matches = append(matches, ss.lists[c.Surface].matching(c.Value)...)
	}
	matches = append(matches, p.rules[c.Surface].matching(c.Value)...)
	matches = append(matches, p.baseRules[c.Surface].matching(c.Value)...)
	matches = append(matches, p.tight[c.Surface].matching(c.Value)...)
	matches = append(matches, p.content[c.Surface].matching(c.Value)...)
	for _, r := range matches {
		if r != e.cr {
			ex.RunnerUps = append(ex.RunnerUps, r.Rule)
		}
	}
	switch e.Rule.Origin {
	case OriginYolo:
		ex.Notes = append(ex.Notes, "yolo mode rewrote ask to allow")
	case OriginFailClosed:
		ex.Notes = append(ex.Notes, "a --policy scope failed to load, so this allow became an ask (fail-closed)")
	}
	switch {
	case e.Managed:
		ex.Notes = append(ex.Notes, "the managed policy asks: only its own reviewers or a person (allow once) may approve this: no yolo, audit, session approval, user rule or user reviewer")
	case e.HumanOnly:
		ex.Notes = append(ex.Notes, "only a person may approve this: no automated reviewer, no session approval, no yolo")
	}
	if e.Layer == LayerManaged && e.Action == Deny {
		ex.Notes = append(ex.Notes, "the managed policy denies this: nothing beneath it (user, project, --policy, yolo, audit, a session approval) lifts it")
	}
	if e.Layer == LayerHardGuard && e.Rule.Origin == OriginBuiltin {
		ex.Notes = append(ex.Notes, "permwrap protects this path from the tree it runs: no policy, session approval, yolo or audit lifts it")
	}
	if e.Layer == LayerProject {
		ex.Notes = append(ex.Notes, "an untrusted project policy decided: it can make an answer stricter, never looser (permwrap trust DIR to trust it)")
	}
	if e.content {
		other := p.evaluate(c, notSecret)
		if other.Action != e.Action {
			ex.Result.DependsOnContent = true
			ex.Notes = append(ex.Notes, fmt.Sprintf("this is the answer for a file whose content looks secret; for one that does not, %s decides: %s",
				describeRule(other.Result), other.Action))
		}
	}
	if e.Layer == LayerPolicy && e.Action == Deny {
		if r := p.sessionRule(c.Surface, c.Value); r != nil && r.Action == Allow {
			ex.Notes = append(ex.Notes, "a session approval matches too, but it never lifts a deny the policy wrote")
		}
	}
	if ex.Abstained {
		ex.Notes = append(ex.Notes, fmt.Sprintf("no %s rule matched; in a composed decision this surface abstains", c.Surface))
	}
	if n := p.listingNote(c, e.Action); n != "" {
		ex.Notes = append(ex.Notes, n)
	}
	return ex
}

// listingNote says how a listing of c's path is treated, when that
// differs from a read of a file there or may surprise: a read or path
// check whose answer is not allow.
func (p *Policy) listingNote(c Check, a Action) string {
	if (c.Surface != SurfaceRead && c.Surface != SurfacePath) || a == Allow {
		return ""
	}
	if p.ListingsFree() {
		return `if this is a directory, listing it (its names, as ls or find read them) is not judged: "listings" is "free"; opening a file in it is judged`
	}
	return `if this is a directory, listing it is judged like this read ("listings": "judged")`
}

func (ex Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", ex.Check.Surface, display.Printable(ex.Check.Value))
	if ex.wholeLine {
		fmt.Fprintf(&b, "  answer for the line as one value: %s (the analysis below decides)\n", ex.Result.Action)
	} else {
		fmt.Fprintf(&b, "  answer: %s\n", ex.Result.Action)
	}
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
	case OriginHardGuard, OriginBuiltin:
		return LayerHardGuard
	case OriginManaged:
		return LayerManaged
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
	if rule.Pattern == "" && rule.Origin == OriginBuiltin {
		return s // "no rule (builtin ask)": no layer to name
	}
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
	// Audit says what audit mode did to the decision, "" when nothing.
	Audit string
}

// audited applies audit mode to the decision and says what it did.
func (p *Policy) audited(d DecisionExplanation) DecisionExplanation {
	r := p.Audit(d.Result)
	if r.Rule.Origin == OriginAudit && d.Result.Rule.Origin != OriginAudit {
		d.Audit = fmt.Sprintf("audit mode: the policy would %s this; it is allowed and logged as would_%s", r.Rule.Action, r.Rule.Action)
	}
	d.Result = r
	return d
}

// ExplainDecision explains Decide(checks...).
func (p *Policy) ExplainDecision(checks ...Check) DecisionExplanation {
	d := DecisionExplanation{Result: p.Decide(checks...)}
	for _, c := range checks {
		d.Surfaces = append(d.Surfaces, p.Explain(c))
	}
	return p.audited(d)
}

// ExplainPath explains DecidePath(a, path).
func (p *Policy) ExplainPath(a Access, path string) DecisionExplanation {
	var buf [4]Check
	checks := pathChecks(&buf, a, path)
	d := DecisionExplanation{Result: p.DecidePath(a, path)}
	for _, c := range checks {
		d.Surfaces = append(d.Surfaces, p.Explain(c))
	}
	return p.audited(d)
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
	if d.Audit != "" {
		fmt.Fprintf(&b, "note: %s\n", d.Audit)
	}
	fmt.Fprintf(&b, "decision: %s\n", d.Result.Action)
	return b.String()
}

// ExplainCommandIn explains a command line on the bash surface: the line
// as one value, and how it is analysed as a script (units, the spellings
// each is judged as, redirects, the files its commands name), whose
// overall result is the decision. ctx says where the line would run: its
// directory (default: the workspace) and a reader for the files it
// sources (shell.FSReader for the file system; nil: not read).
func (p *Policy) ExplainCommandIn(line string, ctx shell.ScriptContext) DecisionExplanation {
	c := Check{Surface: SurfaceBash, Value: line}
	d := DecisionExplanation{Surfaces: []Explanation{p.Explain(c)}}
	d.Extra, d.Result = p.explainScript(line, ctx)
	// The line as one value is one input to the analysis, not the
	// decision: say so, so "allow" above and "ask" below agree.
	d.Surfaces[0].wholeLine = true
	return p.audited(d)
}
