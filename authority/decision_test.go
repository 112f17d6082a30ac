package authority

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

func TestDecisionZeroValueDenies(t *testing.T) {
	var d Decision
	if d.Action() != engine.Deny || d.DecidedBy().Kind() != "error" {
		t.Fatalf("zero decision: %v", d)
	}
	if d := Allowed(nil); d.Action() != engine.Deny {
		t.Fatalf("allow without provenance: %v", d)
	}
	if d := AllowedForSession(nil, SessionPattern{engine.SurfaceBash, "x *"}); d.Action() != engine.Deny {
		t.Fatal("session allow without provenance allowed")
	} else if len(d.SessionRules()) != 0 {
		t.Fatal("denied decision carries a session rule")
	}
}

func TestDecidedByJSONRoundTrip(t *testing.T) {
	all := []DecidedBy{
		ByUser{Via: "dialog"},
		ByAuthorizer{Name: "typo-path", Verdict: VerdictDeny, Reason: "did you mean /a?"},
		ByRule{Surface: engine.SurfaceWrite, Pattern: "/etc/**", Origin: engine.OriginHardGuard, Pos: engine.Position{File: "/x/hard-guards.jsonc", Line: 12, Column: 5}},
		ByRule{Surface: engine.SurfaceRead, Pattern: "**", Origin: engine.OriginBuiltin},
		BySessionApproval{Surface: engine.SurfaceBash, Pattern: "git checkout *"},
		ByYolo{Pattern: "bash:npm *"},
		ByAudit{Would: engine.Deny, Surface: engine.SurfaceWrite, Pattern: "~/.bashrc", Pos: engine.Position{File: "default.jsonc", Line: 60, Column: 7}},
		ByAudit{Would: engine.Ask, Surface: engine.SurfaceWrite},
		ByRule{Surface: engine.SurfaceWrite, Pattern: "/a/**", Origin: engine.OriginProject, Pos: engine.Position{File: "C:odd:name.jsonc", Line: 3}},
		ByKernel{Errno: "EEXIST", Reason: "the directory exists"},
		ByUnavailable{Reason: ReasonUnavailable},
		ByError{Reason: "unresolvable path"},
		ByForwarded{Responder: "node-1", Decision: ByForwarded{Responder: "node-0", Decision: ByUser{Via: "dialog"}}},
		ByForwarded{Responder: "old"},
	}
	for _, b := range all {
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), `{"kind":"`+b.Kind()+`"`) {
			t.Errorf("%s: %s", b.Kind(), data)
		}
		back, err := ParseDecidedBy(data)
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if back.String() != b.String() {
			t.Errorf("round trip %s: %q != %q", data, back, b)
		}
	}
}

func TestParsePosition(t *testing.T) {
	for in, want := range map[string]engine.Position{
		"":                       {},
		"p.jsonc":                {File: "p.jsonc"},
		"p.jsonc:12":             {File: "p.jsonc", Line: 12},
		"p.jsonc:12:5":           {File: "p.jsonc", Line: 12, Column: 5},
		"a:b.jsonc:3:4":          {File: "a:b.jsonc", Line: 3, Column: 4},
		"a:b":                    {File: "a:b"},
		"p:+1":                   {File: "p:+1"},
		"p:99999999999999999999": {File: "p:99999999999999999999"},
	} {
		if got := parsePosition(in); got != want {
			t.Errorf("parsePosition(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestAuditDecisionsAreLoggedAsWould(t *testing.T) {
	for _, c := range []struct {
		rule engine.Rule
		ev   Event
	}{
		{engine.Rule{Surface: engine.SurfaceWrite, Pattern: "~/.bashrc", Action: engine.Ask, Origin: engine.OriginAudit}, EventWouldAsk},
		{engine.Rule{Surface: engine.SurfaceBash, Pattern: "rm -rf / *", Action: engine.Deny, Origin: engine.OriginAudit}, EventWouldDeny},
		{engine.Rule{Surface: engine.SurfaceWrite, Pattern: "/x", Action: engine.Deny, Origin: engine.OriginGlobal}, EventDenied},
	} {
		d := FromRule(c.rule)
		if got := OutcomeEvent(false, d); got != c.ev {
			t.Errorf("%v: event %s, want %s", c.rule, got, c.ev)
		}
		if c.ev != EventDenied && (d.Action() != engine.Allow || d.DecidedBy().Kind() != "audit") {
			t.Errorf("%v: %v", c.rule, d)
		}
	}
}

// A request that could change nothing is answered, not denied: its own
// event, an errno, and no reason that would read as a policy's.
func TestKernelAnswerIsItsOwnEvent(t *testing.T) {
	d := Answered(ByKernel{Errno: "ENOENT", Reason: "the file does not exist"})
	if d.Action() != engine.Deny {
		t.Fatalf("answered: action %s, want deny (the call did not happen)", d.Action())
	}
	for _, asked := range []bool{false, true} {
		if got := OutcomeEvent(asked, d); got != EventAnswered {
			t.Errorf("asked=%v: event %s, want %s", asked, got, EventAnswered)
		}
	}
	if got := d.DecidedBy().String(); got != "the kernel: ENOENT (the file does not exist), answered without asking" {
		t.Errorf("String() = %q", got)
	}
	if d.Reason() != "" {
		t.Errorf("reason %q: the kernel's answer carries none", d.Reason())
	}
}

func TestParseDecidedByRejects(t *testing.T) {
	for _, in := range []string{``, `null`, `{}`, `{"kind":"martian"}`, `{"kind":"rule","surface":"nett"}`, `{"kind":"authorizer","verdict":"defer"}`, `[1]`, `{"kind":"audit","surface":"write","would":"allow"}`, `{"kind":"kernel","reason":"no errno"}`} {
		if _, err := ParseDecidedBy([]byte(in)); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	// Foreign inner decision: tolerated as unknown.
	b, err := ParseDecidedBy([]byte(`{"kind":"forwarded","responder":"p","decision":{"kind":"telepathy"}}`))
	if err != nil || b.(ByForwarded).Decision != nil {
		t.Fatalf("%v %v", b, err)
	}
	// Too deep: an error, not a stack overflow.
	deep := strings.Repeat(`{"kind":"forwarded","responder":"p","decision":`, 100) + `{"kind":"user","via":"dialog"}` + strings.Repeat(`}`, 100)
	if _, err := ParseDecidedBy([]byte(deep)); !errors.Is(err, ErrForwardTooDeep) {
		t.Fatalf("deep: %v", err)
	}
}

func FuzzParseDecidedBy(f *testing.F) {
	f.Add([]byte(`{"kind":"forwarded","responder":"p","decision":{"kind":"rule","surface":"write","pattern":"/x","origin":"global","position":"a:1:2"}}`))
	f.Add([]byte(`{"kind":"authorizer","name":"j","verdict":"allow"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseDecidedBy(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, err := ParseDecidedBy(out); err != nil {
			t.Fatalf("re-parse %s: %v", out, err)
		}
	})
}

func TestRequestIDs(t *testing.T) {
	prev := NewRequestID()
	for i := 0; i < 10000; i++ {
		id := NewRequestID()
		if !id.Valid() || id[14] != '7' || !strings.ContainsAny(string(id[19:20]), "89ab") {
			t.Fatalf("not a UUIDv7: %s", id)
		}
		if id <= prev {
			t.Fatalf("ids not increasing: %s after %s", id, prev)
		}
		prev = id
	}
	if _, ok := prev.Time(); !ok {
		t.Fatal("no time in id")
	}
	for _, bad := range []RequestID{"", "x", "../../etc/passwd-0000-0000-0000-000000", "0190a0b0-0000-7000-8000-00000000000g"} {
		if bad.Valid() {
			t.Errorf("%q valid", bad)
		}
	}
}

// A decision's session rules go into the policy with its action: allows
// for "allow for this session", denies for "always deny"; the log
// records the ones that hold.
func TestDecisionAddSessionRules(t *testing.T) {
	p, _, err := engine.Compile(engine.Config{Env: engine.Env{Home: "/h", Workspace: "/w", TmpDir: "/tmp"},
		Global: &engine.File{Name: "policy.jsonc", Data: []byte(`{"extends": "none", "permission": {"*": "ask"}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	allow := AllowedForSession(ByUser{Via: "dialog"},
		SessionPattern{engine.SurfaceBash, "make *"},
		SessionPattern{engine.SurfaceWrite, "/w/build/**"},
		SessionPattern{engine.SurfaceWrite, "/w/[bad"}, // does not compile
		SessionPattern{}, // dropped
	)
	if n := len(allow.SessionRules()); n != 3 {
		t.Fatalf("%d session rules", n)
	}
	held, err := allow.AddSessionRules(p)
	if err == nil || !strings.Contains(err.Error(), "/w/[bad") {
		t.Errorf("error %v, want one naming the pattern that failed", err)
	}
	if got := held.SessionRules(); len(got) != 2 || held.Action() != engine.Allow {
		t.Errorf("held %v", held)
	}
	if r := p.EvaluateAny(engine.SurfaceBash, "make all"); r.Action != engine.Allow {
		t.Errorf("make all: %v", r)
	}
	if r := p.DecidePath(engine.AccessWrite, "/w/build/x"); r.Action != engine.Allow {
		t.Errorf("write /w/build/x: %v", r)
	}

	deny := DeniedForSession(ByUser{Via: "dialog"}, ReasonDeniedByUser, SessionPattern{engine.SurfaceWrite, "/w/secret/**"})
	if _, err := deny.AddSessionRules(p); err != nil {
		t.Fatal(err)
	}
	r := p.DecidePath(engine.AccessWrite, "/w/secret/k")
	if r.Action != engine.Deny {
		t.Fatalf("write /w/secret/k: %v", r)
	}
	// As the supervisor decides it: by the person's "always deny".
	d := FromRule(r.Rule)
	if d.Action() != engine.Deny || d.DecidedBy() != (ByUser{Via: AlwaysDenyVia}) || d.Reason() != ReasonDeniedByUser {
		t.Errorf("FromRule: %v", d)
	}

	l, records := testLog(t)
	req := NewRequest(engine.Check{Surface: engine.SurfaceBash, Value: "bash -c 'make > build/x'"})
	l.Decided(req, true, held)
	l.Decided(req, true, deny)
	recs := records()
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	b, _ := json.Marshal(recs[0]["sessionRules"])
	if string(b) != `[{"action":"allow","pattern":"make *","surface":"bash"},{"action":"allow","pattern":"/w/build/**","surface":"write"}]` {
		t.Errorf("sessionRules %s", b)
	}
	b, _ = json.Marshal(recs[1]["sessionRules"])
	if string(b) != `[{"action":"deny","pattern":"/w/secret/**","surface":"write"}]` {
		t.Errorf("sessionRules %s", b)
	}
}
