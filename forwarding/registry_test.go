package forwarding

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

var testEnv = engine.Env{Home: "/home/u", Workspace: "/home/u/proj", TmpDir: "/tmp"}

type cfgOpt func(*engine.Config)

func withHard(src string) cfgOpt {
	return func(c *engine.Config) { c.HardGuards = &engine.File{Name: "hard-guards.jsonc", Data: []byte(src)} }
}

func withScope(name, src string) cfgOpt {
	return func(c *engine.Config) { c.Scopes = append(c.Scopes, engine.File{Name: name, Data: []byte(src)}) }
}

func withEnv(e engine.Env) cfgOpt { return func(c *engine.Config) { c.Env = e } }

func yolo(c *engine.Config) { c.Yolo = true }

// cfg is a configuration whose global policy is src ("" is the embedded
// default).
func cfg(src string, opts ...cfgOpt) engine.Config {
	c := engine.Config{Env: testEnv}
	if src != "" {
		c.Global = &engine.File{Name: "policy.jsonc", Data: []byte(src)}
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// fakePin is a pin a test kills.
type fakePin struct{ dead atomic.Bool }

func (p *fakePin) Alive() bool  { return !p.dead.Load() }
func (p *fakePin) Close() error { return nil }

var nextKeeper atomic.Int64

func newReg(t *testing.T, root engine.Config) *Registry {
	t.Helper()
	r, err := NewRegistry(root, nil, RegistryOptions{})
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	return r
}

// register adds a node under parent and returns it with its keeper's pin.
func register(t *testing.T, r *Registry, parent *Node, name string, c engine.Config) (*Node, *fakePin) {
	t.Helper()
	pin := &fakePin{}
	pid := int(1000 + nextKeeper.Add(1))
	n, _, err := r.Register(parent, Spec{Name: name, Argv: []string{name}, Config: c}, Peer{PID: pid, Start: 1}, pin)
	if err != nil {
		t.Fatalf("Register %s: %v", name, err)
	}
	return n, pin
}

func write(p string) []engine.Check {
	return []engine.Check{{Surface: engine.SurfaceWrite, Value: p}, {Surface: engine.SurfacePath, Value: p}}
}

func read(p string) []engine.Check {
	return []engine.Check{{Surface: engine.SurfaceRead, Value: p}, {Surface: engine.SurfacePath, Value: p}}
}

func mustAction(t *testing.T, what string, v Verdict, want engine.Action) {
	t.Helper()
	if v.Result.Action != want {
		t.Fatalf("%s: got %s, want %s\n%s", what, v.Result.Action, want, v)
	}
}

// Issue scenario 1: an inner policy denies a write the outer allows:
// denied inside the inner subtree, still allowed for the outer's own
// processes.
func TestInnerDenyHoldsOuterUnchanged(t *testing.T) {
	r := newReg(t, cfg(`{"permission": {"write": {"*": "allow"}}}`))
	inner, _ := register(t, r, r.Root(), "reviewer", cfg(`{"permission": {"write": {"/home/u/proj/src/**": {"action": "deny", "reason": "reviewers do not edit"}}}}`))

	v := Decide(inner.Layers(), write("/home/u/proj/src/main.go")...)
	mustAction(t, "inner", v, engine.Deny)
	if v.Decider != inner || v.Result.Rule.Reason != "reviewers do not edit" {
		t.Fatalf("deny should name the inner rule: %s", v)
	}
	mustAction(t, "root", Decide(r.Root().Layers(), write("/home/u/proj/src/main.go")...), engine.Allow)
	// Elsewhere the inner's "*" is the builtin ask, so the inner asks.
	mustAction(t, "inner elsewhere", Decide(inner.Layers(), write("/home/u/proj/README")...), engine.Ask)
}

// Issue scenario 2: the outer denies; the inner allows everything with
// yolo and "*": "allow" — still denied; an outer ask stays an ask; an
// outer protected write stays human-only.
func TestInnerYoloNeverUnlocks(t *testing.T) {
	r := newReg(t, cfg(`{"permission": {"write": {"*": "allow", "/etc/**": "deny", "/home/u/.bashrc": "ask"}}}`,
		withHard(`{"protectedWrites": ["/home/u/proj/.git/hooks/**"]}`)))
	inner, _ := register(t, r, r.Root(), "yolo", cfg(`{"permission": {"*": "allow"}, "yoloMode": true}`, yolo))
	if !inner.Policy().Settings().Yolo {
		t.Fatal("inner policy should be in yolo mode")
	}
	mustAction(t, "outer deny", Decide(inner.Layers(), write("/etc/passwd")...), engine.Deny)
	v := Decide(inner.Layers(), write("/home/u/.bashrc")...)
	mustAction(t, "outer ask", v, engine.Ask)
	if v.Decider != r.Root() {
		t.Fatalf("the ask is the root's: %s", v)
	}
	v = Decide(inner.Layers(), write("/home/u/proj/.git/hooks/pre-commit")...)
	mustAction(t, "outer protected write", v, engine.Ask)
	if !v.Result.HumanOnly {
		t.Fatalf("a protected write of an ancestor stays human-only: %s", v)
	}
	mustAction(t, "allowed by both", Decide(inner.Layers(), write("/home/u/proj/x")...), engine.Allow)
}

// Issue scenario 3: three levels, each adds one deny; all hold in the
// innermost, the middle ones only their own and above.
func TestThreeLevelsEachAddADeny(t *testing.T) {
	r := newReg(t, cfg(`{"permission": {"write": {"*": "allow", "/a/**": "deny"}}}`))
	n1, _ := register(t, r, r.Root(), "one", cfg(`{"permission": {"*": "allow", "write": {"/b/**": "deny"}}}`))
	n2, _ := register(t, r, n1, "two", cfg(`{"permission": {"*": "allow", "write": {"/c/**": "deny"}}}`))
	n3, _ := register(t, r, n2, "three", cfg(`{"permission": {"*": "allow", "write": {"/d/**": "deny"}}}`))
	if n3.Depth() != 3 || n3.Path() != "root/one#1/two#2/three#3" {
		t.Fatalf("depth %d path %s", n3.Depth(), n3.Path())
	}
	want := map[*Node]map[string]engine.Action{
		r.Root(): {"/a/x": engine.Deny, "/b/x": engine.Allow, "/c/x": engine.Allow, "/d/x": engine.Allow, "/e/x": engine.Allow},
		n1:       {"/a/x": engine.Deny, "/b/x": engine.Deny, "/c/x": engine.Allow, "/d/x": engine.Allow, "/e/x": engine.Allow},
		n2:       {"/a/x": engine.Deny, "/b/x": engine.Deny, "/c/x": engine.Deny, "/d/x": engine.Allow, "/e/x": engine.Allow},
		n3:       {"/a/x": engine.Deny, "/b/x": engine.Deny, "/c/x": engine.Deny, "/d/x": engine.Deny, "/e/x": engine.Allow},
	}
	for n, cases := range want {
		for p, a := range cases {
			mustAction(t, n.Label()+" "+p, Decide(n.Layers(), write(p)...), a)
		}
	}
	// The deny names the layer that wrote it.
	if v := Decide(n3.Layers(), write("/c/x")...); v.Decider != n2 {
		t.Fatalf("decider: %s", v)
	}
}

// Issue scenario 6 at this level: an inner whose environment was cleared
// (env -i: no HOME, odd workspace) is never weaker than the root, on any
// check; and a configuration that needs what it lacks is refused, not
// judged loosely.
func TestClearedEnvironmentNeverWeaker(t *testing.T) {
	root := cfg("") // the embedded default policy
	r := newReg(t, root)
	empty := engine.Env{}
	loose, _ := register(t, r, r.Root(), "loose", cfg(`{"permission": {"*": "allow"}}`, withEnv(empty), yolo))
	def, _ := register(t, r, r.Root(), "default", cfg("", withEnv(engine.Env{Home: "/nonexistent", Workspace: "/", TmpDir: "/"})))

	paths := []string{"/home/u/.ssh/id_rsa", "/home/u/.bashrc", "/etc/passwd", "/home/u/proj/main.go", "/tmp/x", "/", "/home/u/.aws/credentials", "/usr/bin/git", "/home/u/proj/.env"}
	for _, n := range []*Node{loose, def} {
		for _, p := range paths {
			for _, checks := range [][]engine.Check{read(p), write(p), {{Surface: engine.SurfaceExec, Value: p}, {Surface: engine.SurfacePath, Value: p}}} {
				rootV := Decide(r.Root().Layers(), checks...)
				v := Decide(n.Layers(), checks...)
				if v.Result.Action < rootV.Result.Action {
					t.Errorf("%s %v: nested %s is weaker than root %s", n.Label(), checks[0], v.Result.Action, rootV.Result.Action)
				}
				if rootV.Result.HumanOnly && !v.Result.HumanOnly && v.Result.Action == engine.Ask {
					t.Errorf("%s %v: lost human-only", n.Label(), checks[0])
				}
			}
		}
		for _, cmd := range []string{"git push --force origin main", "rm -rf /", "ls"} {
			in := engine.ExecIntent{Path: "/bin/sh", Resolved: "/bin/sh", Argv: []string{"sh", "-c", cmd}, Cwd: "/home/u/proj"}
			rootD := r.Root().Policy().DecideExec(in)
			_, v := DecideExec(n.Layers(), in)
			if v.Result.Action < rootD.Result.Action {
				t.Errorf("%s exec %q: nested %s weaker than root %s", n.Label(), cmd, v.Result.Action, rootD.Result.Action)
			}
		}
	}

	// A node whose patterns need a home it does not have is refused (the
	// default policy too), with a short reason.
	for _, c := range []engine.Config{
		cfg(`{"permission": {"read": {"~/.ssh/**": "deny"}}}`, withEnv(empty)),
		cfg("", withEnv(empty)),
	} {
		_, _, err := r.Register(r.Root(), Spec{Name: "tilde", Argv: []string{"x"}, Config: c}, Peer{PID: 5, Start: 1}, &fakePin{})
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(re.Reason, "home directory is unknown") {
			t.Fatalf("a policy that cannot expand ~ must be refused, got %v", err)
		}
		if len(re.Reason) > 1024 {
			t.Fatalf("refusal reason should be short, got %d bytes: %s", len(re.Reason), re.Reason)
		}
	}
}

// Session approvals given for a node's ask apply to that node's subtree
// only, in the layers from the root to the node; they never lift a deny
// or a node's own asks beneath it.
func TestSessionApprovalsScopedToSubtree(t *testing.T) {
	r := newReg(t, cfg(`{"permission": {"write": {"*": "allow", "/shared/**": "ask", "/denied/**": "deny"}}}`))
	a, _ := register(t, r, r.Root(), "a", cfg(`{"permission": {"*": "allow", "write": {"/a-asks/**": "ask"}}}`))
	sib, _ := register(t, r, r.Root(), "sibling", cfg(`{"permission": {"*": "allow"}}`))
	child, _ := register(t, r, a, "child", cfg(`{"permission": {"*": "allow", "write": {"/shared/child/**": "ask"}}}`))

	for _, n := range []*Node{r.Root(), a, sib, child} {
		mustAction(t, "before "+n.Label(), Decide(n.Layers(), write("/shared/x")...), engine.Ask)
	}
	// A person allows /shared/** for a's subtree (the ask was the root's
	// layer, asked by a process of a).
	if _, err := r.AddSessionRule(a, engine.SurfaceWrite, "/shared/**"); err != nil {
		t.Fatal(err)
	}
	mustAction(t, "a after", Decide(a.Layers(), write("/shared/x")...), engine.Allow)
	mustAction(t, "child after", Decide(child.Layers(), write("/shared/x")...), engine.Allow)
	mustAction(t, "root after", Decide(r.Root().Layers(), write("/shared/x")...), engine.Ask)
	mustAction(t, "sibling after", Decide(sib.Layers(), write("/shared/x")...), engine.Ask)
	// The child's own ask beneath a is the child's to keep.
	mustAction(t, "child's own ask", Decide(child.Layers(), write("/shared/child/y")...), engine.Ask)

	// Asks of a's own layer are lifted too, for a's subtree.
	if _, err := r.AddSessionRule(a, engine.SurfaceWrite, "/a-asks/**"); err != nil {
		t.Fatal(err)
	}
	mustAction(t, "a's own ask", Decide(a.Layers(), write("/a-asks/z")...), engine.Allow)

	// Never a deny.
	if _, err := r.AddSessionRule(a, engine.SurfaceWrite, "/denied/**"); err != nil {
		t.Fatal(err)
	}
	mustAction(t, "deny stays", Decide(a.Layers(), write("/denied/x")...), engine.Deny)

	// A node registered later under a inherits a's approvals.
	late, _ := register(t, r, a, "late", cfg(`{"permission": {"*": "allow"}}`))
	mustAction(t, "late child", Decide(late.Layers(), write("/shared/x")...), engine.Allow)

	// A root approval lifts the root's layer everywhere, but not a
	// node's own ask.
	if _, err := r.AddSessionRule(r.Root(), engine.SurfaceWrite, "/shared/**"); err != nil {
		t.Fatal(err)
	}
	mustAction(t, "root approval, root", Decide(r.Root().Layers(), write("/shared/x")...), engine.Allow)
	mustAction(t, "root approval, sibling", Decide(sib.Layers(), write("/shared/x")...), engine.Allow)
	mustAction(t, "root approval, child's own ask", Decide(child.Layers(), write("/shared/child/y")...), engine.Ask)
	if got := r.SessionApprovals(a); len(got) != 3 {
		t.Fatalf("approvals at a: %v", got)
	}
}

// An approval must lift exactly what the engine's own session rules
// lift: here the ask comes from two checks of one layer (write and path),
// and an approval on one surface does not lift the other.
func TestSessionApprovalFollowsEngineSemantics(t *testing.T) {
	r := newReg(t, cfg(`{"permission": {"*": "allow", "write": {"/x/**": "ask"}, "path": {"/x/**": "ask"}}}`))
	n, _ := register(t, r, r.Root(), "n", cfg(`{"permission": {"*": "allow"}}`))
	if _, err := r.AddSessionRule(n, engine.SurfaceWrite, "/x/**"); err != nil {
		t.Fatal(err)
	}
	mustAction(t, "write approved, path still asks", Decide(n.Layers(), write("/x/a")...), engine.Ask)
	if _, err := r.AddSessionRule(n, engine.SurfacePath, "/x/**"); err != nil {
		t.Fatal(err)
	}
	mustAction(t, "both approved", Decide(n.Layers(), write("/x/a")...), engine.Allow)
}

// Hard guards of every layer hold: an inner hard-guard deny is final, an
// inner protected write is human-only, and neither can be lifted by a
// session approval.
func TestInnerHardGuardsHold(t *testing.T) {
	r := newReg(t, cfg(`{"permission": {"*": "allow"}}`))
	n, _ := register(t, r, r.Root(), "guarded", cfg(`{"permission": {"*": "allow"}}`,
		withHard(`{"permission": {"write": {"/srv/**": "deny"}}, "protectedWrites": ["/home/u/.profile"]}`)))
	mustAction(t, "inner hard deny", Decide(n.Layers(), write("/srv/a")...), engine.Deny)
	v := Decide(n.Layers(), write("/home/u/.profile")...)
	mustAction(t, "inner protected", v, engine.Ask)
	if !v.Result.HumanOnly || v.Decider != n {
		t.Fatalf("inner protected write must be human-only and the node's: %s", v)
	}
	if _, err := r.AddSessionRule(n, engine.SurfaceWrite, "/home/u/.profile"); err != nil {
		t.Fatal(err)
	}
	if v := Decide(n.Layers(), write("/home/u/.profile")...); v.Result.Action != engine.Ask || !v.Result.HumanOnly {
		t.Fatalf("a session approval must not lift a protected write: %s", v)
	}
}

// Equal answers are named by the outermost layer; an ask that is
// human-only in one layer beats a plain ask of another.
func TestDeciderChoice(t *testing.T) {
	r := newReg(t, cfg(`{"permission": {"write": {"*": "deny"}}}`))
	n, _ := register(t, r, r.Root(), "n", cfg(`{"permission": {"write": {"*": "deny"}}}`, withHard(`{"protectedWrites": ["/p"]}`)))
	if v := Decide(n.Layers(), write("/q")...); v.Decider != r.Root() {
		t.Fatalf("equal denies: the root names it: %s", v)
	}
	r2 := newReg(t, cfg(`{"permission": {"write": {"*": "ask"}}}`))
	n2, _ := register(t, r2, r2.Root(), "n", cfg(`{"permission": {"*": "allow"}}`, withHard(`{"protectedWrites": ["/p"]}`)))
	if v := Decide(n2.Layers(), write("/p")...); v.Decider != n2 || !v.Result.HumanOnly {
		t.Fatalf("human-only ask beats a plain ask: %s", v)
	}
	if v := Decide(nil, write("/p")...); v.Result.Action != engine.Deny {
		t.Fatalf("no layers must deny: %s", v)
	}
}

// A layer answer without an action (a judge that failed to decide) is a
// deny, never an allow.
func TestUndecidedLayerDenies(t *testing.T) {
	r := newReg(t, cfg(`{"permission": {"*": "allow"}}`))
	n, _ := register(t, r, r.Root(), "n", cfg(`{"permission": {"*": "allow"}}`))
	calls := 0
	v := JudgeResult(n.Layers(), func(p *engine.Policy) engine.Result {
		calls++
		if calls == 2 {
			return engine.Result{}
		}
		return p.Evaluate(engine.Check{Surface: engine.SurfaceWrite, Value: "/x"})
	})
	mustAction(t, "undecided", v, engine.Deny)
	if v.Decider != n {
		t.Fatalf("decider: %s", v)
	}
}

func TestExecDecisionOfDecidingLayer(t *testing.T) {
	r := newReg(t, cfg(`{"permission": {"*": "allow"}}`))
	n, _ := register(t, r, r.Root(), "n", cfg(`{"permission": {"*": "allow", "bash": {"git push *": {"action": "deny", "reason": "no pushing from here"}}}}`))
	in := engine.ExecIntent{Path: "git", Resolved: "/usr/bin/git", Argv: []string{"git", "push", "origin", "main"}, Cwd: "/home/u/proj"}
	d, v := DecideExec(n.Layers(), in)
	mustAction(t, "exec", v, engine.Deny)
	if v.Decider != n || !strings.Contains(d.Reason(), "no pushing from here") {
		t.Fatalf("the exec decision must be the deciding layer's: %s / %s", d.Reason(), v)
	}
}

func TestRegistrationLimits(t *testing.T) {
	r, err := NewRegistry(cfg(`{"permission": {"*": "allow"}}`), nil, RegistryOptions{MaxNodes: 3, MaxDepth: 2})
	if err != nil {
		t.Fatal(err)
	}
	ok := cfg(`{"permission": {"*": "allow"}}`)
	a, _ := register(t, r, r.Root(), "a", ok)
	b, _ := register(t, r, a, "b", ok)
	var re *RefusedError
	if _, _, err := r.Register(b, Spec{Name: "c", Argv: []string{"c"}, Config: ok}, Peer{PID: 9, Start: 1}, &fakePin{}); !errors.As(err, &re) || !strings.Contains(re.Reason, "deeper") {
		t.Fatalf("depth limit: %v", err)
	}
	register(t, r, r.Root(), "c", ok)
	if _, _, err := r.Register(r.Root(), Spec{Name: "d", Argv: []string{"d"}, Config: ok}, Peer{PID: 9, Start: 1}, &fakePin{}); !errors.As(err, &re) || !strings.Contains(re.Reason, "already has 3") {
		t.Fatalf("count limit: %v", err)
	}
	for _, bad := range []Spec{
		{Name: "", Argv: []string{"x"}, Config: ok},
		{Name: "bad name", Argv: []string{"x"}, Config: ok},
		{Name: "x", Config: ok},
		{Name: "x", Argv: []string{"x"}, Config: cfg(`{"permission": {"write": {"[": "deny"}}}`)},
	} {
		r2 := newReg(t, ok)
		if _, _, err := r2.Register(r2.Root(), bad, Peer{PID: 9, Start: 1}, &fakePin{}); !errors.As(err, &re) {
			t.Errorf("%+v: want refusal, got %v", bad, err)
		}
	}
}

// A broken --policy scope on the inner turns the inner's allows into asks
// (fail-closed), as it would have on its own.
func TestUnreadableInnerScopeFailsClosed(t *testing.T) {
	r := newReg(t, cfg(`{"permission": {"*": "allow"}}`))
	c := cfg(`{"permission": {"*": "allow"}}`, withScope("reviewer.jsonc", `{"permission": {"write": {"/home/u/proj/src/**": "deny"}}}`))
	c.Scopes = append(c.Scopes, engine.File{Name: "/gone.jsonc", Data: nil})
	n, _ := register(t, r, r.Root(), "n", c)
	mustAction(t, "turned into an ask", Decide(n.Layers(), write("/home/u/proj/x")...), engine.Ask)
	mustAction(t, "the readable scope's deny", Decide(n.Layers(), write("/home/u/proj/src/a")...), engine.Deny)
}

func TestEnforceableRefuses(t *testing.T) {
	r, err := NewRegistry(cfg(`{"permission": {"*": "allow"}}`), nil, RegistryOptions{Enforceable: func(p *engine.Policy) error {
		if !p.ReadsAlwaysAllowed() {
			return fmt.Errorf("this permwrap does not see plain reads, so it cannot enforce the node's read rules")
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	var re *RefusedError
	if _, _, err := r.Register(r.Root(), Spec{Name: "n", Argv: []string{"n"}, Config: cfg(`{"permission": {"*": "allow", "read": {"/secret/**": "deny"}}}`)}, Peer{PID: 9, Start: 1}, &fakePin{}); !errors.As(err, &re) || !strings.Contains(re.Reason, "plain reads") {
		t.Fatalf("want refusal, got %v", err)
	}
	register(t, r, r.Root(), "ok", cfg(`{"permission": {"*": "allow"}}`))
}

func TestExplainLayers(t *testing.T) {
	layers, _, err := OfflineChain([]string{"", "reviewer"}, []engine.Config{
		cfg(`{"permission": {"write": {"*": "allow"}}}`),
		cfg(`{"permission": {"write": {"/home/u/proj/**": "deny"}}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	ex, v := Explain(layers, engine.Check{Surface: engine.SurfaceWrite, Value: "/home/u/proj/a"})
	if len(ex) != 2 || v.Result.Action != engine.Deny || v.Decider.Name() != "reviewer" {
		t.Fatalf("explain: %v %s", ex, v)
	}
	if !strings.Contains(v.String(), "* reviewer#1") {
		t.Fatalf("the deciding layer is marked: %s", v)
	}
}

// Strictest (the supervisor's hot path) picks the same answer as Judge,
// layer for layer, whatever the mix of answers.
func TestStrictestIsJudge(t *testing.T) {
	policies := []string{
		`{"extends": "none", "permission": {"*": "allow"}}`,
		`{"extends": "none", "permission": {"*": "allow", "write": {"/w/a": "deny", "/w/b": "ask"}}}`,
		`{"extends": "none", "permission": {"*": "ask", "write": {"/w/**": "allow"}}}`,
		`{"extends": "none", "permission": {"*": "allow", "write": {"/w/b": "deny", "/w/c": "ask"}}}`,
	}
	hard := withHard(`{"protectedWrites": ["/w/c"]}`)
	var cfgs []engine.Config
	for i, p := range policies {
		if i == 3 {
			cfgs = append(cfgs, cfg(p, hard))
		} else {
			cfgs = append(cfgs, cfg(p))
		}
	}
	paths := []string{"/w/a", "/w/b", "/w/c", "/w/d", "/elsewhere"}
	// Every chain of 1 to 3 layers drawn from the policies.
	var chains [][]int
	for a := range cfgs {
		chains = append(chains, []int{a})
		for b := range cfgs {
			chains = append(chains, []int{a, b})
			for c := range cfgs {
				chains = append(chains, []int{a, b, c})
			}
		}
	}
	for _, ch := range chains {
		var cs []engine.Config
		for _, i := range ch {
			cs = append(cs, cfgs[i])
		}
		layers, _, err := OfflineChain(nil, cs)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			judge := func(pol *engine.Policy) engine.Result { return pol.DecidePath(engine.AccessWrite, p) }
			_, v := Judge(layers, judge, identity)
			got := Strictest(layers, judge, identity)
			if got.Action != v.Result.Action || got.HumanOnly != v.Result.HumanOnly || got.Rule != v.Result.Rule {
				t.Errorf("chain %v, %s: Strictest %v, Judge %v", ch, p, got, v.Result)
			}
		}
	}
}
