package authority

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/testutil"
)

// fixed is a link that always answers the same, and counts its calls.
type fixed struct {
	v      Verdict
	reason string
	err    error
	mu     sync.Mutex
	calls  int
}

func (f *fixed) Review(ctx context.Context, r Request, q Querier) (Verdict, string, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	return f.v, f.reason, f.err
}

func (f *fixed) n() int { f.mu.Lock(); defer f.mu.Unlock(); return f.calls }

// recTerm is a terminal that records whether it was reached.
type recTerm struct {
	human   bool
	answer  func(Request) Decision
	reached []Request
}

func (t *recTerm) Name() string { return "test-terminal" }
func (t *recTerm) Human() bool  { return t.human }
func (t *recTerm) Decide(_ context.Context, r Request) Decision {
	t.reached = append(t.reached, r)
	if t.answer != nil {
		return t.answer(r)
	}
	return Denied(ByUser{Via: "dialog"}, "terminal said no")
}

func bashAsk(cmd string) Request {
	r := NewRequest(engine.Check{Surface: engine.SurfaceBash, Value: cmd})
	r.Access = "exec"
	r.Suggested = []SessionPattern{{Surface: engine.SurfaceBash, Pattern: "git push *"}}
	return r
}

func allowBash() ChainConfig {
	return ChainConfig{Delegation: engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceBash, engine.SurfaceWrite, engine.SurfaceRead}}}
}

// logLines opens a log over a buffer and returns it with a reader of its records.
func testLog(t *testing.T) (*Log, func() []map[string]any) {
	t.Helper()
	var buf testutil.SyncBuffer
	l := NewLogWriter(&buf, LogOptions{})
	return l, func() []map[string]any {
		t.Helper()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		return testutil.ParseRecords(t, "log", buf.Bytes())
	}
}

func TestChainStopsAtFirstDecidingLink(t *testing.T) {
	a, b, c := &fixed{v: VerdictDefer}, &fixed{v: VerdictDeny, reason: "use the other repo"}, &fixed{v: VerdictAllow}
	term := &recTerm{}
	cfg := allowBash()
	cfg.Links = []string{"a", "b", "c"}
	ch := NewChain(cfg, map[string]Authorizer{"a": a, "b": b, "c": c}, term, nil, nil)
	d := ch.Resolve(context.Background(), bashAsk("git push"))
	if d.Action() != engine.Deny || d.Reason() != "use the other repo" {
		t.Fatalf("got %v", d)
	}
	by, ok := d.DecidedBy().(ByAuthorizer)
	if !ok || by.Name != "b" || by.Verdict != VerdictDeny {
		t.Fatalf("decidedBy = %#v", d.DecidedBy())
	}
	if a.n() != 1 || b.n() != 1 || c.n() != 0 || len(term.reached) != 0 {
		t.Fatalf("calls a=%d b=%d c=%d terminal=%d", a.n(), b.n(), c.n(), len(term.reached))
	}
}

func TestChainDefersToTerminal(t *testing.T) {
	a, b := &fixed{v: VerdictDefer}, &fixed{v: VerdictDefer}
	term := &recTerm{answer: func(Request) Decision { return Allowed(ByUser{Via: "dialog"}) }}
	cfg := allowBash()
	cfg.Links = []string{"a", "b"}
	l, records := testLog(t)
	r := bashAsk("git push")
	d := NewChain(cfg, map[string]Authorizer{"a": a, "b": b}, term, l, nil).Resolve(context.Background(), r)
	if d.Action() != engine.Allow || d.DecidedBy().Kind() != "user" {
		t.Fatalf("got %v", d)
	}
	recs := records()
	if len(recs) != 1 || recs[0]["event"] != string(EventChainResolved) || recs[0]["requestId"] != string(r.ID) {
		t.Fatalf("records %v", recs)
	}
	links := recs[0]["links"].([]any)
	if len(links) != 2 || links[0].(map[string]any)["name"] != "a" || links[1].(map[string]any)["verdict"] != "defer" {
		t.Fatalf("links %v", links)
	}
}

func TestChainConfigOrderBeatsDefinitionOrder(t *testing.T) {
	// Go maps have no order, so "definition order" is whatever the config
	// file said; the chain must follow Links alone.
	for _, order := range [][]string{{"allower", "denier"}, {"denier", "allower"}} {
		cfg := allowBash()
		cfg.Links = order
		reg := map[string]Authorizer{"denier": &fixed{v: VerdictDeny, reason: "no"}, "allower": &fixed{v: VerdictAllow}}
		d := NewChain(cfg, reg, &recTerm{}, nil, nil).Resolve(context.Background(), bashAsk("ls"))
		if got := d.DecidedBy().(ByAuthorizer).Name; got != order[0] {
			t.Fatalf("order %v decided by %q", order, got)
		}
	}
}

func TestChainSkipsUnregisteredName(t *testing.T) {
	b := &fixed{v: VerdictDefer}
	term := &recTerm{}
	var warnings []string
	cfg := allowBash()
	cfg.Links = []string{"ghost", "b"}
	cfg.Warn = func(m string) { warnings = append(warnings, m) }
	l, records := testLog(t)
	ch := NewChain(cfg, map[string]Authorizer{"b": b}, term, l, nil)
	r := bashAsk("git push")
	ch.Resolve(context.Background(), r)
	ch.Resolve(context.Background(), bashAsk("git push"))
	if b.n() != 2 || len(term.reached) != 2 {
		t.Fatalf("b=%d terminal=%d", b.n(), len(term.reached))
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], `"ghost"`) {
		t.Fatalf("warnings %q", warnings)
	}
	var unreg int
	for _, rec := range records() {
		if rec["event"] == string(EventUnregisteredLink) {
			unreg++
			if rec["name"] != "ghost" || rec["requestId"] == "" {
				t.Fatalf("record %v", rec)
			}
		}
	}
	if unreg != 2 {
		t.Fatalf("unregistered_link records: %d, want one per ask", unreg)
	}
}

func TestChainUnnamedLinkDecidesNothing(t *testing.T) {
	defined := &fixed{v: VerdictAllow}
	term := &recTerm{}
	cfg := allowBash() // Links empty: the operator named nothing
	d := NewChain(cfg, map[string]Authorizer{"judge": defined}, term, nil, nil).Resolve(context.Background(), bashAsk("rm -rf /"))
	if defined.n() != 0 || len(term.reached) != 1 || d.DecidedBy().Kind() != "user" {
		t.Fatalf("defined link consulted %d times; terminal %d; %v", defined.n(), len(term.reached), d)
	}
}

func TestChainEnvelopeDowngradesAllow(t *testing.T) {
	cases := []struct {
		name string
		cfg  engine.Delegation
		req  Request
	}{
		{"excluded surface", engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceBash, engine.SurfaceWrite}, ExcludedSurfaces: []engine.Surface{engine.SurfaceWrite}},
			NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: "/home/u/p/x"})},
		{"surface not allowed", engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceBash}},
			NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/home/u/p/x"})},
		{"nothing delegated", engine.Delegation{}, bashAsk("ls")},
		{"secret path", engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceRead}},
			NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/home/u/.ssh/config"})},
		{"secret in command", engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceBash}}, bashAsk("cat ~/.aws/credentials")},
		{"pem", engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceRead}},
			NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/srv/tls/server.pem"})},
		{"dotenv in units", engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceBash}},
			func() Request { r := bashAsk("sh x.sh"); r.Units = []string{"echo hi", "source .env.local"}; return r }()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			link := &fixed{v: VerdictAllow}
			term := &recTerm{}
			d := NewChain(ChainConfig{Links: []string{"j"}, Delegation: tc.cfg}, map[string]Authorizer{"j": link}, term, nil, nil).Resolve(context.Background(), tc.req)
			if link.n() != 1 || len(term.reached) != 1 || d.DecidedBy().Kind() != "user" {
				t.Fatalf("allow was not downgraded: %v (terminal reached %d)", d, len(term.reached))
			}
		})
	}
	// Control: inside the envelope, the allow stands.
	link := &fixed{v: VerdictAllow}
	d := NewChain(ChainConfig{Links: []string{"j"}, Delegation: engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceRead}}}, map[string]Authorizer{"j": link}, &recTerm{}, nil, nil).
		Resolve(context.Background(), NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/home/u/p/main.go"}))
	if d.Action() != engine.Allow || d.DecidedBy().Kind() != "authorizer" {
		t.Fatalf("allow inside envelope: %v", d)
	}
	// A deny is never downgraded, even outside the envelope.
	d = NewChain(ChainConfig{Links: []string{"j"}}, map[string]Authorizer{"j": &fixed{v: VerdictDeny, reason: "r"}}, &recTerm{}, nil, nil).
		Resolve(context.Background(), NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/home/u/.ssh/id_rsa"}))
	if d.Action() != engine.Deny || d.DecidedBy().Kind() != "authorizer" {
		t.Fatalf("deny outside envelope: %v", d)
	}
}

type hang struct{ started chan struct{} }

func (h hang) Review(ctx context.Context, r Request, q Querier) (Verdict, string, error) {
	close(h.started)
	<-ctx.Done()
	time.Sleep(50 * time.Millisecond) // answers late, after the chain moved on
	return VerdictAllow, "", nil
}

func TestChainFailingLinksDefer(t *testing.T) {
	links := map[string]Authorizer{
		"err":   &fixed{v: VerdictAllow, err: errors.New("backend down")},
		"zero":  &fixed{},
		"weird": &fixed{v: Verdict(77)},
		"panic": AuthorizerFunc(func(context.Context, Request, Querier) (Verdict, string, error) { panic("boom") }),
		"slow":  hang{started: make(chan struct{})},
	}
	for name := range links {
		t.Run(name, func(t *testing.T) {
			term := &recTerm{}
			cfg := allowBash()
			cfg.Links = []string{name}
			cfg.Timeouts = map[string]time.Duration{"slow": 20 * time.Millisecond}
			l, records := testLog(t)
			d := NewChain(cfg, links, term, l, nil).Resolve(context.Background(), bashAsk("git push"))
			if len(term.reached) != 1 || d.DecidedBy().Kind() != "user" {
				t.Fatalf("%s: %v", name, d)
			}
			recs := records()
			o := recs[len(recs)-1]["links"].([]any)[0].(map[string]any)
			if o["verdict"] != "defer" || o["note"] == nil {
				t.Fatalf("outcome %v", o)
			}
		})
	}
}

func TestChainHumanOnly(t *testing.T) {
	link := &fixed{v: VerdictAllow}
	r := NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: "/home/u/.bashrc"})
	r.HumanOnly = true
	r.Suggested = []SessionPattern{{Surface: engine.SurfaceWrite, Pattern: "/home/u/.bashrc"}}
	cfg := ChainConfig{Links: []string{"j"}, Delegation: engine.Delegation{AllowedSurfaces: engine.Surfaces}}

	// A human terminal is reached with no session option, and cannot add one.
	term := &recTerm{human: true, answer: func(r Request) Decision {
		return AllowedForSession(ByUser{Via: "dialog"}, SessionPattern{Surface: engine.SurfaceWrite, Pattern: "/home/u/**"})
	}}
	d := NewChain(cfg, map[string]Authorizer{"j": link}, term, nil, nil).Resolve(context.Background(), r)
	if link.n() != 0 {
		t.Fatal("a link was consulted for a human-only request")
	}
	if len(term.reached) != 1 || len(term.reached[0].Suggested) != 0 {
		t.Fatalf("terminal saw %+v", term.reached)
	}
	if len(d.SessionRules()) != 0 || d.Action() != engine.Allow {
		t.Fatalf("human-only decision %v", d)
	}

	// Any other terminal denies.
	d = NewChain(cfg, map[string]Authorizer{"j": link}, DenyingTerminal{}, nil, nil).Resolve(context.Background(), r)
	if d.Action() != engine.Deny || d.DecidedBy().Kind() != "unavailable" || link.n() != 0 {
		t.Fatalf("headless human-only: %v", d)
	}
}

func TestDenyingTerminal(t *testing.T) {
	d := NewChain(ChainConfig{}, nil, DenyingTerminal{}, nil, nil).Resolve(context.Background(), bashAsk("ls"))
	if d.Action() != engine.Deny || d.Reason() != ReasonUnavailable {
		t.Fatalf("%v", d)
	}
	if u, ok := d.DecidedBy().(ByUnavailable); !ok || u.Reason != ReasonUnavailable {
		t.Fatalf("%#v", d.DecidedBy())
	}
}

func TestLinkSeesQuerier(t *testing.T) {
	q := QuerierFunc(func(c engine.Check) QueryResult {
		if c.Value == "git push --force" {
			return QueryResult{Action: engine.Deny, Rule: engine.Rule{Surface: engine.SurfaceBash, Pattern: "git push --force*", Action: engine.Deny}}
		}
		return QueryResult{Action: engine.Allow}
	})
	link := AuthorizerFunc(func(_ context.Context, r Request, q Querier) (Verdict, string, error) {
		for _, u := range r.Units {
			if q.Query(engine.Check{Surface: engine.SurfaceBash, Value: u}).Action == engine.Deny {
				return VerdictDeny, u + " is denied by policy", nil
			}
		}
		return VerdictDefer, "", nil
	})
	r := bashAsk("bash -c '...'")
	r.Units = []string{"ls", "git push --force"}
	d := NewChain(ChainConfig{Links: []string{"j"}}, map[string]Authorizer{"j": link}, DenyingTerminal{}, nil, q).Resolve(context.Background(), r)
	if d.Reason() != "git push --force is denied by policy" {
		t.Fatalf("%v", d)
	}
}

func TestFromRule(t *testing.T) {
	cases := []struct {
		rule engine.Rule
		kind string
		act  engine.Action
	}{
		{engine.Rule{Surface: engine.SurfaceWrite, Pattern: "/etc/**", Action: engine.Deny, Origin: engine.OriginGlobal, Reason: "system files"}, "rule", engine.Deny},
		{engine.Rule{Surface: engine.SurfaceBash, Pattern: "git checkout *", Action: engine.Allow, Origin: engine.OriginSession}, "session_approval", engine.Allow},
		{engine.Rule{Surface: engine.SurfaceBash, Pattern: "npm *", Action: engine.Allow, Origin: engine.OriginYolo}, "yolo", engine.Allow},
		{engine.Rule{Surface: engine.SurfaceBash, Pattern: "npm *", Action: engine.Ask, Origin: engine.OriginGlobal}, "error", engine.Deny},
	}
	for _, c := range cases {
		d := FromRule(c.rule)
		if d.DecidedBy().Kind() != c.kind || d.Action() != c.act {
			t.Errorf("%v → %v", c.rule, d)
		}
	}
	if d := FromRule(cases[0].rule); d.Reason() != "system files" {
		t.Errorf("reason %q", d.Reason())
	}
}
