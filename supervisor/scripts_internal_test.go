package supervisor

import (
	"testing"
	"time"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/engine/shell"
)

// fakeProcs is a process table for the approvals: pid → parent and
// start time.
type fakeProcs map[int]procInfo

func (f fakeProcs) stat(pid int) (procInfo, bool) { p, ok := f[pid]; return p, ok }

// testPolicy compiles a whole policy for the tests of this package.
func testPolicy(t *testing.T, text string) *engine.Policy {
	t.Helper()
	p, _, err := engine.Compile(engine.Config{Env: engine.Env{Home: "/h", Workspace: "/w", TmpDir: "/tmp/x"},
		Global:     &engine.File{Name: "policy.jsonc", Data: []byte(text)},
		HardGuards: &engine.File{Name: "hard-guards.jsonc", Data: []byte(`{"permission": {"write": {"/w/guard/**": "ask", "/w/blocked/**": "deny"}}, "protectedWrites": ["**/.git/hooks/**"]}`)},
		Protect:    []engine.Protected{{Path: "/w/.permwrap", Tree: true, Reason: "permwrap's own"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const scriptPolicy = `{"extends": "none", "permission": {"*": "allow",
	"write": {"*": "allow", "/w/asked/**": "ask", "/w/denied/**": "deny", "/w/.git/**": "ask", "/w/guard/**": "ask", "/w/blocked/**": "ask", "/w/.permwrap/**": "ask"},
	"read": {"*": "allow", "/w/asked/**": "ask"},
	"bash": {"*": "allow", "git *": "ask"}}}`

// execOf judges an exec of bash -c script in /w.
func execOf(p *engine.Policy, script string) *engine.ExecDecision {
	d := p.DecideExec(engine.ExecIntent{Path: "/bin/bash", Resolved: "/bin/bash", Argv: []string{"bash", "-c", script}, Cwd: "/w"})
	return &d
}

// openVerdict is how an open of path with access a is judged.
func openVerdict(p *engine.Policy, a engine.Access, path string) verdict {
	return verdict{result: p.DecidePath(a, path), access: accessWord(a), value: path, touched: [2]touch{{a, path}}}
}

// The decision an approval makes is pure: given the approvals held, an
// ask the policy made for a part the approved script named is allowed,
// by whoever allowed the script; nothing else is.
func TestScriptAnswer(t *testing.T) {
	p := testPolicy(t, scriptPolicy)
	script := execOf(p, "git status > asked/out.txt; cat asked/in.txt; mv asked/a asked/b; echo x > .git/hooks/pre-commit; "+
		"echo y > guard/g; echo z > .permwrap/policy.jsonc; touch denied/d blocked/b")
	if script.Result.Action == engine.Allow {
		t.Fatalf("the script should ask or be refused: %v", script.Result)
	}
	var a scriptApprovals
	a.stat = fakeProcs{100: {ppid: 1, start: 7}}.stat
	a.approve(100, script, authority.ByUser{Via: "dialog"})
	held := a.held(100)
	if len(held) != 1 {
		t.Fatalf("held %d approvals", len(held))
	}
	byScript := authority.ByUser{Via: authority.ScriptApprovalVia}
	for _, c := range []struct {
		name string
		v    verdict
		want bool
	}{
		{"the redirect's open", openVerdict(p, engine.AccessWrite, "/w/asked/out.txt"), true},
		{"a read an argument named", openVerdict(p, engine.AccessRead, "/w/asked/in.txt"), true},
		{"a move of two named files", verdict{result: p.DecideMove(engine.Move{Kind: engine.MoveRename, From: "/w/asked/a", To: "/w/asked/b"}),
			touched: [2]touch{{engine.AccessWrite, "/w/asked/a"}, {engine.AccessWrite, "/w/asked/b"}}}, true},
		{"another script", verdict{result: p.EvaluateAny(engine.SurfaceBash, "git status"), exec: execOf(p, "git status")}, false},
		{"a file it did not name", openVerdict(p, engine.AccessWrite, "/w/asked/other.txt"), false},
		{"more access than it named", openVerdict(p, engine.AccessRead|engine.AccessWrite, "/w/asked/out.txt"), false},
		{"a read of a file it wrote", openVerdict(p, engine.AccessRead, "/w/asked/out.txt"), false},
		{"a move with one name it did not name", verdict{result: p.DecideMove(engine.Move{Kind: engine.MoveRename, From: "/w/asked/a", To: "/w/asked/c"}),
			touched: [2]touch{{engine.AccessWrite, "/w/asked/a"}, {engine.AccessWrite, "/w/asked/c"}}}, false},
		{"a protected write", openVerdict(p, engine.AccessWrite, "/w/.git/hooks/pre-commit"), false},
		{"a hard-guard ask", openVerdict(p, engine.AccessWrite, "/w/guard/g"), false},
		{"permwrap's own files", openVerdict(p, engine.AccessWrite, "/w/.permwrap/policy.jsonc"), false},
		{"a policy deny", openVerdict(p, engine.AccessWrite, "/w/denied/d"), false},
		{"a hard-guard deny", openVerdict(p, engine.AccessWrite, "/w/blocked/b"), false},
		{"a call that names no path", verdict{result: engine.Result{Action: engine.Ask, Layer: engine.LayerPolicy}}, false},
	} {
		d, ok := scriptAnswer(c.v, held, nil)
		if ok != c.want {
			t.Errorf("%s: answered %v (%v), want %v; the policy said %v", c.name, ok, d, c.want, c.v.result)
			continue
		}
		if ok && (d.Action() != engine.Allow || d.DecidedBy() != byScript) {
			t.Errorf("%s: %v, want allowed by the script approval", c.name, d)
		}
	}
	// Without approvals, nothing.
	if _, ok := scriptAnswer(openVerdict(p, engine.AccessWrite, "/w/asked/out.txt"), nil, nil); ok {
		t.Error("answered without an approval")
	}
	// Approved by a reviewer: the approval answers in its name.
	var b scriptApprovals
	b.stat = fakeProcs{100: {ppid: 1, start: 7}}.stat
	b.approve(100, script, authority.ByAuthorizer{Name: "judge", Verdict: authority.VerdictAllow, Reason: "fine"})
	d, ok := scriptAnswer(openVerdict(p, engine.AccessWrite, "/w/asked/out.txt"), b.held(100), nil)
	if want := (authority.ByAuthorizer{Name: "judge", Verdict: authority.VerdictAllow, Reason: authority.ScriptApprovalVia}); !ok || d.DecidedBy() != want {
		t.Errorf("approved by a reviewer: %v %v", ok, d)
	}
}

// A unit of an approved script is allowed when the script runs it (the
// exec side, which round 1 built): pinned here with the path side.
func TestScriptAnswerUnits(t *testing.T) {
	p := testPolicy(t, scriptPolicy)
	var a scriptApprovals
	a.stat = fakeProcs{100: {ppid: 1, start: 7}, 101: {ppid: 100, start: 9}}.stat
	a.approve(100, execOf(p, "git fetch && git status"), authority.ByUser{Via: "dialog"})
	unit := verdict{result: p.EvaluateAny(engine.SurfaceBash, "git status"),
		exec: &engine.ExecDecision{Analysis: shell.AnalyzeScript("git status", shell.ScriptContext{})}}
	if unit.result.Action != engine.Ask {
		t.Fatalf("git status: %v", unit.result)
	}
	if d, ok := scriptAnswer(unit, a.held(101), nil); !ok || d.Action() != engine.Allow {
		t.Errorf("a unit, in a child of the approved shell: %v %v", ok, d)
	}
	other := unit
	other.exec = &engine.ExecDecision{Analysis: shell.AnalyzeScript("git push", shell.ScriptContext{})}
	if _, ok := scriptAnswer(other, a.held(101), nil); ok {
		t.Error("a command the script did not name was answered")
	}
}

// Who may approve a script's parts: a person at the prompt, a reviewer,
// a parent permwrap; not a session rule, yolo or an earlier approval.
func TestApproves(t *testing.T) {
	for _, c := range []struct {
		d    authority.Decision
		want bool
	}{
		{authority.Allowed(authority.ByUser{Via: "dialog"}), true},
		{authority.AllowedForSession(authority.ByUser{Via: "dialog"}, authority.SessionPattern{Surface: engine.SurfaceBash, Pattern: "make *"}), true},
		{authority.Allowed(authority.ByAuthorizer{Name: "j", Verdict: authority.VerdictAllow}), true},
		{authority.Allowed(authority.ByForwarded{Responder: "n", Decision: authority.ByUser{Via: "dialog"}}), true},
		{authority.Allowed(authority.ByUser{Via: authority.ScriptApprovalVia}), false},
		{authority.Allowed(authority.BySessionApproval{Surface: engine.SurfaceBash, Pattern: "x"}), false},
		{authority.Allowed(authority.ByYolo{Pattern: "x"}), false},
		{authority.Denied(authority.ByUser{Via: "dialog"}, "no"), false},
	} {
		if got := approves(c.d); got != c.want {
			t.Errorf("approves(%v) = %v, want %v", c.d, got, c.want)
		}
	}
}

// An approval holds for its process and descendants, while the process
// lives (a reused pid is not it), for at most approvalLifetime; a tree
// keeps at most maxApprovalsPerTree.
func TestScriptApprovalBounds(t *testing.T) {
	p := testPolicy(t, scriptPolicy)
	procs := fakeProcs{
		100: {ppid: 1, start: 10},   // the approved shell
		101: {ppid: 100, start: 11}, // its child
		102: {ppid: 101, start: 12}, // a grandchild
		200: {ppid: 1, start: 20},   // an unrelated process
		50:  {ppid: 1, start: 5},    // the approved shell's parent... is init here
	}
	now := time.Unix(1000, 0)
	var a scriptApprovals
	a.stat = procs.stat
	a.now = func() time.Time { return now }
	write := openVerdict(p, engine.AccessWrite, "/w/asked/out.txt")
	a.approve(100, execOf(p, "echo x > asked/out.txt"), authority.ByUser{Via: "dialog"})
	covered := func(pid int) bool { _, ok := scriptAnswer(write, a.held(pid), nil); return ok }
	for pid, want := range map[int]bool{100: true, 101: true, 102: true, 200: false, 50: false} {
		if got := covered(pid); got != want {
			t.Errorf("pid %d covered %v, want %v", pid, got, want)
		}
	}
	// Lifetime.
	now = now.Add(approvalLifetime + time.Second)
	if covered(100) {
		t.Error("an approval outlived approvalLifetime")
	}
	now = time.Unix(1000, 0)
	// The shell exits and its pid is reused.
	procs[100] = procInfo{ppid: 1, start: 99}
	if covered(100) || covered(102) {
		t.Error("a reused pid inherited the approval")
	}

	// Per tree: the latest maxApprovalsPerTree approvals of one tree hold.
	var b scriptApprovals
	tree := fakeProcs{300: {ppid: 1, start: 1}}
	b.stat = tree.stat
	b.now = func() time.Time { return now }
	b.approve(300, execOf(p, "echo x > asked/root.txt"), authority.ByUser{Via: "dialog"})
	for i := 1; i <= maxApprovalsPerTree+5; i++ {
		pid := 300 + i
		tree[pid] = procInfo{ppid: 300, start: uint64(pid)}
		now = now.Add(time.Second)
		b.approve(pid, execOf(p, "echo x > asked/f.txt"), authority.ByUser{Via: "dialog"})
	}
	if n := b.countLocked(300); n != maxApprovalsPerTree {
		t.Errorf("%d approvals held for one tree, want %d", n, maxApprovalsPerTree)
	}
	if _, ok := scriptAnswer(openVerdict(p, engine.AccessWrite, "/w/asked/root.txt"), b.held(300), nil); ok {
		t.Error("the oldest approval of a full tree still holds")
	}
	last := 300 + maxApprovalsPerTree + 5
	if _, ok := scriptAnswer(openVerdict(p, engine.AccessWrite, "/w/asked/f.txt"), b.held(last), nil); !ok {
		t.Error("the newest approval of the tree does not hold")
	}

	// Nothing to remember: no approval.
	var c scriptApprovals
	c.stat = procs.stat
	plain := p.DecideExec(engine.ExecIntent{Path: "/usr/bin/true", Resolved: "/usr/bin/true", Argv: []string{"true"}, Cwd: "/w"})
	c.approve(200, &plain, authority.ByUser{Via: "dialog"})
	if len(c.byPid) != 0 {
		t.Errorf("an approval with nothing in it was kept: %v", c.byPid)
	}
}
