package supervisor

import (
	"strings"
	"testing"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
)

// The denial lines, pinned: what the person reads on the terminal and
// what the agent reads on the denied process's stderr.
func TestDenialLines(t *testing.T) {
	pos := engine.Position{File: "policy.jsonc", Line: 12, Column: 5}
	denyRule := engine.Rule{Surface: engine.SurfaceWrite, Pattern: "/etc/**", Action: engine.Deny, Reason: "system files", Origin: engine.OriginGlobal, Pos: pos}
	askRule := engine.Rule{Surface: engine.SurfaceWrite, Pattern: "/srv/**", Action: engine.Ask, Origin: engine.OriginGlobal, Pos: pos}
	bashRule := engine.Rule{Surface: engine.SurfaceBash, Pattern: "rm *", Action: engine.Deny, Reason: "no deleting", Origin: engine.OriginGlobal, Pos: pos}
	const id = authority.RequestID("0190a0b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b")
	write := func(path string, r engine.Rule) verdict {
		return verdict{result: engine.Result{Action: r.Action, Rule: r}, access: "write", value: path}
	}
	exec := verdict{result: engine.Result{Action: engine.Deny, Rule: bashRule}, access: "exec", value: "bash -c 'rm -rf /srv/x; echo $SECRET'",
		exec: &engine.ExecDecision{Decider: "rm -rf /srv/x (via bash -c)"}}

	for _, c := range []struct {
		name          string
		v             verdict
		d             authority.Decision
		program       string
		person, agent string
	}{
		{"rule", write("/etc/hosts", denyRule), authority.FromRule(denyRule), "",
			"permwrap: denied write /etc/hosts: system files — rule write:/etc/** (deny, policy.jsonc:12:5); request " + string(id),
			"permwrap: denied write /etc/hosts: system files — rule write:/etc/** (deny, policy.jsonc:12:5); request " + string(id)},
		{"exec names the program, never the command body, to the agent", exec, authority.FromRule(bashRule), "bash",
			"permwrap: denied exec bash -c 'rm -rf /srv/x; echo $SECRET' (rm -rf /srv/x (via bash -c)): no deleting — rule bash:rm * (deny, policy.jsonc:12:5); request " + string(id),
			"permwrap: denied exec of bash: no deleting — rule bash:rm * (deny, policy.jsonc:12:5); request " + string(id)},
		// Issue 10: "confirmation unavailable (unavailable: confirmation unavailable)" named nothing.
		{"headless ask names the rule that asked", write("/srv/a", askRule),
			authority.Denied(authority.ByUnavailable{Reason: authority.ReasonUnavailable}, authority.ReasonUnavailable), "",
			"permwrap: denied write /srv/a: confirmation unavailable — asked by rule write:/srv/** (ask, policy.jsonc:12:5); request " + string(id), ""},
		{"timed out", write("/srv/a", askRule),
			authority.Denied(authority.ByUnavailable{Reason: authority.ReasonTimedOut}, authority.ReasonTimedOut), "",
			"permwrap: denied write /srv/a: timed out waiting for confirmation — asked by rule write:/srv/** (ask, policy.jsonc:12:5); request " + string(id), ""},
		{"no rule asked", write("/srv/a", engine.Rule{Surface: engine.SurfaceWrite, Action: engine.Ask, Origin: engine.OriginBuiltin}),
			authority.Denied(authority.ByUnavailable{Reason: authority.ReasonUnavailable}, authority.ReasonUnavailable), "",
			"permwrap: denied write /srv/a: confirmation unavailable — asked because no rule matched (the built-in answer is ask); request " + string(id), ""},
		{"person's reason", write("/srv/a", askRule), authority.Denied(authority.ByUser{Via: "dialog"}, "use ./tmp instead"), "",
			"permwrap: denied write /srv/a: use ./tmp instead — by the person at the prompt; request " + string(id), ""},
		{"person's plain deny", write("/srv/a", askRule), authority.Denied(authority.ByUser{Via: "dialog"}, authority.ReasonDeniedByUser), "",
			"permwrap: denied write /srv/a — by the person at the prompt; request " + string(id), ""},
		{"dismissed", write("/srv/a", askRule), authority.Denied(authority.ByUser{Via: "dialog"}, authority.ReasonDismissed), "",
			"permwrap: denied write /srv/a — dismissed at the prompt; request " + string(id), ""},
		{"always deny earlier", write("/srv/a", askRule), authority.Denied(authority.ByUser{Via: "always deny"}, authority.ReasonDeniedByUser), "",
			`permwrap: denied write /srv/a — by the person's "always deny" earlier in this run; request ` + string(id), ""},
		{"reviewer", write("/srv/a", askRule), authority.Denied(authority.ByAuthorizer{Name: "typo-path", Verdict: authority.VerdictDeny, Reason: "did you mean /srv/b?"}, "did you mean /srv/b?"), "",
			"permwrap: denied write /srv/a: did you mean /srv/b? — reviewer typo-path; request " + string(id), ""},
		{"hostile path is escaped", write("/tmp/\x1b[2J\u202eevil\n", denyRule), authority.FromRule(denyRule), "",
			`permwrap: denied write /tmp/\x1b[2J\u202eevil\n: system files — rule write:/etc/** (deny, policy.jsonc:12:5); request ` + string(id), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dn := newDenial(c.v, c.d, id, c.program)
			if got := dn.forPerson(); got != c.person {
				t.Errorf("person's line:\n  %s\nwant\n  %s", got, c.person)
			}
			if c.agent != "" {
				if got := dn.forAgent(); got != c.agent {
					t.Errorf("agent's line:\n  %s\nwant\n  %s", got, c.agent)
				}
			}
		})
	}
}

func TestAgentLineBounded(t *testing.T) {
	v := verdict{result: engine.Result{Action: engine.Deny}, access: "write", value: "/" + strings.Repeat("é", 4000)}
	line := newDenial(v, authority.Denied(authority.ByError{Reason: "x"}, "x"), "", "").forAgent()
	if len(line) > maxAgentLine || !strings.HasSuffix(line, "…") {
		t.Fatalf("agent line of %d bytes: %q…", len(line), line[:40])
	}
	if !strings.HasPrefix(line, "permwrap: denied write /é") || strings.ContainsRune(line, '\uFFFD') {
		t.Fatalf("cut inside a character: %q", line[len(line)-10:])
	}
}
