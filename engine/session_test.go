package engine

import "testing"

// A person's "always deny" holds for the rest of the run as a session
// deny: it answers what would otherwise ask them again, and nothing else.
func TestSessionDeny(t *testing.T) {
	global := `{"extends": "none", "permission": {
		"*": "ask",
		"write": {"/w/**": "ask", "/w/free/**": "allow", "/w/no/**": {"action": "deny", "reason": "policy says no"}},
		"path": {"/p/**": "allow"},
		"bash": {"*": "allow", "git *": "ask", "git status": "allow"}
	}}`
	hard := `{"permission": {"write": {"/w/hardask/**": "ask"}}, "protectedWrites": ["/w/prot/**"]}`
	p, _ := compile(t, global, withHard(hard))
	for _, sp := range []SessionPattern{
		{SurfaceWrite, "/w/**"},
		{SurfaceBash, "git *"},
		{SurfaceWrite, "/p/**"},
	} {
		r, err := p.AddSessionDeny(sp.Surface, sp.Pattern)
		if err != nil {
			t.Fatal(err)
		}
		if r.Action != Deny || r.Origin != OriginSession {
			t.Fatalf("AddSessionDeny gave %v", r)
		}
	}

	// An ask becomes a deny, by the session rule.
	r := p.DecidePath(AccessWrite, "/w/x")
	if r.Action != Deny || r.Layer != LayerSession || r.Rule.Origin != OriginSession || r.Rule.Pattern != "/w/**" || r.Rule.Action != Deny {
		t.Errorf("an ask the person always-denied: %v", r)
	}
	if r := p.EvaluateAny(SurfaceBash, "git push origin main"); r.Action != Deny || r.Layer != LayerSession {
		t.Errorf("bash ask: %v", r)
	}
	// A policy allow stays an allow, on the same surface...
	if r := p.DecidePath(AccessWrite, "/w/free/x"); r.Action != Allow || r.Layer != LayerPolicy {
		t.Errorf("a policy allow was overridden: %v", r)
	}
	if r := p.EvaluateAny(SurfaceBash, "git status"); r.Action != Allow {
		t.Errorf("a policy allow was overridden: %v", r)
	}
	// ... a policy deny keeps its rule and reason ...
	if r := p.DecidePath(AccessWrite, "/w/no/x"); r.Action != Deny || r.Layer != LayerPolicy || r.Rule.Reason != "policy says no" {
		t.Errorf("a policy deny: %v", r)
	}
	// ... and what only a person may approve still asks them (as the
	// saved rule would next run).
	for _, path := range []string{"/w/prot/x", "/w/hardask/x"} {
		if r := p.DecidePath(AccessWrite, path); r.Action != Ask || !r.HumanOnly {
			t.Errorf("%s: %v", path, r)
		}
	}
	// Across surfaces it composes like any rule: the write check denies
	// (the saved rule will do the same).
	if r := p.DecidePath(AccessWrite, "/p/x"); r.Action != Deny || r.Layer != LayerSession {
		t.Errorf("/p/x: %v", r)
	}
	// Reads are another surface: untouched.
	if r := p.DecidePath(AccessRead, "/w/x"); r.Action != Ask {
		t.Errorf("read /w/x: %v", r)
	}

	// The most specific session rule decides: a later "allow for this
	// session" of a narrower pattern lifts the ask there only.
	if _, err := p.AddSessionRule(SurfaceWrite, "/w/ok/**"); err != nil {
		t.Fatal(err)
	}
	if r := p.DecidePath(AccessWrite, "/w/ok/a"); r.Action != Allow || r.Layer != LayerSession {
		t.Errorf("narrower session allow: %v", r)
	}
	if r := p.DecidePath(AccessWrite, "/w/other"); r.Action != Deny {
		t.Errorf("outside the narrower allow: %v", r)
	}
	// And a narrower deny inside a broader session allow.
	if _, err := p.AddSessionDeny(SurfaceWrite, "/w/ok/secret"); err != nil {
		t.Fatal(err)
	}
	if r := p.DecidePath(AccessWrite, "/w/ok/secret"); r.Action != Deny || r.Rule.Pattern != "/w/ok/secret" {
		t.Errorf("narrower session deny: %v", r)
	}

	// The session's rules, in order, with their actions (the review log's
	// session.rules record).
	rules := p.SessionRules()
	if len(rules) != 5 || rules[0].Action != Deny || rules[3].Action != Allow || rules[4].Action != Deny {
		t.Errorf("SessionRules = %v", rules)
	}

	// A script whose unit the person always-denied is denied at exec.
	d := p.DecideExec(ExecIntent{Path: "/bin/bash", Resolved: "/bin/bash", Argv: []string{"bash", "-c", "git push && echo ok"}, Cwd: "/w"})
	if d.Result.Action != Deny || d.Result.Layer != LayerSession {
		t.Errorf("a script with an always-denied unit: %v", d.Result)
	}
}

// Yolo answers asks with allow; a session deny never turns that back
// (nobody is asked in yolo mode, so none is ever given).
func TestSessionDenyYolo(t *testing.T) {
	p, _ := compile(t, `{"extends": "none", "permission": {"*": "ask"}}`, withYolo)
	if _, err := p.AddSessionDeny(SurfaceWrite, "/w/**"); err != nil {
		t.Fatal(err)
	}
	if r := p.DecidePath(AccessWrite, "/w/x"); r.Action != Allow {
		t.Errorf("yolo: %v", r)
	}
}
