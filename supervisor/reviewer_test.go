package supervisor_test

import (
	"bufio"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A headless run (stdin is not a terminal, no parent) whose only reviewer
// is a remote one at a local TLS server: the server allows one write,
// denies another and lets the third time out. The allowed file is
// written; the denied one fails with EACCES, as the shell says; the one
// nobody answered in time is denied (headless: there is nobody to ask);
// the review log names the reviewer and its reason, and never the token.
func TestRemoteReviewerHeadless(t *testing.T) {
	token := randomToken(t, "tok-")
	var mu sync.Mutex
	asked := map[string]string{} // value → Authorization header
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Surface string `json:"surface"`
			Value   string `json:"value"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		asked[req.Value] = r.Header.Get("Authorization")
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		answer := func(v, reason string) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"verdict": %q, "reason": %q}`, v, reason)
		}
		switch filepath.Base(req.Value) {
		case "ASKME-ok":
			answer("allow", "alice approved it in #agents")
		case "ASKME-no":
			answer("deny", "bob: not in this repository")
		case "ASKME-slow":
			select { // nobody answers
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
		default:
			answer("defer", "not ours")
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()

	s := newSandbox(t, "")
	caFile := filepath.Join(s.dir, "team-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf(`{
  "extends": "none",
  "permission": {"*": "allow", "write": {"${WORKSPACE}/ASKME*": "ask"}},
  "authorizerChain": ["team-review"],
  "authorizers": {"team-review": {
    "url": %q,
    "headers": {"Authorization": "Bearer ${env:PERMWRAP_E2E_REVIEW_TOKEN}"},
    "caFile": %q,
    "timeoutMs": 3000}},
  "modelDelegation": {"allowedSurfaces": ["write"]}
}`, srv.URL+"/permwrap/ask", caFile)
	if err := os.WriteFile(filepath.Join(s.configDir, "policy.jsonc"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	s.env = append(s.env, "PERMWRAP_E2E_REVIEW_TOKEN="+token)

	start := time.Now()
	// One write per ask: a script whose targets are literal is one ask
	// about all of them (its suggestions name each), so the names here
	// come from a loop.
	r := s.run("sh", "-c", `for f in ok no slow; do echo "$f" > "ASKME-$f"; done; echo done`)
	took := time.Since(start)
	if !strings.Contains(r.stdout, "done") {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	checkReviewerFiles(t, s, r)
	mu.Lock()
	for _, f := range []string{"ASKME-ok", "ASKME-no", "ASKME-slow"} {
		if got, ok := asked[s.path(f)]; !ok || got != "Bearer "+token {
			t.Errorf("the reviewer was asked about %s: %v, with Authorization %q", f, ok, got)
		}
	}
	mu.Unlock()
	if took < 3*time.Second {
		t.Errorf("the run took %v: the slow ask did not wait for timeoutMs", took)
	}

	raw := checkReviewerLog(t, s, token, "alice approved it in #agents", "bob: not in this repository", "no answer within 3s")
	if t.Failed() {
		t.Logf("stderr:\n%s\nreview log:\n%s", r.stderr, raw)
	}
}

// checkReviewerLog checks the review log of a run whose reviewer
// team-review allowed ASKME-ok, denied ASKME-no and let ASKME-slow go
// unanswered (a defer whose note or reason says slowSays): each decision
// names who made it, with the reviewer's reason; the token is nowhere.
func checkReviewerLog(t *testing.T, s *sandbox, token, okReason, noReason, slowSays string) []byte {
	t.Helper()
	type rec struct {
		Event     string `json:"event"`
		Value     string `json:"value"`
		DecidedBy struct {
			Kind, Name, Verdict, Reason string
		} `json:"decidedBy"`
		Links []struct{ Name, Verdict, Reason, Note string } `json:"links"`
	}
	decided := map[string]rec{}
	var slowLinks []struct{ Name, Verdict, Reason, Note string }
	raw, err := os.ReadFile(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), token) {
		t.Error("the review log holds the token")
	}
	for _, m := range s.logRecords() {
		b, _ := json.Marshal(m)
		var x rec
		json.Unmarshal(b, &x)
		switch x.Event {
		case "permission_request.approved", "permission_request.rejected":
			decided[filepath.Base(x.Value)] = x
		case "authorizer_chain.resolved":
			if len(x.Links) == 1 && x.DecidedBy.Kind == "unavailable" {
				slowLinks = x.Links
			}
		}
	}
	if d := decided["ASKME-ok"]; d.Event != "permission_request.approved" || d.DecidedBy.Kind != "authorizer" || d.DecidedBy.Name != "team-review" || d.DecidedBy.Reason != okReason {
		t.Errorf("ASKME-ok: %+v", d)
	}
	if d := decided["ASKME-no"]; d.Event != "permission_request.rejected" || d.DecidedBy.Kind != "authorizer" || d.DecidedBy.Name != "team-review" || d.DecidedBy.Reason != noReason {
		t.Errorf("ASKME-no: %+v", d)
	}
	if d := decided["ASKME-slow"]; d.Event != "permission_request.rejected" || d.DecidedBy.Kind != "unavailable" {
		t.Errorf("ASKME-slow: %+v, want denied for want of anyone to ask", d)
	}
	if len(slowLinks) != 1 || slowLinks[0].Name != "team-review" || slowLinks[0].Verdict != "defer" || !strings.Contains(slowLinks[0].Note+slowLinks[0].Reason, slowSays) {
		t.Errorf("the slow ask's chain record: %+v", slowLinks)
	}
	return raw
}

// checkReviewerFiles checks what the command of such a run did: ASKME-ok
// written, the other two refused with EACCES, as the shell says.
func checkReviewerFiles(t *testing.T, s *sandbox, r result) {
	t.Helper()
	if b, err := os.ReadFile(s.path("ASKME-ok")); err != nil || string(b) != "ok\n" {
		t.Errorf("the reviewer's allow: ASKME-ok %q, %v", b, err)
	}
	for _, f := range []string{"ASKME-no", "ASKME-slow"} {
		if s.exists(f) {
			t.Errorf("%s was written", f)
		}
		if !strings.Contains(r.stderr, f+": Permission denied") {
			t.Errorf("the shell does not say %s: Permission denied; stderr:\n%s", f, r.stderr)
		}
	}
}

// The reviewer docs/teams.md offers to start from, run as it is: the
// program is taken from the page, started on a free loopback port, and a
// headless run's three asks are answered through its links as a person
// would (open the link, press a button): one allow, one deny, one not at
// all.
func TestTeamsReviewerExample(t *testing.T) {
	python := realPython(t)
	page, err := os.ReadFile("../docs/teams.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- supervisor/reviewer_test.go (TestTeamsReviewerExample) runs this program. -->\n```python\n"
	_, rest, ok := strings.Cut(string(page), marker)
	program, _, ok2 := strings.Cut(rest, "\n```\n")
	if !ok || !ok2 {
		t.Fatal("docs/teams.md has no reviewer program after the marker")
	}
	s := newSandbox(t, "")
	script := filepath.Join(s.dir, "reviewer.py")
	if err := os.WriteFile(script, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	token := randomToken(t, "tok-")
	srv := exec.Command(python, script)
	srv.Env = append(os.Environ(), "REVIEW_TOKEN="+token, "REVIEW_PORT="+port, "REVIEW_WAIT=3")
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var srvErr strings.Builder
	srv.Stderr = &srvErr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the reviewer did not start listening on %s", addr)
		}
	}

	// The person: reads each message, opens its link, presses a button.
	answered := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(out)
		file := ""
		for sc.Scan() {
			line := sc.Text()
			if _, v, ok := strings.Cut(line, " asks: write "); ok {
				file = filepath.Base(v)
			}
			link, ok := strings.CutPrefix(line, "answer: ")
			if !ok || file == "ASKME-slow" {
				continue
			}
			answered <- answerLink(link, file, map[string]string{"ASKME-ok": "allow", "ASKME-no": "deny"}[file])
		}
	}()

	policy := fmt.Sprintf(`{
  "extends": "none",
  "permission": {"*": "allow", "write": {"${WORKSPACE}/ASKME*": "ask"}},
  "authorizerChain": ["team-review"],
  "authorizers": {"team-review": {
    "url": "http://%s/permwrap/ask",
    "headers": {"Authorization": "Bearer ${env:PERMWRAP_REVIEW_TOKEN}"},
    "timeoutMs": 20000}},
  "modelDelegation": {"allowedSurfaces": ["write"]}
}`, addr)
	if err := os.WriteFile(filepath.Join(s.configDir, "policy.jsonc"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	s.env = append(s.env, "PERMWRAP_REVIEW_TOKEN="+token)
	r := s.run("sh", "-c", `for f in ok no slow; do echo "$f" > "ASKME-$f"; done; echo done`)
	if !strings.Contains(r.stdout, "done") {
		t.Fatalf("exit %d, stdout %q; stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var got []string
	for len(answered) > 0 {
		got = append(got, <-answered)
	}
	if strings.Join(got, ", ") != "ASKME-ok allow, ASKME-no deny" {
		t.Errorf("the person's answers: %q", got)
	}
	checkReviewerFiles(t, s, r)
	raw := checkReviewerLog(t, s, token, "approved in chat", "a reviewer said no in chat", "nobody answered")
	if t.Failed() {
		t.Logf("stderr:\n%s\nthe reviewer's stderr:\n%s\nreview log:\n%s", r.stderr, srvErr.String(), raw)
	}
}

// answerLink opens an answer link and presses the button for verdict:
// what a person does in the chat tool.
func answerLink(link, file, verdict string) string {
	resp, err := http.Get(link)
	if err != nil {
		return "GET: " + err.Error()
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "<form method=post>") {
		return fmt.Sprintf("the link shows %q", page)
	}
	resp, err = http.Post(link, "application/x-www-form-urlencoded", strings.NewReader("v="+verdict))
	if err != nil {
		return "POST: " + err.Error()
	}
	resp.Body.Close()
	return file + " " + verdict
}
