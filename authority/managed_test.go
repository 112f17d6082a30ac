package authority

import (
	"context"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

func managedAsk() Request {
	r := bashAsk("git push origin main")
	r.HumanOnly, r.Managed = true, true
	r.Rule = engine.Rule{Surface: engine.SurfaceBash, Pattern: "git push *", Action: engine.Ask, Origin: engine.OriginManaged,
		Pos: engine.Position{File: "/etc/permwrap/managed.jsonc", Line: 4, Column: 7}}
	return r
}

// TestChainManaged: a managed ask meets the managed policy's reviewers,
// then a person for "allow once" only; the user's links never see it;
// headless it is denied.
func TestChainManaged(t *testing.T) {
	user := &fixed{v: VerdictAllow}
	cfg := allowBash()
	cfg.Links = []string{"mine"}
	userReg := map[string]Authorizer{"mine": user}
	withManaged := func(v Verdict, names ...string) (ChainConfig, *fixed) {
		m := &fixed{v: v, reason: "team reviewer says " + v.String()}
		c := cfg
		c.Managed = &ManagedLinks{Links: names, Registry: map[string]Authorizer{"team": m}}
		return c, m
	}
	// The managed reviewer decides, either way.
	for _, v := range []Verdict{VerdictAllow, VerdictDeny} {
		c, m := withManaged(v, "team")
		term := &recTerm{human: true}
		d := NewChain(c, userReg, term, nil, nil).Resolve(context.Background(), managedAsk())
		want := engine.Allow
		if v == VerdictDeny {
			want = engine.Deny
		}
		if d.Action() != want || m.n() != 1 || user.n() != 0 || len(term.reached) != 0 {
			t.Errorf("managed reviewer %v: %v (managed calls %d, user calls %d, terminal %d)", v, d, m.n(), user.n(), len(term.reached))
		}
		if by, ok := d.DecidedBy().(ByAuthorizer); !ok || by.Name != "managed:team" {
			t.Errorf("decided by %v", d.DecidedBy())
		}
	}
	// It defers (or is not defined): a person, allow once only, even
	// when the terminal answers for the session.
	for _, names := range [][]string{{"team"}, {"missing"}, nil} {
		c, _ := withManaged(VerdictDefer, names...)
		term := &recTerm{human: true, answer: func(r Request) Decision {
			return AllowedForSession(ByUser{Via: "dialog"}, SessionPattern{Surface: engine.SurfaceBash, Pattern: "git push *"})
		}}
		d := NewChain(c, userReg, term, nil, nil).Resolve(context.Background(), managedAsk())
		if d.Action() != engine.Allow || len(d.SessionRules()) != 0 || len(d.Saved()) != 0 {
			t.Errorf("%v: %v, want allow once", names, d)
		}
		if len(term.reached) != 1 || len(term.reached[0].Suggested) != 0 || !term.reached[0].Managed {
			t.Errorf("%v: the terminal saw %+v", names, term.reached)
		}
		if user.n() != 0 {
			t.Errorf("%v: the user's reviewer was consulted for a managed ask", names)
		}
	}
	// Headless: denied, the user's reviewer not consulted.
	c, _ := withManaged(VerdictDefer, "team")
	d := NewChain(c, userReg, DenyingTerminal{}, nil, nil).Resolve(context.Background(), managedAsk())
	if d.Action() != engine.Deny || !strings.Contains(d.Reason(), "managed policy") || user.n() != 0 {
		t.Errorf("headless managed ask: %v (reason %q)", d, d.Reason())
	}
	// The same request without Managed goes to the user's reviewer:
	// the test would see a chain that ignored the flag.
	plain := bashAsk("git push origin main")
	if d := NewChain(cfg, userReg, DenyingTerminal{}, nil, nil).Resolve(context.Background(), plain); d.Action() != engine.Allow || user.n() != 1 {
		t.Errorf("an ordinary ask: %v", d)
	}
}

// TestPromptManagedAllowOnceOnly: the prompt for a managed ask offers
// "allow once" and deny, no session or "always" option, and says why.
func TestPromptManagedAllowOnceOnly(t *testing.T) {
	pf := policyFile(t, userPolicy)
	s := newPtyScreen(t)
	r := managedAsk()
	_, ch := runPromptWith(t, s, PromptOptions{Policy: pf}, r)
	s.waitFor(t, "Show the full request")
	text := s.screenText()
	if strings.Contains(text, "Always") || strings.Contains(text, "session") || !strings.Contains(text, "Allow once") {
		t.Fatalf("managed prompt offers more than once or deny:\n%s", text)
	}
	if !strings.Contains(text, "managed policy") {
		t.Fatalf("managed prompt does not say the managed policy asks:\n%s", text)
	}
	s.typeKeys(t, keyEsc)
	if d := await(t, ch); d.Action() != engine.Deny {
		t.Fatalf("%v", d)
	}
}
