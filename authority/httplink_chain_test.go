package authority

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

// remoteChain is a chain whose first link is a remote reviewer answering
// body, then the links in more, then term.
func remoteChain(t *testing.T, body string, d engine.Delegation, more map[string]Authorizer, order []string, term Terminal) (*Chain, func() []map[string]any) {
	t.Helper()
	srv := newReviewServer(t, jsonAnswer(body))
	_, links, timeouts := remoteLink(t, srv.spec(""))
	for k, v := range more {
		links[k] = v
	}
	l, records := testLog(t)
	cfg := ChainConfig{Links: append([]string{"team-review"}, order...), Timeouts: timeouts, Delegation: d}
	return NewChain(cfg, links, term, l, nil), records
}

// The delegation envelope holds for a remote reviewer as for an exec
// link: its allow outside the envelope becomes defer, and the ask goes
// on to the terminal.
func TestRemoteReviewerEnvelope(t *testing.T) {
	allow := `{"verdict": "allow", "reason": "looks fine"}`
	outside := []struct {
		name string
		d    engine.Delegation
		req  Request
		note string
	}{
		{"surface not delegated", engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceBash}}, writeAsk("/w/x"), "surface write is not delegated"},
		{"surface excluded", engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceWrite}, ExcludedSurfaces: []engine.Surface{engine.SurfaceWrite}}, writeAsk("/w/x"), "surface write is excluded"},
		{"secret-shaped path", engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceWrite}}, writeAsk("/w/.ssh/authorized_keys"), "touches a secret-shaped path"},
	}
	for _, tc := range outside {
		t.Run(tc.name, func(t *testing.T) {
			term := &recTerm{}
			ch, records := remoteChain(t, allow, tc.d, nil, nil, term)
			d := ch.Resolve(context.Background(), tc.req)
			if len(term.reached) != 1 || d.DecidedBy().Kind() != "user" {
				t.Fatalf("the reviewer's allow outside the envelope stood: %v by %v", d.Action(), d.DecidedBy())
			}
			o := chainOutcome(t, records())
			if o.Verdict != "defer" || !strings.Contains(o.Note, "allow downgraded: "+tc.note) || o.Reason != "looks fine" {
				t.Errorf("outcome %+v", o)
			}
		})
	}
	// Control: inside the envelope the allow stands.
	term := &recTerm{}
	ch, _ := remoteChain(t, allow, engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceWrite}}, nil, nil, term)
	d := ch.Resolve(context.Background(), writeAsk("/w/x"))
	by, ok := d.DecidedBy().(ByAuthorizer)
	if d.Action() != engine.Allow || !ok || by.Name != "team-review" || by.Reason != "looks fine" || len(term.reached) != 0 {
		t.Errorf("inside the envelope: %v by %#v, terminal reached %d", d.Action(), d.DecidedBy(), len(term.reached))
	}
}

// A remote reviewer's deny ends the chain: no later link, no terminal.
func TestRemoteReviewerDenyStopsChain(t *testing.T) {
	after := &fixed{v: VerdictAllow}
	term := &recTerm{}
	ch, _ := remoteChain(t, `{"verdict": "deny", "reason": "not on a Friday"}`, engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceWrite}},
		map[string]Authorizer{"after": after}, []string{"after"}, term)
	d := ch.Resolve(context.Background(), writeAsk("/w/x"))
	by, ok := d.DecidedBy().(ByAuthorizer)
	if d.Action() != engine.Deny || d.Reason() != "not on a Friday" || !ok || by.Name != "team-review" {
		t.Errorf("got %v %q by %#v", d.Action(), d.Reason(), d.DecidedBy())
	}
	if after.n() != 0 || len(term.reached) != 0 {
		t.Errorf("after the deny: next link called %d times, terminal %d", after.n(), len(term.reached))
	}
}

// A remote reviewer's defer goes on: to the next link, then the terminal.
func TestRemoteReviewerDeferGoesOn(t *testing.T) {
	after := &fixed{v: VerdictDefer}
	term := &recTerm{}
	ch, records := remoteChain(t, `{"verdict": "defer", "reason": "nobody answered"}`, engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceWrite}},
		map[string]Authorizer{"after": after}, []string{"after"}, term)
	d := ch.Resolve(context.Background(), writeAsk("/w/x"))
	if after.n() != 1 || len(term.reached) != 1 || d.DecidedBy().Kind() != "user" {
		t.Errorf("next link %d, terminal %d, decided by %v", after.n(), len(term.reached), d.DecidedBy())
	}
	if o := chainOutcome(t, records()); o.Name != "team-review" || o.Verdict != "defer" || o.Reason != "nobody answered" || o.Note != "" {
		t.Errorf("outcome %+v", o)
	}
}

// chainOutcome is the first link's outcome in the chain's record.
func chainOutcome(t *testing.T, recs []map[string]any) LinkOutcome {
	t.Helper()
	for _, rec := range recs {
		if rec["event"] == string(EventChainResolved) {
			var o LinkOutcome
			b, _ := json.Marshal(rec["links"].([]any)[0])
			if err := json.Unmarshal(b, &o); err != nil {
				t.Fatal(err)
			}
			return o
		}
	}
	t.Fatalf("no %s record in %v", EventChainResolved, recs)
	return LinkOutcome{}
}
