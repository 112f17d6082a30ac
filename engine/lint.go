package engine

import (
	"fmt"
	"path"
)

// execProbes are ordinary program starts: if the policy asks about every
// one of them, it asks about every program, and a run without a person
// to answer cannot start anything.
var execProbes = [][]string{
	{"/usr/bin/env", "env"},
	{"/bin/sh", "sh", "-c", "true"},
	{"/usr/bin/git", "git", "status"},
	{"/usr/bin/make", "make"},
}

// EveryExecAsks reports whether the policy would ask about every program
// start, with a sentence saying why and what to do; "" when it does not.
// `permwrap check` and every run warn about it: such a policy is usually
// an empty or one-rule policy.jsonc with "extends": "none".
func (p *Policy) EveryExecAsks() string {
	var first ExecDecision
	for i, probe := range execProbes {
		d := p.DecideExec(ExecIntent{Path: probe[0], Resolved: probe[0], Argv: probe[1:], Cwd: p.env.Workspace})
		if d.Result.Action != Ask {
			return ""
		}
		if i == 0 {
			first = d
		}
	}
	if ws := p.env.Workspace; ws != "" {
		script := path.Join(ws, "run.sh")
		if d := p.DecideExec(ExecIntent{Path: script, Resolved: script, Argv: []string{"./run.sh"}, Cwd: ws}); d.Result.Action != Ask {
			return ""
		}
	}
	fix := `allow programs with "exec": "allow" (the default profile does)`
	if p.base == ExtendsNone || p.base == "" {
		fix += ` or drop "extends": "none" to build on the default profile`
	}
	return fmt.Sprintf("every program start asks (exec %s: %s), so a run with nobody to answer cannot start anything; %s",
		execProbes[0][0], describeRule(first.Result), fix)
}
