package authority

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permwrap/permwrap/engine"
)

// reviewServer is a remote reviewer on this machine: a TLS server whose
// certificate is in caFile, and what it was sent.
type reviewServer struct {
	*httptest.Server
	caFile string

	mu  sync.Mutex
	got []received
}

type received struct {
	header http.Header
	body   []byte
}

func (s *reviewServer) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.got...)
}

// newReviewServer starts a TLS reviewer that records each request and
// answers with answer.
func newReviewServer(t *testing.T, answer http.HandlerFunc) *reviewServer {
	t.Helper()
	s := &reviewServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, received{r.Header.Clone(), b})
		s.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		answer(w, r)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the TLS failures are the point of some tests
	s.StartTLS()
	t.Cleanup(s.Close)
	s.caFile = writePEM(t, s.Certificate().Raw)
	return s
}

func writePEM(t *testing.T, der []byte) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// jsonAnswer answers 200 with body as application/json.
func jsonAnswer(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// remoteSettings compiles a global policy that defines one url
// authorizer, "team-review", with the keys in spec (a JSON object's
// members).
func remoteSettings(t *testing.T, spec string) (engine.Settings, error) {
	t.Helper()
	src := fmt.Sprintf(`{"extends": "none", "authorizerChain": ["team-review"], "authorizers": {"team-review": {%s}}}`, spec)
	p, _, err := engine.Compile(engine.Config{Env: engine.Env{Home: "/h", Workspace: "/w", TmpDir: "/tmp"},
		Global: &engine.File{Name: "policy.jsonc", Data: []byte(src)}})
	if err != nil {
		return engine.Settings{}, err
	}
	return p.Settings(), nil
}

// remoteLink builds the "team-review" link through Links, as a run does.
func remoteLink(t *testing.T, spec string) (*HTTPAuthorizer, map[string]Authorizer, map[string]time.Duration) {
	t.Helper()
	s, err := remoteSettings(t, spec)
	if err != nil {
		t.Fatal(err)
	}
	links, timeouts, err := Links(s.Authorizers, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, ok := links["team-review"].(*HTTPAuthorizer)
	if !ok {
		t.Fatalf("team-review is a %T", links["team-review"])
	}
	return h, links, timeouts
}

func (s *reviewServer) spec(extra string) string {
	return fmt.Sprintf(`"url": %q, "caFile": %q%s`, s.URL+"/permwrap/ask", s.caFile, extra)
}

func writeAsk(path string) Request {
	r := NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: path})
	r.Access = "create"
	r.Process = Process{PID: 42, Comm: "sh", Exe: "/bin/sh", Cmdline: []string{"sh", "-c", "echo > " + path}}
	r.Agent = []string{"claude"}
	r.Suggested = []SessionPattern{{Surface: engine.SurfaceWrite, Pattern: path}}
	return r
}

// The three verdicts, with the reason, from a server that checks what
// it is sent: a POST of JSON with the configured Authorization header and
// the request id as its Idempotency-Key.
func TestHTTPLinkVerdicts(t *testing.T) {
	token := "tok-" + randHex(t)
	t.Setenv("PERMWRAP_TEST_REVIEW_TOKEN", token)
	srv := newReviewServer(t, func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			RequestID string `json:"requestId"`
			Value     string `json:"value"`
		}
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/permwrap/ask":
			http.Error(w, "want POST /permwrap/ask", http.StatusMethodNotAllowed)
			return
		case r.Header.Get("Authorization") != "Bearer "+token || r.Header.Get("X-Team") != "infra" || r.Header.Get("User-Agent") != "ci-runner-7":
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		case r.Header.Get("Content-Type") != "application/json":
			http.Error(w, "want JSON", http.StatusUnsupportedMediaType)
			return
		case json.NewDecoder(r.Body).Decode(&req) != nil || req.RequestID == "" || r.Header.Get("Idempotency-Key") != req.RequestID:
			http.Error(w, "want the request id as Idempotency-Key", http.StatusBadRequest)
			return
		}
		verdict := strings.TrimPrefix(filepath.Base(req.Value), "ASKME-")
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprintf(w, `{"verdict": %q, "reason": "the team says %s", "by": "alice"}`, verdict, verdict)
	})
	h, _, timeouts := remoteLink(t, srv.spec(`, "headers": {"Authorization": "Bearer ${env:PERMWRAP_TEST_REVIEW_TOKEN}", "X-Team": "infra", "User-Agent": "ci-runner-7"}, "timeoutMs": 20000`))
	if timeouts["team-review"] != 20*time.Second || h.Display() != srv.URL+"/permwrap/ask" {
		t.Fatalf("timeout %v, display %q", timeouts["team-review"], h.Display())
	}
	for _, want := range []Verdict{VerdictAllow, VerdictDeny, VerdictDefer} {
		v, reason, err := h.Review(context.Background(), writeAsk("/w/ASKME-"+want.String()), nil)
		if err != nil || v != want || reason != "the team says "+want.String() {
			t.Errorf("%s: got %v %q %v", want, v, reason, err)
		}
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d requests for 3 asks", n)
	}

	// Without the header the same server refuses: the check above is real.
	bare, _, _ := remoteLink(t, srv.spec(""))
	if _, _, err := bare.Review(context.Background(), writeAsk("/w/ASKME-allow"), nil); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("without the Authorization header: %v, want the server's 401", err)
	}
}

// Every way a reviewer can fail is an error (the chain's defer), with a
// note saying what went wrong, logged in the link outcome; never an
// allow, and never a header's value in the note.
func TestHTTPLinkFailuresDefer(t *testing.T) {
	token := "tok-" + randHex(t)
	t.Setenv("PERMWRAP_TEST_REVIEW_TOKEN", token)
	auth := `, "headers": {"Authorization": "Bearer ${env:PERMWRAP_TEST_REVIEW_TOKEN}"}`

	redirectTarget := newReviewServer(t, jsonAnswer(`{"verdict": "allow"}`))
	otherCA := writePEM(t, selfSignedCA(t))
	closed := closedPort(t)

	cases := []struct {
		name   string
		answer http.HandlerFunc
		spec   func(*reviewServer) string // nil: srv.spec(auth)
		note   string
	}{
		{"garbage body", jsonAnswer("<html>hello</html>"), nil, "response: output is not a JSON object"},
		{"invalid JSON", jsonAnswer(`{"verdict": "allow"`), nil, "response: output: unexpected EOF"},
		{"two objects", jsonAnswer(`{"verdict": "deny"} {"verdict": "allow"}`), nil, "more than one JSON value"},
		{"unknown verdict", jsonAnswer(`{"verdict": "yes"}`), nil, `verdict "yes" is not allow, deny or defer`},
		{"no verdict", jsonAnswer(`{"reason": "fine"}`), nil, `has no "verdict"`},
		{"empty body", jsonAnswer(""), nil, "empty response"},
		{"wrong content type", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `{"verdict": "allow"}`)
		}, nil, `Content-Type "text/html", want application/json`},
		{"oversized body", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"verdict": "allow", "pad": "`+strings.Repeat("x", 70<<10)+`"}`)
		}, nil, "response over 65536 bytes"},
		{"oversized body, no length", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"verdict": "allow", "pad": "`)
			for range 70 {
				io.WriteString(w, strings.Repeat("x", 1<<10))
				w.(http.Flusher).Flush()
			}
			io.WriteString(w, `"}`)
		}, nil, "response over 65536 bytes"},
		{"500, echoing the token", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom; you sent "+r.Header.Get("Authorization"), http.StatusInternalServerError)
		}, nil, "status 500 Internal Server Error: boom; you sent ***"},
		{"202", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, `{"verdict": "allow"}`)
		}, nil, "status 202 Accepted"},
		{"302 redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, redirectTarget.URL+"/elsewhere?sig=abc", http.StatusFound)
		}, nil, "status 302 Found (redirects are not followed: configure the URL it points to, " + redirectTarget.URL + "/elsewhere)"},
		{"wrong CA", jsonAnswer(`{"verdict": "allow"}`), func(s *reviewServer) string {
			return fmt.Sprintf(`"url": %q, "caFile": %q`+auth, s.URL+"/permwrap/ask", otherCA)
		}, "tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		{"system roots only", jsonAnswer(`{"verdict": "allow"}`), func(s *reviewServer) string {
			return fmt.Sprintf(`"url": %q`+auth, s.URL+"/permwrap/ask")
		}, "certificate signed by unknown authority"},
		{"connection refused", nil, func(s *reviewServer) string {
			return fmt.Sprintf(`"url": %q, "caFile": %q`+auth, "https://"+closed+"/ask?key="+token, s.caFile)
		}, "connect: connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			answer := tc.answer
			if answer == nil {
				answer = jsonAnswer(`{"verdict": "allow"}`)
			}
			srv := newReviewServer(t, answer)
			spec := srv.spec(auth)
			if tc.spec != nil {
				spec = tc.spec(srv)
			}
			h, links, timeouts := remoteLink(t, spec)
			v, reason, err := h.Review(context.Background(), writeAsk("/w/x"), nil)
			if err == nil {
				t.Fatalf("answered %v %q; want an error", v, reason)
			}
			if !strings.Contains(err.Error(), tc.note) || !strings.HasPrefix(err.Error(), "reviewer team-review (") {
				t.Errorf("error %q\nwant it to name the reviewer and say %q", err, tc.note)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("the error shows the token: %q", err)
			}

			// Through the chain: defer, logged with the note; headless, the
			// terminal denies.
			l, records := testLog(t)
			cfg := ChainConfig{Links: []string{"team-review"}, Timeouts: timeouts, Delegation: engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceWrite}}}
			d := NewChain(cfg, links, DenyingTerminal{}, l, nil).Resolve(context.Background(), writeAsk("/w/x"))
			if d.Action() != engine.Deny || d.DecidedBy().Kind() != "unavailable" {
				t.Errorf("chain decided %v by %v; want the headless terminal's deny", d.Action(), d.DecidedBy())
			}
			var out LinkOutcome
			for _, rec := range records() {
				if rec["event"] == string(EventChainResolved) {
					b, _ := json.Marshal(rec["links"].([]any)[0])
					json.Unmarshal(b, &out)
				}
				if b, _ := json.Marshal(rec); strings.Contains(string(b), token) {
					t.Errorf("the review log shows the token: %s", b)
				}
			}
			if out.Name != "team-review" || out.Verdict != "defer" || !strings.Contains(out.Note, tc.note) {
				t.Errorf("link outcome %+v; want defer with a note saying %q", out, tc.note)
			}
		})
	}
	// A short header value is no secret, and hiding it would garble the
	// note: "1" is not taken out of "127.0.0.1".
	h, _, _ := remoteLink(t, fmt.Sprintf(`"url": "https://%s/ask", "headers": {"X-Version": "1"}`, closed))
	if _, _, err := h.Review(context.Background(), writeAsk("/w/x"), nil); err == nil || !strings.Contains(err.Error(), closed) {
		t.Errorf("error %v; want it to name %s", err, closed)
	}
	if n := len(redirectTarget.requests()); n != 0 {
		t.Errorf("the redirect was followed %d times", n)
	}
}

// A reviewer that does not answer in timeoutMs is a defer, and the
// review ends at the timeout, not when the server gives up: the request
// is cancelled (the server sees its context end).
func TestHTTPLinkTimeout(t *testing.T) {
	cancelled := make(chan struct{}, 4)
	srv := newReviewServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			cancelled <- struct{}{}
		case <-time.After(time.Minute):
			jsonAnswer(`{"verdict": "allow"}`)(w, r)
		}
	})
	h, links, timeouts := remoteLink(t, srv.spec(`, "timeoutMs": 300`))
	const slack = 10 * time.Second // a bound, not a benchmark
	start := time.Now()
	_, _, err := h.Review(context.Background(), writeAsk("/w/x"), nil)
	if took := time.Since(start); took > 300*time.Millisecond+slack {
		t.Errorf("Review took %v with timeoutMs 300", took)
	}
	if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Errorf("error %v, want no answer within 300ms", err)
	}
	waitCancelled(t, cancelled)

	// Through the chain, the same: defer, then the terminal.
	term := &recTerm{}
	cfg := ChainConfig{Links: []string{"team-review"}, Timeouts: timeouts, Delegation: engine.Delegation{AllowedSurfaces: []engine.Surface{engine.SurfaceWrite}}}
	start = time.Now()
	d := NewChain(cfg, links, term, nil, nil).Resolve(context.Background(), writeAsk("/w/x"))
	if took := time.Since(start); took > 300*time.Millisecond+slack {
		t.Errorf("Resolve took %v with timeoutMs 300", took)
	}
	if len(term.reached) != 1 || d.DecidedBy().Kind() != "user" {
		t.Errorf("after a timeout the terminal was reached %d times; decided by %v", len(term.reached), d.DecidedBy())
	}
	waitCancelled(t, cancelled)

	// The chain's context ending (the asking process gone) cancels the
	// request too, long before timeoutMs.
	long, _, _ := remoteLink(t, srv.spec(`, "timeoutMs": 600000`))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, _, err := long.Review(ctx, writeAsk("/w/x"), nil); err == nil {
		t.Error("a cancelled review answered")
	}
	if took := time.Since(start); took > 200*time.Millisecond+slack {
		t.Errorf("a cancelled review took %v", took)
	}
	waitCancelled(t, cancelled)
}

func waitCancelled(t *testing.T, c chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(30 * time.Second):
		t.Error("the server never saw the request cancelled")
	}
}

// The body is exactly what an exec link reads on stdin for the same
// request: the same fields, the same masking.
func TestHTTPLinkBodyIsTheExecRequest(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	srv := newReviewServer(t, jsonAnswer(`{"verdict": "defer"}`))
	h, _, _ := remoteLink(t, srv.spec(""))

	secret := "ghp_" + strings.Repeat("Z", 36)
	r := NewRequest(engine.Check{Surface: engine.SurfaceBash, Value: "GITHUB_TOKEN=" + secret + " git push origin main"})
	r.Access = "exec"
	r.Process = Process{PID: 7, TID: 9, Comm: "bash", Exe: "/bin/bash", Cmdline: []string{"bash", "-c", "git push --password=" + secret}}
	r.Agent = []string{"claude", "--api-key", secret}
	r.Runs = []string{"git push origin main"}
	r.Units = []string{"curl -H 'Authorization: Bearer " + secret + "' x"}
	r.Covers = []string{"writes into /srv/repo.git"}
	r.Net = &engine.NetIntent{Host: "github.com", Port: 443}
	r.Rule = engine.Rule{Surface: engine.SurfaceBash, Pattern: "git push *", Action: engine.Ask, Origin: engine.OriginGlobal}
	r.Suggested = []SessionPattern{{Surface: engine.SurfaceBash, Pattern: "GITHUB_TOKEN=" + secret + " git push *"}}

	stdin := filepath.Join(t.TempDir(), "stdin.json")
	judge := &ExecAuthorizer{Name: "j", Command: []string{sh, "-c", `cat > "$1"; echo '{"verdict":"defer"}'`, "sh", stdin}, Timeout: time.Minute}
	if _, _, err := judge.Review(context.Background(), r, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Review(context.Background(), r, nil); err != nil {
		t.Fatal(err)
	}
	execBody, err := os.ReadFile(stdin)
	if err != nil {
		t.Fatal(err)
	}
	got := srv.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	var fromExec, fromHTTP map[string]any
	if err := json.Unmarshal(execBody, &fromExec); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got[0].body, &fromHTTP); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromExec, fromHTTP) {
		t.Errorf("bodies differ:\nexec: %s\nhttp: %s", execBody, got[0].body)
	}
	// Masked: the secret is not sent, and the request says it masked.
	if strings.Contains(string(got[0].body), secret) || fromHTTP["masked"] != true || !strings.Contains(fromHTTP["value"].(string), "GITHUB_TOKEN=*** git push") {
		t.Errorf("the request is not masked: %s", got[0].body)
	}
	if fromHTTP["requestId"] != string(r.ID) || got[0].header.Get("Idempotency-Key") != string(r.ID) {
		t.Errorf("request id %v, Idempotency-Key %q; want %s", fromHTTP["requestId"], got[0].header.Get("Idempotency-Key"), r.ID)
	}
}

// http:// to a loopback address works (a relay on this machine), and
// the address the connection reaches is checked too.
func TestHTTPLinkLoopbackHTTP(t *testing.T) {
	srv := httptest.NewServer(jsonAnswer(`{"verdict": "deny", "reason": "relay says no"}`))
	defer srv.Close()
	s, err := remoteSettings(t, fmt.Sprintf(`"url": %q`, srv.URL+"/ask"))
	if err != nil {
		t.Fatal(err)
	}
	links, _, err := Links(s.Authorizers, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, reason, err := links["team-review"].Review(context.Background(), writeAsk("/w/x"), nil)
	if err != nil || v != VerdictDeny || reason != "relay says no" {
		t.Errorf("got %v %q %v", v, reason, err)
	}
	// A spec that got past the parser with another host is stopped when
	// it connects.
	spec := s.Authorizers["team-review"]
	other := nonLoopbackAddr(t)
	if other == "" {
		t.Skip("no non-loopback address on this machine")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(other, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", other, err)
	}
	defer ln.Close()
	go http.Serve(ln, jsonAnswer(`{"verdict": "allow"}`))
	h, err := NewHTTPAuthorizer("team-review", spec)
	if err != nil {
		t.Fatal(err)
	}
	h.url = "http://" + ln.Addr().String() + "/ask"
	if v, _, err := h.Review(context.Background(), writeAsk("/w/x"), nil); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Errorf("http:// to %s answered %v, %v; want refused", ln.Addr(), v, err)
	}
}

// A caFile that cannot be read or holds no certificate fails the link's
// construction, at the caFile's line and column.
func TestHTTPLinkCAFileErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	os.WriteFile(notPEM, []byte("hello\n"), 0o644)
	for name, tc := range map[string]struct{ file, want string }{
		"missing":   {filepath.Join(dir, "missing.pem"), "no such file or directory"},
		"not PEM":   {notPEM, "holds no PEM certificate"},
		"directory": {dir, "not a regular file"},
	} {
		t.Run(name, func(t *testing.T) {
			s, err := remoteSettings(t, fmt.Sprintf(`"url": "https://127.0.0.1:1/ask", "caFile": %q`, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = Links(s.Authorizers, nil)
			var ce *engine.ConfigError
			if err == nil || !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "policy.jsonc:1:133: authorizer \"team-review\": caFile") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want policy.jsonc:1:133: … %s", err, tc.want)
			}
		})
	}
}

func randHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

// selfSignedCA is a CA certificate no test server was signed by.
func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not the reviewer's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// nonLoopbackAddr is an address of this machine that is not loopback, or "".
func nonLoopbackAddr(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}
