package supervisor_test

// Nested permwraps (issue 12, docs/nesting.md) with real processes: a
// permwrap started inside a permwrap registers a node with the outer
// one, which judges the node's subtree by both policies.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/internal/testutil"
)

// inner is one nested permwrap of a test: its own configuration
// directory and policy, its own review log, its name.
type inner struct {
	t         *testing.T
	name      string
	configDir string
	logPath   string
	flags     []string
}

// newInner writes an inner permwrap's policy (JSONC; "" for the
// embedded default) under the sandbox's directory.
func (s *sandbox) newInner(name, policy string, flags ...string) *inner {
	s.t.Helper()
	dir := filepath.Join(s.dir, "inner-"+name)
	in := &inner{t: s.t, name: name, configDir: filepath.Join(dir, "config"), logPath: filepath.Join(dir, "review.jsonl"), flags: flags}
	if err := os.MkdirAll(in.configDir, 0o755); err != nil {
		s.t.Fatal(err)
	}
	if policy != "" {
		if err := os.WriteFile(filepath.Join(in.configDir, "policy.jsonc"), []byte(policy), 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
	return in
}

// argv is the inner permwrap's command line up to and including "--".
func (in *inner) argv() []string {
	a := []string{permwrapBin, "--config-dir", in.configDir, "--log", in.logPath, "--name", in.name}
	return append(append(a, in.flags...), "--")
}

// wrap is argv run under the inner permwrap.
func (in *inner) wrap(argv ...string) []string { return append(in.argv(), argv...) }

// shell is argv quoted for sh.
func shell(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// writer is a script that tries to write each file it is given and says
// what happened (the names are arguments, so no command analysis of a
// redirect can refuse the script itself).
const writerScript = `#!/bin/sh
for f; do
	if (echo x > "$f") 2>/dev/null; then echo "WROTE $f"; else echo "REFUSED $f"; fi
done
`

func (s *sandbox) writer() string {
	s.t.Helper()
	s.write("w.sh", writerScript)
	if err := os.Chmod(s.path("w.sh"), 0o755); err != nil {
		s.t.Fatal(err)
	}
	return s.path("w.sh")
}

// openPolicy is a whole policy that allows everything but the given
// write rules (JSON members, e.g. `"${WORKSPACE}/x": "deny"`).
func openPolicy(writeRules string) string {
	if writeRules != "" {
		writeRules = ", " + writeRules
	}
	return `{"extends": "none", "permission": {"*": "allow", "read": {"*": "allow"}, "exec": {"*": "allow"}, "bash": {"*": "allow"},
  "write": {"*": "allow"` + writeRules + `}}}`
}

func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l+"\n") {
			t.Errorf("output lacks %q:\n%s", l, out)
		}
	}
}

// (1) An inner policy denies a write the outer allows: denied inside the
// inner's subtree, still allowed for the outer's other processes, before,
// during and after the inner runs.
func TestNestedInnerDenies(t *testing.T) {
	s := newSandbox(t, openPolicy(""))
	w := s.writer()
	in := s.newInner("reviewer", openPolicy(`"${WORKSPACE}/inner-denied*": "deny"`))
	script := fmt.Sprintf(`%[1]s inner-denied-before
%[1]s inner-denied-during-prep
(sleep 1; %[1]s inner-denied-during) &
%[2]s
echo "INNER-EXIT $?"
wait
%[1]s inner-denied-after`, w, shell(in.wrap("sh", "-c", "sleep 2; "+w+" inner-denied-inside allowed-inside")))
	r := s.run("sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	wantLines(t, r.stdout,
		"WROTE inner-denied-before", "WROTE inner-denied-during", "WROTE inner-denied-after",
		"REFUSED inner-denied-inside", "WROTE allowed-inside", "INNER-EXIT 0")
	if s.exists("inner-denied-inside") {
		t.Error("the inner's denied write happened")
	}
	mustContain(t, "stderr", r.stderr, "denied write "+s.path("inner-denied-inside"))

	// The root's log names the node on its records and holds the
	// registration; the inner's log has its subtree's records, forwarded.
	var rootDeny, registered bool
	for _, rec := range s.logRecords() {
		if rec["event"] == "permission_request.denied" && rec["value"] == s.path("inner-denied-inside") {
			rootDeny = true
			if rec["node"] != "reviewer#1" {
				t.Errorf("root's denial record names node %v, want reviewer#1", rec["node"])
			}
			by, _ := rec["decidedBy"].(map[string]any)
			if by["kind"] != "rule" || !strings.Contains(fmt.Sprint(by["position"]), in.configDir) {
				t.Errorf("root's denial decidedBy %v: want the inner's rule", by)
			}
		}
		if rec["event"] == "nesting.registered" && rec["node"] == "reviewer#1" {
			registered = true
		}
		if rec["event"] == "permission_request.allowed" && rec["value"] == s.path("inner-denied-after") && rec["node"] != nil {
			t.Errorf("an outer process's record names a node: %v", rec)
		}
	}
	if !rootDeny || !registered {
		t.Errorf("root log: denial recorded %v, registration recorded %v", rootDeny, registered)
	}
	var innerDeny bool
	for _, rec := range readLogFile(t, in.logPath) {
		if rec["node"] != "reviewer#1" {
			t.Errorf("inner log record of another node: %v", rec)
		}
		by, _ := rec["decidedBy"].(map[string]any)
		if by["kind"] != "forwarded" || by["responder"] != "root" {
			t.Errorf("inner log record not forwarded: %v", rec)
		}
		if rec["event"] == "permission_request.denied" && rec["value"] == s.path("inner-denied-inside") {
			innerDeny = true
			if d, _ := by["decision"].(map[string]any); d["kind"] != "rule" {
				t.Errorf("forwarded decision %v, want the rule", by)
			}
		}
		if v, _ := rec["value"].(string); strings.Contains(v, "inner-denied-before") || strings.Contains(v, "inner-denied-after") {
			t.Errorf("the inner's log holds an outer process's record: %v", rec)
		}
	}
	if !innerDeny {
		t.Error("the inner's log lacks the denial of its subtree")
	}
}

// (2) The outer denies; the inner allows everything, with --yolo: still
// denied inside. An outer ask stays an ask (and a headless root denies
// it); yolo only answers the inner's own layer.
func TestNestedYoloCannotLoosen(t *testing.T) {
	s := newSandbox(t, openPolicy(`"${WORKSPACE}/outer-denied": "deny", "${WORKSPACE}/outer-asks": "ask"`))
	w := s.writer()
	in := s.newInner("yolo", `{"extends": "none", "permission": {"*": "allow", "write": {"*": "ask"}}}`, "--yolo")
	r := s.run(in.wrap(w, "outer-denied", "outer-asks", "fine")...)
	wantLines(t, r.stdout, "REFUSED outer-denied", "REFUSED outer-asks", "WROTE fine")
	if s.exists("outer-denied") || s.exists("outer-asks") {
		t.Error("an outer deny or ask was loosened by the inner's yolo")
	}
	mustContain(t, "stderr", r.stderr, "denied write "+s.path("outer-asks"))
	var unavailable bool
	for _, rec := range s.logRecords() {
		by, _ := rec["decidedBy"].(map[string]any)
		if rec["value"] == s.path("outer-asks") && rec["event"] == "permission_request.rejected" && by["kind"] == "unavailable" && rec["node"] == "yolo#1" {
			unavailable = true
		}
	}
	if !unavailable {
		t.Error("the outer's ask was not put to the (headless) root: no rejected record with decidedBy unavailable")
	}
}

// (3) Three levels, each adding one deny: all three hold in the
// innermost, and each level still writes what only the deeper ones deny.
func TestNestedThreeLevels(t *testing.T) {
	s := newSandbox(t, openPolicy(`"${WORKSPACE}/d0": "deny"`))
	w := s.writer()
	l1 := s.newInner("one", openPolicy(`"${WORKSPACE}/d1": "deny"`))
	l2 := s.newInner("two", openPolicy(`"${WORKSPACE}/d2": "deny"`))
	script := fmt.Sprintf("%s d2-by-1; %s", w, shell(l2.wrap(w, "d0", "d1", "d2", "ok2")))
	r := s.run(l1.wrap("sh", "-c", script)...)
	wantLines(t, r.stdout, "WROTE d2-by-1", "REFUSED d0", "REFUSED d1", "REFUSED d2", "WROTE ok2")
	if r.code != 0 {
		t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	nodes := map[string]bool{}
	for _, rec := range s.logRecords() {
		if rec["event"] == "permission_request.denied" {
			nodes[fmt.Sprint(rec["value"], " ", rec["node"])] = true
		}
	}
	for _, f := range []string{"d0", "d1", "d2"} {
		if !nodes[s.path(f)+" two#2"] {
			t.Errorf("root log: no denial of %s for node two#2 (%v)", f, nodes)
		}
	}
	// The middle permwrap's log gets its subtree's records, the deepest
	// node's included; the deepest one's only its own.
	var midSawDeep bool
	for _, rec := range readLogFile(t, l1.logPath) {
		if rec["node"] == "two#2" && rec["value"] == s.path("d1") {
			midSawDeep = true
		}
	}
	if !midSawDeep {
		t.Error("the middle permwrap's log lacks the records of the node beneath it")
	}
	for _, rec := range readLogFile(t, l2.logPath) {
		if rec["node"] != "two#2" {
			t.Errorf("the deepest permwrap's log holds another node's record: %v", rec)
		}
	}
}

// (4) An inner ask, adjudicated by the outer's exec judge link: allowed;
// the outer's log names the link and the node, the inner's shows the
// same decision as forwarded, and the link saw which node asked.
func TestNestedAskGoesToRootsChain(t *testing.T) {
	need(t, "python3")
	s := newSandbox(t, "")
	report := filepath.Join(s.dir, "judge-saw.json")
	judge := filepath.Join(s.dir, "judge.py")
	if err := os.WriteFile(judge, []byte(`#!/usr/bin/env python3
import json, sys
req = sys.stdin.read()
with open(sys.argv[1], "w") as f:
    f.write(req)
print(json.dumps({"verdict": "allow"}))
`), 0o755); err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf(`{"extends": "none", "permission": {"*": "allow", "read": {"*": "allow"}, "bash": {"*": "allow"},
  "write": {"*": "allow", "${WORKSPACE}/asked": "ask"}},
  "authorizerChain": ["judge"],
  "authorizers": {"judge": {"command": ["python3", %q, %q], "timeoutMs": 20000}},
  "modelDelegation": {"allowedSurfaces": ["write"]}}`, judge, report)
	if err := os.WriteFile(filepath.Join(s.configDir, "policy.jsonc"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	w := s.writer()
	// The inner asks about the same write itself, and has a chain of its
	// own that would deny: it must not run (one chain per node).
	innerPolicy := `{"extends": "none", "permission": {"*": "allow", "read": {"*": "allow"}, "write": {"*": "allow", "${WORKSPACE}/asked": "ask"}},
  "authorizerChain": ["no"], "authorizers": {"no": {"command": ["false"]}}, "modelDelegation": {"allowedSurfaces": ["write"]}}`
	in := s.newInner("asker", innerPolicy)
	r := s.run(in.wrap(w, "asked")...)
	wantLines(t, r.stdout, "WROTE asked")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	var saw struct {
		Node        string   `json:"node"`
		NodeCommand []string `json:"nodeCommand"`
		Value       string   `json:"value"`
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("the root's judge never ran: %v", err)
	}
	if err := json.Unmarshal(b, &saw); err != nil || saw.Node != "asker#1" || len(saw.NodeCommand) == 0 || saw.NodeCommand[0] != w {
		t.Errorf("the judge's request names node %q running %q (%v); want asker#1 running %s", saw.Node, saw.NodeCommand, err, w)
	}
	var rootID string
	for _, rec := range s.logRecords() {
		if rec["event"] == "permission_request.approved" && rec["value"] == s.path("asked") {
			by, _ := rec["decidedBy"].(map[string]any)
			if by["kind"] != "authorizer" || by["name"] != "judge" || rec["node"] != "asker#1" {
				t.Errorf("root's record: decidedBy %v node %v; want the judge link and asker#1", by, rec["node"])
			}
			rootID, _ = rec["requestId"].(string)
		}
	}
	if rootID == "" {
		t.Fatal("root log has no approved record of the ask")
	}
	var innerSaw bool
	for _, rec := range readLogFile(t, in.logPath) {
		if rec["event"] == "permission_request.approved" && rec["value"] == s.path("asked") {
			innerSaw = true
			by, _ := rec["decidedBy"].(map[string]any)
			d, _ := by["decision"].(map[string]any)
			if by["kind"] != "forwarded" || by["responder"] != "root" || by["node"] != "asker#1" || d["kind"] != "authorizer" || d["name"] != "judge" {
				t.Errorf("inner's record decidedBy %v; want forwarded from root, the judge deciding", by)
			}
			if rec["requestId"] != rootID {
				t.Errorf("inner's record has request id %v, root's %v: one request, one id", rec["requestId"], rootID)
			}
		}
	}
	if !innerSaw {
		t.Error("the inner's log lacks the approved record")
	}
}

// (5) An inner ask at a person's terminal: the root's prompt names the
// node and its command; "allow for this session" covers the node's
// subtree only.
func TestNestedPromptNamesNode(t *testing.T) {
	s := newSandbox(t, askPolicy)
	w := s.writer()
	if err := os.MkdirAll(s.path("guarded"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := s.newInner("helper", openPolicy(""))
	script := fmt.Sprintf("%s; echo INNER-DONE; %s guarded/outer; echo OUTER-DONE", shell(in.wrap("sh", "-c", w+" guarded/a; "+w+" guarded/b")), w)
	ts := newTmux(t, s, "sh", "-c", script)
	scr := ts.waitFor("permwrap: permission request")
	mustContain(t, "prompt", scr, "node:  helper#1")
	mustContain(t, "prompt", scr, "permwrap -- sh -c")
	mustContain(t, "prompt", scr, "write "+s.path("guarded/a"))
	ts.answer(prompt{choose: "Allow for this session"})
	ts.waitFor("Allow for this session: write pattern")
	ts.keys("Enter")
	// The approval was the node's: the outer's own write asks again (and
	// the inner's second write did not: counted in the log below).
	scr = ts.waitFor("write " + s.path("guarded/outer"))
	if strings.Contains(scr, "node:") {
		t.Errorf("the outer's own request names a node:\n%s", scr)
	}
	ts.answer(prompt{choose: "Deny"})
	scr = ts.waitFor("OUTER-DONE")
	mustContain(t, "screen", scr, "INNER-DONE")
	if strings.Count(scr, "WROTE guarded/") != 2 || !strings.Contains(scr, "REFUSED guarded/outer") {
		t.Errorf("want the inner's two writes done and the outer's refused:\n%s", scr)
	}
	ts.waitFor("PERMWRAP-EXIT=0")
	if s.exists("guarded/outer") {
		t.Error("the outer's write happened although it was denied")
	}
	var asked, session int
	for _, rec := range s.logRecords() {
		by, _ := rec["decidedBy"].(map[string]any)
		switch {
		case rec["event"] == "permission_request.asked" && rec["node"] == "helper#1":
			asked++
		case rec["event"] == "permission_request.allowed" && by["kind"] == "session_approval" && rec["node"] == "helper#1":
			session++
		}
	}
	if asked != 1 || session < 1 {
		t.Errorf("node helper#1: %d asks (want 1), %d session-approved allows (want ≥1)", asked, session)
	}
}

// (6) env -i: the knock needs no environment, so an inner started with a
// cleared environment either reaches its parent (both policies hold) or
// refuses to run; it never runs with fewer rules.
func TestNestedEnvCleared(t *testing.T) {
	s := newSandbox(t, openPolicy(`"${WORKSPACE}/outer-denied": "deny"`))
	w := s.writer()
	in := s.newInner("bare", openPolicy(`"${WORKSPACE}/inner-denied": "deny"`))

	// With only HOME (which the inner's configuration needs): nested.
	r := s.run(append([]string{"env", "-i", "HOME=" + s.home}, in.wrap(w, "outer-denied", "inner-denied", "ok")...)...)
	wantLines(t, r.stdout, "REFUSED outer-denied", "REFUSED inner-denied", "WROTE ok")
	if r.code != 0 {
		t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
	}

	// With nothing at all: it cannot load its configuration, and says so.
	r = s.run(append([]string{"env", "-i"}, in.wrap(w, "outer-denied", "inner-denied")...)...)
	if strings.Contains(r.stdout, "WROTE") || s.exists("outer-denied") || s.exists("inner-denied") {
		t.Errorf("a denied write happened with a cleared environment:\n%s", r.stdout)
	}
	if r.code != 125 && !strings.Contains(r.stdout, "REFUSED inner-denied") {
		t.Errorf("with a cleared environment the inner neither nested nor refused: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// (7) A process that double-forks out of the inner permwrap and keeps
// writing after the inner exits still meets the inner's rules; the node
// goes once its last process does.
func TestNestedOutlivesInner(t *testing.T) {
	kerneltest.Long(t)
	s := newSandbox(t, openPolicy(""))
	w := s.writer()
	in := s.newInner("daemon", openPolicy(`"${WORKSPACE}/inner-denied*": "deny"`))
	// The daemon: setsid in a subshell that exits at once, so it is
	// re-parented (to the keeper, the subtree's subreaper).
	daemon := fmt.Sprintf("(setsid sh -c 'sleep 2; %s inner-denied-late ok-late > daemon.out' &); echo INNER-LEAVES", w)
	script := fmt.Sprintf("%s; echo \"INNER-EXIT $?\"; test -e daemon.out && echo TOO-EARLY; sleep 5; cat daemon.out", shell(in.wrap("sh", "-c", daemon)))
	r := s.run("sh", "-c", script)
	wantLines(t, r.stdout, "INNER-LEAVES", "INNER-EXIT 0", "REFUSED inner-denied-late", "WROTE ok-late")
	if strings.Contains(r.stdout, "TOO-EARLY") {
		t.Fatalf("the daemon ran before the inner exited; the test proves nothing:\n%s", r.stdout)
	}
	if s.exists("inner-denied-late") {
		t.Error("a process of the node wrote what the node denies after the inner exited")
	}
	// The node was settled: done (its keeper saw the subtree empty).
	var done bool
	for _, rec := range s.logRecords() {
		if rec["event"] == "nesting.done" && rec["node"] == "daemon#1" {
			done = true
		}
	}
	if !done {
		t.Error("the keeper never said its subtree was empty")
	}
}

// The inner's command's exit status passes through as without nesting.
func TestNestedExitStatus(t *testing.T) {
	s := newSandbox(t, openPolicy(""))
	in := s.newInner("st", openPolicy(""))
	for _, c := range []struct {
		argv []string
		want int
	}{
		{[]string{"sh", "-c", "exit 7"}, 7},
		{[]string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
		{[]string{"/nonexistent/program"}, 127},
		{[]string{"true"}, 0},
	} {
		r := s.run(append([]string{"sh", "-c", `"$@"; echo "STATUS $?"`, "sh"}, in.wrap(c.argv...)...)...)
		wantLines(t, r.stdout, fmt.Sprintf("STATUS %d", c.want))
	}
}

// A node the root cannot enforce is refused, and the inner permwrap
// exits 125 with the root's reason: here the root's policy allows every
// read (its filter does not see plain reads) and the inner's has read
// rules.
func TestNestedRefusedNode(t *testing.T) {
	s := newSandbox(t, openPolicy(""))
	in := s.newInner("reader", `{"extends": "none", "permission": {"*": "allow", "read": {"*": "allow", "${WORKSPACE}/secret": "deny"}}}`)
	s.write("secret", "s\n")
	start := time.Now()
	r := s.run(in.wrap("cat", "secret")...)
	if r.code != 125 || strings.Contains(r.stdout, "s\n") {
		t.Fatalf("exit %d (want 125), stdout %q", r.code, r.stdout)
	}
	mustContain(t, "stderr", r.stderr, "cannot enforce the node's read rules")
	if time.Since(start) > time.Minute {
		t.Errorf("refusal took %v", time.Since(start))
	}
}

// An outer permwrap whose filter leaves listings free cannot judge an
// inner one's listings: an inner policy with "listings": "judged" is
// refused, with the reason; the same inner under an outer that judges
// listings runs, and its listing of a denied directory is denied.
func TestNestedListingsJudged(t *testing.T) {
	const outer = `"${WORKSPACE}/outer-denied/**": "deny"`
	inner := `{"extends": "none", "listings": "judged", "permission": {"*": "allow", "read": {"*": "allow", "${WORKSPACE}/secret/**": "deny"}}}`
	s := newSandbox(t, `{"extends": "none", "permission": {"*": "allow", "read": {"*": "allow", `+outer+`}}}`)
	in := s.newInner("lister", inner)
	s.write("secret/key", "s\n")
	r := s.run(in.wrap("ls", "secret")...)
	if r.code != 125 || strings.Contains(r.stdout, "key") {
		t.Fatalf("exit %d (want 125), stdout %q", r.code, r.stdout)
	}
	mustContain(t, "stderr", r.stderr, "cannot judge the node's listings")

	s = newSandbox(t, `{"extends": "none", "listings": "judged", "permission": {"*": "allow", "read": {"*": "allow", `+outer+`}}}`)
	in = s.newInner("lister", inner)
	s.write("secret/key", "s\n")
	r = s.run(in.wrap("sh", "-c", `ls secret; echo "STATUS $?"`)...)
	if strings.Contains(r.stdout, "key") {
		t.Fatalf("the inner's judged listing of secret/ got through: stdout %q", r.stdout)
	}
	wantLines(t, r.stdout, "STATUS 2")
}

// A keeper killed from outside while its subtree lives (nothing inside
// can signal it): its orphans are re-parented above it, where they could
// be the parent node's. One first seen after that is judged by every
// candidate node's chain, so the node's rules still hold for it.
func TestNestedKilledKeeperFailsClosed(t *testing.T) {
	s := newSandbox(t, openPolicy(""))
	w := s.writer()
	in := s.newInner("victim", openPolicy(`"${WORKSPACE}/inner-denied*": "deny"`))
	// The subshell makes no watched call until the test says go (the
	// loop is builtins only), so it is first seen after the keeper died.
	orphan := fmt.Sprintf(`( while [ ! -e go ]; do :; done; exec %s inner-denied-late ok-late > orphan.out ) & echo STARTED`, w)
	done := make(chan result, 1)
	go func() {
		done <- s.run("sh", "-c", shell(in.wrap("sh", "-c", orphan))+`; while [ ! -e orphan.out ] || [ ! -s orphan.out ]; do sleep 0.2; done; sleep 0.5; cat orphan.out`)
	}()
	// The keeper's pid is in the root's registration record.
	keeper := 0
	deadline := time.Now().Add(testutil.Scale(60 * time.Second))
	for keeper == 0 {
		if time.Now().After(deadline) {
			s.write("go", "")
			t.Fatalf("no registration recorded; run: %+v", <-done)
		}
		time.Sleep(100 * time.Millisecond)
		if _, err := os.Stat(s.logPath); err != nil {
			continue
		}
		for _, rec := range s.logRecords() {
			if rec["event"] == "nesting.registered" && rec["node"] == "victim#1" {
				keeper = int(rec["pid"].(float64))
			}
		}
	}
	// Wait for the inner command to be gone (the orphan is then the
	// keeper's child), kill the keeper, then let the orphan go.
	for {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", keeper, keeper))
		kids := strings.Fields(string(b))
		if len(kids) == 1 && !strings.Contains(r0(kids[0]), "permwrap") {
			break // the exec stage became sh, which exited; its orphan is left
		}
		if time.Now().After(deadline) {
			s.write("go", "")
			t.Fatalf("the keeper never had just the orphan as its child (children %q)", kids)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(keeper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	s.write("go", "")
	r := <-done
	wantLines(t, r.stdout, "REFUSED inner-denied-late", "WROTE ok-late")
	if s.exists("inner-denied-late") {
		t.Fatal("an orphan of a node whose keeper was killed wrote what the node denies")
	}
	for _, rec := range s.logRecords() {
		if rec["event"] == "permission_request.denied" && rec["value"] == s.path("inner-denied-late") {
			t.Logf("the orphan was judged as node %v", rec["node"])
		}
	}
}

// r0 is a process's comm, "" when it is gone.
func r0(pid string) string {
	b, _ := os.ReadFile("/proc/" + pid + "/comm")
	return string(b)
}
