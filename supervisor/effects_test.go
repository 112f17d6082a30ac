package supervisor_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// The effects of an approved command (engine/effects.go): a push to a
// repository elsewhere on this machine, under the default policy, and a
// new worktree beside the workspace. The remote must be where the
// default policy asks about writes only through its catch-all — not the
// workspace, not /tmp — so the tests see it at /srv, a directory of the
// test's bound there in a private mount namespace (permwrap and the bare
// runs both start inside it).

// srvSetup binds a fresh directory of the sandbox over /srv for every
// command the sandbox runs, and returns it (its path outside).
func srvSetup(t *testing.T, s *sandbox) string {
	t.Helper()
	kerneltest.Tool(t, "unshare")
	if os.Geteuid() != 0 {
		t.Skip("binding a directory over /srv needs root")
	}
	if st, err := os.Stat("/srv"); err != nil || !st.IsDir() {
		t.Skip("no /srv to bind over")
	}
	srv := filepath.Join(s.dir, "srv")
	if err := os.MkdirAll(filepath.Join(srv, "outside"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.prefix = srvPrefix(srv)
	return srv
}

func srvPrefix(srv string) []string {
	return []string{"unshare", "--mount", "--propagation", "private", "sh", "-c", `mount --bind "$0" /srv && exec "$@"`, srv}
}

// gitIn runs git in dir, outside permwrap, with the sandbox's home.
func gitIn(t *testing.T, s *sandbox, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(kerneltest.Tool(t, "git"), append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+s.home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// srvRemote makes srv/remote.git (bare) and gitwork/ in the workspace, a
// clone one commit ahead whose origin is /srv/remote.git; it returns the
// remote's main branch.
func srvRemote(t *testing.T, s *sandbox, srv string) string {
	t.Helper()
	remote := filepath.Join(srv, "remote.git")
	os.RemoveAll(remote)
	os.RemoveAll(s.path("gitwork"))
	gitIn(t, s, srv, "init", "-q", "--bare", "remote.git")
	gitIn(t, s, s.workspace, "init", "-q", "gitwork")
	work := s.path("gitwork")
	gitIn(t, s, work, "commit", "-q", "--allow-empty", "-m", "one")
	gitIn(t, s, work, "push", "-q", remote, "main")
	gitIn(t, s, work, "remote", "add", "origin", "/srv/remote.git")
	gitIn(t, s, work, "commit", "-q", "--allow-empty", "-m", "two")
	return srvHead(t, srv)
}

func srvHead(t *testing.T, srv string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(srv, "remote.git/refs/heads/main"))
	if err != nil {
		t.Fatalf("remote's main branch: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// askedPerson counts the requests whose value contains what that a
// person (or nobody, headless) had to answer: an ask an approval
// answered is recorded as asked, then approved by the approval, and is
// not one of them.
func askedPerson(s *sandbox, what string) int {
	// An ask an approval answers is recorded as allowed by it, with no
	// asked record; every asked record went to the chain, and so, in
	// these tests, to the person.
	n := 0
	for _, rec := range s.logRecords() {
		v, _ := rec["value"].(string)
		if strings.Contains(v, what) && rec["event"] == "permission_request.asked" {
			n++
		}
	}
	return n
}

// With a rule that allows the push, a push to a local bare remote
// outside the workspace succeeds with no terminal and no ask: the
// remote's writes (its incoming object directory, the ref's lock, HEAD's)
// are the push's, decided by the rule. Without the rule the same push
// fails headless, its writes asked about: the remote is a place the
// policy asks about.
func TestPushToLocalRemoteByRule(t *testing.T) {
	need(t, "git", "bash")
	s := newSandbox(t, `{ "permission": { "bash": { "git push *": "allow" } } }`)
	srv := srvSetup(t, s)
	before := srvRemote(t, s, srv)

	r := s.run("bash", "-c", "git -C gitwork push -q origin main && echo pushed")
	if r.code != 0 || !strings.Contains(r.stdout, "pushed") {
		t.Fatalf("push under a rule that allows it: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if srvHead(t, srv) == before {
		t.Fatal("the remote's main branch did not move")
	}
	if n := askedPerson(s, "/srv/"); n != 0 {
		t.Errorf("%d asks about the remote: %v", n, decisions(s, "/srv/"))
	}
	byRule := 0
	for _, rec := range s.logRecords() {
		v, _ := rec["value"].(string)
		by, _ := rec["decidedBy"].(map[string]any)
		if strings.HasPrefix(v, "/srv/remote.git/") && rec["event"] == "permission_request.allowed" {
			if by["kind"] != "rule" || by["pattern"] != "git push *" {
				t.Errorf("%s decided by %v, want the rule bash:git push *", v, by)
			}
			byRule++
		}
		if rec["event"] == "permission_request.allowed" && rec["value"] == "git push -q origin main" {
			if c, _ := rec["covers"].([]any); len(c) != 1 || !strings.Contains(c[0].(string), "writes into /srv/remote.git") {
				t.Errorf("the push's record covers %v", rec["covers"])
			}
		}
	}
	if byRule == 0 {
		t.Error("no write into the remote was recorded as the rule's")
	}

	// The control: the default policy alone asks, and headless that fails.
	s2 := newSandbox(t, "")
	srv2 := srvSetup(t, s2)
	before2 := srvRemote(t, s2, srv2)
	r = s2.run("bash", "-c", "git -C gitwork push -q origin main")
	if r.code == 0 || srvHead(t, srv2) != before2 {
		t.Fatalf("a push the default policy asks about succeeded headless: exit %d\n%s", r.code, r.stderr)
	}
}

// A push a person approves asks once: the writes into the remote follow
// without a prompt of their own, and the prompt says what the approval
// covers.
func TestPushToLocalRemoteAskedOnce(t *testing.T) {
	need(t, "git", "bash")
	s := newSandbox(t, "")
	srv := srvSetup(t, s)
	before := srvRemote(t, s, srv)
	cmd := append(srvPrefix(srv), permwrapBin, "--log", s.logPath, "--workspace", s.workspace, "--", "bash", "--norc", "--noprofile", "-i")
	ts := newTmuxEnv(t, s, false, nil, cmd...)
	ts.waitFor("$")
	ts.keys("git -C gitwork push -q origin main && echo pushed-$((1+1))", "Enter")
	scr := ts.waitFor("permwrap: permission request")
	mustContain(t, "the prompt", scr, "covers: writes into /srv/remote.git (the push's remote")
	ts.answer(prompt{choose: "Allow once"})
	scr = ts.waitFor("pushed-2")
	if strings.Count(scr, "permission request") > 1 {
		t.Errorf("asked again for the push's writes:\n%s", scr)
	}
	ts.keys("exit", "Enter")
	ts.waitFor("PERMWRAP-EXIT=")
	if srvHead(t, srv) == before {
		t.Fatal("the remote's main branch did not move")
	}
	if n := askedPerson(s, ""); n != 1 {
		t.Errorf("a person answered %d asks, want 1 (the push): %v", n, decisions(s, ""))
	}
	if n := decisions(s, "/srv/remote.git/")["allowed by user/script approval"]; n == 0 {
		t.Errorf("no write into the remote was the approval's: %v", decisions(s, "/srv/remote.git/"))
	}
}

// `git worktree add ../wt` beside a workspace outside the temporary
// areas: the default policy allows the command, and its new worktree
// follows without an ask; a directory the command does not make still
// asks (headless: refused).
func TestWorktreeBesideWorkspace(t *testing.T) {
	need(t, "git", "bash")
	s := newSandbox(t, "")
	srv := srvSetup(t, s)
	ws := filepath.Join(srv, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, s, ws, "init", "-q")
	gitIn(t, s, ws, "commit", "-q", "--allow-empty", "-m", "one")
	run := func(script string) result {
		t.Helper()
		cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c",
			`mount --bind "$0" /srv && cd /srv/ws && exec "$@"`, srv,
			permwrapBin, "--log", s.logPath, "--workspace", "/srv/ws", "--", "bash", "-c", script)
		cmd.Env = append(os.Environ(), "PERMWRAP_CONFIG_DIR="+s.configDir, "HOME="+s.home, "XDG_STATE_HOME="+filepath.Join(s.dir, "state"))
		out, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			code = -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
		}
		return result{stdout: string(out), code: code}
	}
	r := run("git worktree add -q ../wt && echo made")
	if r.code != 0 || !strings.Contains(r.stdout, "made") {
		t.Fatalf("git worktree add ../wt: exit %d\n%s", r.code, r.stdout)
	}
	if _, err := os.Stat(filepath.Join(srv, "wt", ".git")); err != nil {
		t.Errorf("the worktree was not made: %v", err)
	}
	if n := askedPerson(s, "/srv/wt"); n != 0 {
		t.Errorf("%d asks about the new worktree", n)
	}
	// The control: the same place is asked about for anything else.
	r = run("mkdir ../other")
	if r.code == 0 {
		t.Fatalf("mkdir beside the workspace succeeded headless: %s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(srv, "other")); err == nil {
		t.Error("mkdir ../other made it")
	}
}

// The attack: the approved push's own tree runs code of the agent's (the
// remote's receive-pack program, which the workspace's configuration
// names and the push runs), and that code tries to use the approval to
// write the remote's hooks and config and a file outside the remote.
// Bare, it does all three; under permwrap, with the push allowed by a
// rule and no terminal, it does none, while the push itself lands.
func TestPushApprovalBounds(t *testing.T) {
	need(t, "git", "bash")
	s := newSandbox(t, `{ "permission": { "bash": { "git push *": "allow" } } }`)
	srv := srvSetup(t, s)
	evil := s.path("evil-receive-pack")
	s.write("evil-receive-pack", `#!/bin/sh
echo '#!/bin/sh' > "$1/hooks/post-receive"; chmod +x "$1/hooks/post-receive"
echo '[core] fsmonitor = true' >> "$1/config"
echo out > /srv/outside/escaped
exec git receive-pack "$1"
`)
	if err := os.Chmod(evil, 0o755); err != nil {
		t.Fatal(err)
	}
	written := func() []string {
		var got []string
		if _, err := os.Stat(filepath.Join(srv, "remote.git/hooks/post-receive")); err == nil {
			got = append(got, "hooks/post-receive")
		}
		if b, _ := os.ReadFile(filepath.Join(srv, "remote.git/config")); strings.Contains(string(b), "fsmonitor") {
			got = append(got, "config")
		}
		if _, err := os.Stat(filepath.Join(srv, "outside/escaped")); err == nil {
			got = append(got, "outside/escaped")
		}
		return got
	}
	push := "git -C gitwork push -q origin main"
	// Bare: the receive-pack program writes all three, and the push lands.
	before := srvRemote(t, s, srv)
	gitIn(t, s, s.path("gitwork"), "config", "remote.origin.receivepack", evil)
	if r := s.bare("bash", "-c", push); r.code != 0 || srvHead(t, srv) == before {
		t.Fatalf("bare push: exit %d\n%s", r.code, r.stderr)
	}
	if got := written(); len(got) != 3 {
		t.Fatalf("bare, the receive-pack program wrote only %v", got)
	}

	// Under permwrap, afresh.
	os.Remove(filepath.Join(srv, "outside/escaped"))
	before = srvRemote(t, s, srv)
	gitIn(t, s, s.path("gitwork"), "config", "remote.origin.receivepack", evil)
	if got := written(); len(got) != 0 {
		t.Fatalf("not reset: %v", got)
	}
	r := s.run("bash", "-c", push)
	if got := written(); len(got) != 0 {
		t.Errorf("under permwrap the approved push's tree wrote %v\nstderr: %s", got, r.stderr)
	}
	if srvHead(t, srv) == before {
		t.Errorf("the push itself did not land: exit %d\n%s", r.code, r.stderr)
	}
}

// `git worktree add ../wt` under a policy that asks about the command:
// one prompt, which says what it covers, and the new worktree follows.
func TestWorktreeApprovedOnce(t *testing.T) {
	need(t, "git", "bash")
	s := newSandbox(t, `{ "permission": { "bash": { "git worktree *": "ask" } } }`)
	srv := srvSetup(t, s)
	ws := filepath.Join(srv, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, s, ws, "init", "-q")
	gitIn(t, s, ws, "commit", "-q", "--allow-empty", "-m", "one")
	ts := newTmuxEnv(t, s, false, nil, "unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount --bind "$0" /srv && cd /srv/ws && exec "$@"`, srv,
		permwrapBin, "--log", s.logPath, "--workspace", "/srv/ws", "--", "bash", "--norc", "--noprofile", "-i")
	ts.waitFor("$")
	ts.keys("git worktree add -q ../wt && echo made-$((1+1))", "Enter")
	scr := ts.waitFor("permwrap: permission request")
	mustContain(t, "the prompt", scr, "covers: writes in /srv/wt (the new worktree) and /srv/ws/.git/worktrees/wt")
	ts.answer(prompt{choose: "Allow once"})
	scr = ts.waitFor("made-2")
	if strings.Count(scr, "permission request") > 1 {
		t.Errorf("asked again for the worktree's writes:\n%s", scr)
	}
	ts.keys("exit", "Enter")
	ts.waitFor("PERMWRAP-EXIT=")
	if _, err := os.Stat(filepath.Join(srv, "wt", ".git")); err != nil {
		t.Errorf("the worktree was not made: %v", err)
	}
	if n := askedPerson(s, ""); n != 1 {
		t.Errorf("a person answered %d asks, want 1 (the command): %v", n, decisions(s, ""))
	}
}
