package supervisor_test

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/internal/testutil"
)

// tmuxSession drives a real terminal: permwrap runs inside tmux, keys are
// sent with send-keys and the screen is read with capture-pane.
type tmuxSession struct {
	t      *testing.T
	socket string
	name   string
}

func newTmux(t *testing.T, s *sandbox, argv ...string) *tmuxSession {
	t.Helper()
	return newTmuxEnv(t, s, true, nil, argv...)
}

// newTmuxEnv starts argv in a tmux session of its own server, 100×30,
// under permwrap when wrapped, with extra environment variables.
func newTmuxEnv(t *testing.T, s *sandbox, wrapped bool, extra []string, argv ...string) *tmuxSession {
	t.Helper()
	kerneltest.Tool(t, "tmux")
	ts := &tmuxSession{t: t, socket: filepath.Join(s.dir, "tmux.sock"), name: "pw"}
	env := []string{
		"PERMWRAP_CONFIG_DIR=" + s.configDir, "HOME=" + s.home,
		"XDG_STATE_HOME=" + filepath.Join(s.dir, "state"), "PS1=$ ", "TERM=xterm-256color",
	}
	env = append(env, extra...)
	cmd := append([]string{"env"}, env...)
	if wrapped {
		cmd = append(cmd, permwrapBin, "--log", s.logPath, "--workspace", s.workspace, "--")
	}
	cmd = append(cmd, argv...)
	// The shell keeps the pane open after permwrap exits so the last
	// screen can still be read.
	script := testutil.ShellQuote(cmd) + "; echo PERMWRAP-EXIT=$?; sleep 60"
	ts.tmux("new-session", "-d", "-s", ts.name, "-x", "100", "-y", "30", "-c", s.workspace, script)
	t.Cleanup(func() { exec.Command("tmux", "-S", ts.socket, "kill-server").Run() })
	return ts
}

func (ts *tmuxSession) tmux(args ...string) string {
	ts.t.Helper()
	return testutil.Tmux(ts.t, ts.socket, args...)
}

func (ts *tmuxSession) keys(keys ...string) {
	ts.t.Helper()
	ts.tmux(append([]string{"send-keys", "-t", ts.name}, keys...)...)
}

func (ts *tmuxSession) screen() string {
	ts.t.Helper()
	return ts.tmux("capture-pane", "-t", ts.name, "-p")
}

// waitFor polls the screen until it contains want.
func (ts *tmuxSession) waitFor(want string) string {
	ts.t.Helper()
	deadline := time.Now().Add(testutil.Scale(20 * time.Second))
	for {
		scr := ts.screen()
		if strings.Contains(scr, want) {
			return scr
		}
		if time.Now().After(deadline) {
			ts.t.Fatalf("screen never showed %q; it shows:\n%s", want, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const askPolicy = `{ "extends": "none", "permission": { "*": "allow",
  "write": { "*": "allow", "ASKME*": "ask", "${WORKSPACE}/guarded/**": "ask" } } }`

func TestPromptOverShell(t *testing.T) {
	s := newSandbox(t, askPolicy)
	ts := newTmux(t, s, "bash", "--norc", "--noprofile", "-i")
	ts.waitFor("$")
	ts.keys("echo before-ask; echo hello > ASKME1; echo after-ask", "Enter")
	scr := ts.waitFor("permwrap: permission request")
	mustContain(t, "prompt", scr, "write "+s.path("ASKME1"))
	mustContain(t, "prompt", scr, "rule write:ASKME*")
	mustContain(t, "prompt", scr, "Allow once")
	if strings.Contains(scr, "before-ask") {
		t.Errorf("the prompt is drawn over the agent's screen, not on the alternate screen:\n%s", scr)
	}
	ts.keys("Enter") // allow once
	scr = ts.waitFor("after-ask")
	// The shell's screen is back, with what it printed before the prompt.
	mustContain(t, "restored screen", scr, "before-ask")
	if strings.Contains(scr, "permission request") {
		t.Errorf("prompt left on screen:\n%s", scr)
	}
	if b, err := os.ReadFile(s.path("ASKME1")); err != nil || string(b) != "hello\n" {
		t.Fatalf("allowed-once write: %q %v; the screen:\n%s\nthe review log:\n%v", b, err, scr, s.logRecords())
	}

	// Deny: the write fails with EACCES in the shell.
	ts.keys("echo x > ASKME2 || echo write-refused", "Enter")
	ts.waitFor("Allow once")
	ts.answer(prompt{choose: "Deny"})
	ts.waitFor("write-refused")
	if s.exists("ASKME2") {
		t.Error("denied write happened")
	}

	// Allow for this session, then a second matching write does not ask.
	os.MkdirAll(s.path("guarded"), 0o755)
	ts.keys("echo one > guarded/a && echo first-done", "Enter")
	scr = ts.waitFor("Allow for this session")
	mustContain(t, "session option", scr, "write:"+s.path("guarded")+"/**")
	ts.answer(prompt{choose: "Allow for this session"})
	ts.waitFor("Allow for this session: write pattern")
	ts.keys("Enter") // accept the suggested pattern
	ts.waitFor("first-done")
	ts.keys("echo two > guarded/b && echo second-done", "Enter")
	scr = ts.waitFor("second-done")
	if strings.Contains(scr, "permission request") {
		t.Errorf("second matching write asked again:\n%s", scr)
	}
	ts.keys("exit", "Enter")
	ts.waitFor("PERMWRAP-EXIT=0")

	// Provenance: the approvals are the user's, the session rule is logged.
	var byUser, session, sessionRules int
	for _, rec := range s.logRecords() {
		if rec["requestId"] == nil || rec["decidedBy"] == nil {
			t.Errorf("record without requestId/decidedBy: %v", rec)
		}
		by, _ := rec["decidedBy"].(map[string]any)
		switch {
		case rec["event"] == "permission_request.approved" && by["kind"] == "user":
			byUser++
		case rec["event"] == "permission_request.allowed" && by["kind"] == "session_approval":
			session++
		case rec["event"] == "session.rules":
			sessionRules++
		}
	}
	if byUser != 2 || session < 1 || sessionRules != 1 {
		t.Errorf("log: %d user approvals (want 2), %d session-approved allows (want ≥1), %d session.rules records (want 1)", byUser, session, sessionRules)
	}
}

// Full-screen and incremental programs under the prompt: tui_test.go.

// A script that needs asking is asked once, before it runs, with its
// units; after the person allows it, the execs it makes do not ask again.
func TestScriptAskedOnce(t *testing.T) {
	need(t, "git")
	s := newSandbox(t, `{ "extends": "none", "permission": { "*": "allow", "bash": { "*": "allow", "git *": "ask" } } }`)
	ts := newTmux(t, s, "bash", "--norc", "--noprofile", "-i")
	ts.waitFor("$")
	// The script prints done-2, which its own text (shown in the prompt)
	// does not contain.
	ts.keys(`bash -c 'git --version >/dev/null && git version >/dev/null && echo done-$((1+1))'`, "Enter")
	scr := ts.waitFor("permwrap: permission request")
	mustContain(t, "prompt shows the units", scr, "git --version")
	mustContain(t, "prompt shows the units", scr, "git version")
	ts.keys("Enter") // allow once
	scr = ts.waitFor("done-2")
	if strings.Contains(scr, "permission request") {
		t.Errorf("asked again inside the approved script:\n%s", scr)
	}
	// Outside that script, the same command asks again.
	ts.keys("git version", "Enter")
	ts.waitFor("permwrap: permission request")
	ts.answer(prompt{choose: "Deny"})
	ts.waitFor("Permission denied")
	ts.keys("exit", "Enter")
	ts.waitFor("PERMWRAP-EXIT=")
	var dialog, script int
	for _, rec := range s.logRecords() {
		by, _ := rec["decidedBy"].(map[string]any)
		switch {
		case rec["event"] == "permission_request.approved" && by["kind"] == "user" && by["via"] == "dialog":
			dialog++
		case rec["event"] == "permission_request.allowed" && by["kind"] == "user" && by["via"] == "script approval":
			// The script's execs: nobody was asked again.
			script++
		}
	}
	if dialog != 1 || script != 2 {
		t.Errorf("approvals: %d by dialog (want 1), %d by the script approval (want 2)", dialog, script)
	}
}

// decisions counts the outcome records of the review log by event and
// by who decided ("user/dialog", "user/script approval",
// "session_approval", ...), for the requests whose value contains what.
func decisions(s *sandbox, what string) map[string]int {
	n := map[string]int{}
	for _, rec := range s.logRecords() {
		v, _ := rec["value"].(string)
		ev, _ := rec["event"].(string)
		if !strings.Contains(v, what) || ev == "permission_request.asked" {
			continue
		}
		by, _ := rec["decidedBy"].(map[string]any)
		who, _ := by["kind"].(string)
		if via, ok := by["via"].(string); ok {
			who += "/" + via
		}
		n[strings.TrimPrefix(ev, "permission_request.")+" by "+who]++
	}
	return n
}

// One shell write with a redirect is one intent: the person is asked
// once, for the script (which shows the redirect), and its own open of
// the file is then the script's, not a second prompt. After "allow for
// this session" of the suggested pattern (the file's directory, not the
// workspace), later writes there ask nothing.
func TestShellRedirectAskedOnce(t *testing.T) {
	s := newSandbox(t, `{ "extends": "none", "permission": { "*": "allow",
  "write": { "*": "allow", "${WORKSPACE}/asked/**": "ask" } } }`)
	if err := os.MkdirAll(s.path("asked"), 0o755); err != nil {
		t.Fatal(err)
	}
	ts := newTmux(t, s, "bash", "--norc", "--noprofile", "-i")
	ts.waitFor("$")

	// Allow once: one prompt, then the script runs to its end.
	ts.keys(`bash -c 'echo x > asked/a.txt && echo done-$((1+1))'`, "Enter")
	scr := ts.waitFor("permwrap: permission request")
	mustContain(t, "the prompt", scr, "Allow for this session: write:"+s.path("asked")+"/**")
	ts.answer(prompt{choose: "Allow once"})
	scr = ts.waitFor("done-2")
	if strings.Contains(scr, "permission request") {
		t.Fatalf("the redirect's open asked again:\n%s", scr)
	}
	if b, err := os.ReadFile(s.path("asked/a.txt")); err != nil || string(b) != "x\n" {
		t.Fatalf("asked/a.txt: %q %v", b, err)
	}

	// Allow for the session: the suggested pattern covers the next
	// writes, in a script or not.
	ts.keys(`bash -c 'echo y > asked/b.txt && echo done-$((1+2))'`, "Enter")
	ts.waitFor("permwrap: permission request")
	ts.answer(prompt{choose: "Allow for this session"})
	ts.waitFor("Allow for this session: write pattern")
	ts.keys("Enter")
	ts.waitFor("done-3")
	ts.keys(`bash -c 'echo z > asked/c.txt && echo done-$((1+3))'; echo w > asked/d.txt && echo done-$((1+4))`, "Enter")
	scr = ts.waitFor("done-5")
	if strings.Contains(scr, "permission request") {
		t.Fatalf("a write the session rule covers asked:\n%s", scr)
	}
	ts.keys("exit", "Enter")
	ts.waitFor("PERMWRAP-EXIT=0")

	// The review log: the person decided each script once; the opens are
	// the script approval's and the session rule's.
	for file, want := range map[string]map[string]int{
		"asked/a.txt": {"approved by user/dialog": 1, "allowed by user/script approval": 1},
		"asked/b.txt": {"approved by user/dialog": 1, "allowed by session_approval": 1},
		"asked/c.txt": {"allowed by session_approval": 2}, // the script, and its open
		"asked/d.txt": {"allowed by session_approval": 1},
	} {
		got := decisions(s, file)
		// The exec of bash itself is allowed by the policy's "*".
		delete(got, "allowed by rule")
		if !maps.Equal(got, want) {
			t.Errorf("%s: decisions %v, want %v", file, got, want)
		}
	}
	var rules []any
	for _, rec := range s.logRecords() {
		if rec["event"] == "session.rules" {
			rules, _ = rec["rules"].([]any)
		}
	}
	if len(rules) != 1 || rules[0].(map[string]any)["pattern"] != s.path("asked")+"/**" {
		t.Errorf("session rules at exit: %v", rules)
	}
}

// "Always deny" holds within the run: a later matching ask is denied
// without a prompt, and the rule is in policy.jsonc for the next run.
func TestAlwaysDenyWithinTheRun(t *testing.T) {
	s := newSandbox(t, `{ "extends": "none", "permission": { "*": "allow",
  "write": { "*": "allow", "${WORKSPACE}/never/**": "ask" } } }`)
	if err := os.MkdirAll(s.path("never"), 0o755); err != nil {
		t.Fatal(err)
	}
	ts := newTmux(t, s, "bash", "--norc", "--noprofile", "-i")
	ts.waitFor("$")
	ts.keys("echo a > never/1 || echo refused-$((0+1))", "Enter")
	scr := ts.waitFor("permwrap: permission request")
	mustContain(t, "the prompt", scr, "Always deny (policy.jsonc): write:"+s.path("never")+"/**")
	ts.answer(prompt{choose: "Always deny"})
	ts.waitFor("Always deny: write pattern")
	ts.keys("Enter")
	ts.waitFor("refused-1")
	ts.keys("echo b > never/2 || echo refused-$((1+1))", "Enter")
	scr = ts.waitFor("refused-2")
	if strings.Contains(scr, "permission request") {
		t.Fatalf("asked again after \"always deny\":\n%s", scr)
	}
	ts.keys("exit", "Enter")
	ts.waitFor("PERMWRAP-EXIT=")
	if s.exists("never/1") || s.exists("never/2") {
		t.Error("a denied write happened")
	}
	if got, want := decisions(s, "never/1"), map[string]int{"rejected by user/dialog": 1}; !maps.Equal(got, want) {
		t.Errorf("never/1: %v, want %v", got, want)
	}
	if got, want := decisions(s, "never/2"), map[string]int{"denied by user/always deny": 1}; !maps.Equal(got, want) {
		t.Errorf("never/2: %v, want %v", got, want)
	}
	b, err := os.ReadFile(filepath.Join(s.configDir, "policy.jsonc"))
	if err != nil || !strings.Contains(string(b), `"`+s.path("never")+`/**": "deny"`) {
		t.Errorf("policy.jsonc: %v\n%s", err, b)
	}
}

// Ctrl-C at a prompt denies the request and interrupts the command, as
// in a shell: the job that asked stops (its next line never runs), the
// shell that ran it stays and says so, and Esc only denies.
func TestPromptCtrlCInterrupts(t *testing.T) {
	s := newSandbox(t, askPolicy)
	ts := newTmux(t, s, "bash", "--norc", "--noprofile", "-i")
	ts.waitFor("$")
	// The target is known only when the line runs, so the write asks
	// while the job runs (not the script before it starts).
	ts.keys("bash -c 'f=ASKME$((0+1)); echo x > $f || echo write-refused; sleep 5; echo job-went-on'", "Enter")
	ts.waitFor("Allow once")
	ts.keys("C-c")
	ts.waitFor("(Ctrl-C)")
	ts.keys("echo status=$?", "Enter")
	scr := ts.waitFor("status=130")
	if strings.Contains(scr, "\njob-went-on") {
		t.Errorf("the job went on after Ctrl-C:\n%s", scr)
	}
	if s.exists("ASKME1") {
		t.Error("the interrupted request was carried out")
	}
	// Esc denies and the job goes on.
	ts.keys("bash -c 'f=ASKME$((1+1)); echo x > $f || echo write-refused; echo job-went-on'; echo status=$?", "Enter")
	ts.waitFor("Allow once")
	time.Sleep(100 * time.Millisecond)
	ts.keys("Escape")
	scr = ts.waitFor("status=0")
	mustContain(t, "after Esc", scr, "write-refused")
	mustContain(t, "after Esc", scr, "job-went-on")
	ts.keys("exit", "Enter")
	ts.waitFor("PERMWRAP-EXIT=0")
	var interrupted int
	for _, rec := range s.logRecords() {
		if reason, _ := rec["reason"].(string); rec["event"] == "permission_request.rejected" && strings.Contains(reason, "Ctrl-C") {
			interrupted++
		}
	}
	if interrupted != 1 {
		t.Errorf("%d denials logged as interrupted, want 1", interrupted)
	}
}
