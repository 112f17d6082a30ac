package supervisor

import (
	"testing"
	"testing/fstest"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/engine/shell"
)

// effectsFiles is a workspace repository /w whose origin is the bare
// repository /srv/r.git.
func effectsFiles() fstest.MapFS {
	fs := fstest.MapFS{}
	for _, d := range []string{"w/.git", "srv/r.git"} {
		fs[d+"/HEAD"] = &fstest.MapFile{Data: []byte("ref: refs/heads/main\n")}
		fs[d+"/objects/info/packs"] = &fstest.MapFile{}
		fs[d+"/refs/heads/main"] = &fstest.MapFile{}
	}
	fs["w/.git/config"] = &fstest.MapFile{Data: []byte("[remote \"origin\"]\n\turl = /srv/r.git\n")}
	return fs
}

func effectsPolicy(t *testing.T, bash string) *engine.Policy {
	t.Helper()
	p, _, err := engine.Compile(engine.Config{Env: engine.Env{Home: "/h", Workspace: "/w", TmpDir: "/tmp/x"},
		Global: &engine.File{Name: "policy.jsonc", Data: []byte(`{"extends": "none", "permission": {"read": "allow", "exec": "allow",
			"write": {"*": "ask", "/h/.bashrc": "ask", "/w/**": "allow"}, "bash": ` + bash + `}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func execVerdict(p *engine.Policy, argv ...string) verdict {
	d := p.DecideExec(engine.ExecIntent{Path: "/usr/bin/" + argv[0], Resolved: "/usr/bin/" + argv[0], Argv: argv, Cwd: "/w",
		ReadFile: shell.FSReader(effectsFiles())})
	return verdict{result: d.Result, access: "exec", value: shell.RenderArgv(argv), exec: &d, argv: argv}
}

// A rule that allows a push grants the writes into its local remote to
// the push's process tree: the catch-all's asks there are answered, by
// the rule; the remote's hooks and config, and anything outside it,
// still ask. The generic path uses of a command a rule allows are not
// granted.
func TestRuleGrantsEffects(t *testing.T) {
	p := effectsPolicy(t, `{"*": "ask", "git push *": "allow", "git worktree *": "allow", "touch *": "allow", "bash -c *": "allow"}`)
	push := execVerdict(p, "git", "push", "origin", "main")
	if push.result.Action != engine.Allow || len(push.exec.Effects) != 1 {
		t.Fatalf("push: %v, effects %+v", push.result, push.exec.Effects)
	}
	var a scriptApprovals
	a.stat = fakeProcs{100: {ppid: 1, start: 7}, 101: {ppid: 100, start: 8}, 200: {ppid: 1, start: 9}}.stat
	a.approveRule(100, push)
	for _, c := range []struct {
		path string
		want bool
	}{
		{"/srv/r.git/refs/heads/main.lock", true},
		{"/srv/r.git/objects/tmp_objdir-incoming-x", true},
		{"/srv/r.git/HEAD.lock", true},
		{"/srv/r.git/hooks/post-receive", false},
		{"/srv/r.git/config", false},
		{"/srv/elsewhere/refs/heads/main", false},
		{"/h/.bashrc", false},
	} {
		v := openVerdict(p, engine.AccessWrite, c.path)
		if v.result.Action != engine.Ask {
			t.Fatalf("%s: the policy should ask: %v", c.path, v.result)
		}
		d, ok := scriptAnswer(v, a.held(101), p.AsksUnnamed)
		if ok != c.want {
			t.Errorf("%s: answered %v, want %v", c.path, ok, c.want)
		}
		if ok {
			if by, isRule := d.DecidedBy().(authority.ByRule); !isRule || by.Pattern != "git push *" || d.Action() != engine.Allow {
				t.Errorf("%s: decided %v by %v", c.path, d.Action(), d.DecidedBy())
			}
		}
		// Another tree holds nothing.
		if _, ok := scriptAnswer(v, a.held(200), p.AsksUnnamed); ok {
			t.Errorf("%s: answered for another tree", c.path)
		}
	}

	// touch ~/.bashrc allowed by a rule: its path use is not granted.
	touch := execVerdict(p, "bash", "-c", "touch /h/.bashrc")
	if touch.result.Action != engine.Allow || len(touch.exec.PathUses) == 0 {
		t.Fatalf("touch: %v, uses %+v", touch.result, touch.exec.PathUses)
	}
	a.approveRule(200, touch)
	if _, ok := scriptAnswer(openVerdict(p, engine.AccessWrite, "/h/.bashrc"), a.held(200), p.AsksUnnamed); ok {
		t.Error("a rule allowing touch * lifted the ask on touch ~/.bashrc")
	}

	// A script a rule allows grants nothing for its push: the push's own
	// exec, when it comes, is judged (and grants) by itself.
	script := execVerdict(p, "bash", "-c", "git push origin main")
	if script.result.Action != engine.Allow || len(script.exec.Effects) != 1 {
		t.Fatalf("script: %v, effects %+v", script.result, script.exec.Effects)
	}
	if effects, _ := ruleEffects(script); len(effects) != 0 {
		t.Errorf("a script's rule grants %+v", effects)
	}

	// A new worktree away from the workspace: a person may approve its
	// writes; the rule that allows the command does not.
	wt := execVerdict(p, "git", "worktree", "add", "/h/.emacs.d")
	if wt.result.Action != engine.Allow || len(wt.exec.Effects) != 1 {
		t.Fatalf("worktree: %v, effects %+v", wt.result, wt.exec.Effects)
	}
	if effects, _ := ruleEffects(wt); len(effects) != 0 {
		t.Errorf("a rule grants %+v", effects)
	}
}

// Under the default policy the push asks; a person's approval grants its
// effects, by way of the script approval.
func TestPersonGrantsEffects(t *testing.T) {
	p := effectsPolicy(t, `{"*": "allow", "git push *": "ask"}`)
	push := execVerdict(p, "git", "push", "origin", "main")
	if push.result.Action != engine.Ask || len(push.exec.Effects) != 1 {
		t.Fatalf("push: %v, effects %+v", push.result, push.exec.Effects)
	}
	if effects, _ := ruleEffects(push); len(effects) != 0 {
		t.Fatalf("an ask grants %+v", effects)
	}
	var a scriptApprovals
	a.stat = fakeProcs{100: {ppid: 1, start: 7}}.stat
	a.approve(100, push.exec, authority.ByUser{Via: "dialog"})
	d, ok := scriptAnswer(openVerdict(p, engine.AccessWrite, "/srv/r.git/refs/heads/main.lock"), a.held(100), p.AsksUnnamed)
	if by, isUser := d.DecidedBy().(authority.ByUser); !ok || !isUser || by.Via != authority.ScriptApprovalVia {
		t.Errorf("answered %v by %v", ok, d.DecidedBy())
	}
	// Without the policy's word (nil) no effect answers.
	if _, ok := scriptAnswer(openVerdict(p, engine.AccessWrite, "/srv/r.git/refs/heads/main.lock"), a.held(100), nil); ok {
		t.Error("an effect answered without AsksUnnamed")
	}
}
