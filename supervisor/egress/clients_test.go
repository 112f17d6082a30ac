package egress

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// Real clients through the proxy: curl, Python's urllib and git, each
// reading the proxy from the environment as a sandboxed program would.
// Every destination is a .test name the proxy maps to 127.0.0.1; the
// clients never resolve it themselves.

type clientRig struct {
	*rig
	env      []string
	tlsPort  uint16
	httpPort uint16
}

func newClientRig(t *testing.T) *clientRig {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello over tls")
	}))
	t.Cleanup(tlsSrv.Close)
	plain := newOrigin(t, "127.0.0.1", nil)
	r := newRig(t, basePolicy, map[string]string{"allowed.test": "127.0.0.1", "denied.test": "127.0.0.1"})
	home := t.TempDir()
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "CURL_") {
			base = append(base, kv)
		}
	}
	base = append(base, "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	return &clientRig{rig: r, env: r.proxy.Environ(base),
		tlsPort:  netip.MustParseAddrPort(tlsSrv.Listener.Addr().String()).Port(),
		httpPort: plain.addr.Port()}
}

func (c *clientRig) run(t *testing.T, name string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = c.env
	cmd.Dir = t.TempDir()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func TestCurlThroughProxy(t *testing.T) {
	curl := kerneltest.Tool(t, "curl")
	c := newClientRig(t)

	out, errs, err := c.run(t, curl, "-sS", "-k", fmt.Sprintf("https://allowed.test:%d/", c.tlsPort))
	if err != nil || out != "hello over tls" {
		t.Fatalf("https allowed: %v %q %q", err, out, errs)
	}
	out, errs, err = c.run(t, curl, "-sS", fmt.Sprintf("http://allowed.test:%d/x?y", c.httpPort))
	if err != nil || !strings.Contains(out, "/x?y") {
		t.Fatalf("http allowed: %v %q %q", err, out, errs)
	}

	// A denied CONNECT: curl fails, and -v shows the rule in the
	// Proxy-Status header (curl does not print a CONNECT response body).
	_, errs, err = c.run(t, curl, "-sS", "-v", "-k", fmt.Sprintf("https://denied.test:%d/", c.tlsPort))
	if err == nil || !strings.Contains(errs, "403") ||
		!strings.Contains(errs, `Proxy-Status: permwrap; error=http_request_denied; details="permwrap: deny: tcp denied.test:`) ||
		!strings.Contains(errs, "rule net:denied.test (deny, policy.jsonc:4:2): not for tests") {
		t.Fatalf("https denied: %v\n%s", err, errs)
	}
	// A denied plain request: the 403 body names the rule.
	out, errs, err = c.run(t, curl, "-sS", "-w", "\n%{http_code}", fmt.Sprintf("http://denied.test:%d/", c.httpPort))
	if err != nil || !strings.HasSuffix(out, "\n403") || !strings.Contains(out, "permwrap: deny: tcp denied.test:") ||
		!strings.Contains(out, "rule net:denied.test (deny, policy.jsonc:4:2): not for tests") {
		t.Fatalf("http denied: %v %q %q", err, out, errs)
	}
	// An unknown name asks; with nobody to ask it is denied, and says so.
	out, _, _ = c.run(t, curl, "-sS", fmt.Sprintf("http://unknown.test:%d/", c.httpPort))
	if !strings.Contains(out, "rule net:* (ask") || !strings.Contains(out, "confirmation unavailable") {
		t.Fatalf("ask: %q", out)
	}
}

const pyFetch = `import ssl, sys, urllib.request, urllib.error
ctx = ssl._create_unverified_context()
try:
    r = urllib.request.urlopen(sys.argv[1], context=ctx, timeout=20)
    print("OK", r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print("HTTPError", e.code, e.read().decode())
except Exception as e:
    print("ERR", e)
`

func TestPythonThroughProxy(t *testing.T) {
	py := kerneltest.Tool(t, "python3")
	c := newClientRig(t)
	fetch := func(url string) string {
		out, errs, err := c.run(t, py, "-c", pyFetch, url)
		if err != nil {
			t.Fatalf("python: %v %s", err, errs)
		}
		return out
	}
	if out := fetch(fmt.Sprintf("https://allowed.test:%d/", c.tlsPort)); out != "OK 200 hello over tls\n" {
		t.Errorf("https allowed: %q", out)
	}
	if out := fetch(fmt.Sprintf("http://allowed.test:%d/p", c.httpPort)); !strings.HasPrefix(out, "OK 200 hello from") {
		t.Errorf("http allowed: %q", out)
	}
	if out := fetch(fmt.Sprintf("https://denied.test:%d/", c.tlsPort)); !strings.Contains(out, "Tunnel connection failed: 403 permwrap: deny: tcp denied.test:") ||
		!strings.Contains(out, "- rule net:denied.test (deny, policy.jsonc:4:2): not for tests") {
		t.Errorf("https denied: %q", out)
	}
	if out := fetch(fmt.Sprintf("http://denied.test:%d/", c.httpPort)); !strings.HasPrefix(out, "HTTPError 403 permwrap: deny: tcp denied.test:") ||
		!strings.Contains(out, "rule net:denied.test (deny, policy.jsonc:4:2): not for tests") {
		t.Errorf("http denied: %q", out)
	}
}

func TestGitThroughProxy(t *testing.T) {
	git := kerneltest.Tool(t, "git")
	execPath, err := exec.Command(git, "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		kerneltest.Tool(t, "git-http-backend")
	}
	c := newClientRig(t)

	// A repository with one commit, served by git http-backend over CGI.
	root := t.TempDir()
	work := t.TempDir()
	gitIn := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = append(c.env, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitIn(root, "init", "-q", "--bare", "repo.git")
	gitIn(work, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(work, "README"), []byte("served over http\n"), 0o644)
	gitIn(work, "add", "README")
	gitIn(work, "commit", "-q", "-m", "first")
	gitIn(work, "push", "-q", filepath.Join(root, "repo.git"), "main")
	gitIn(filepath.Join(root, "repo.git"), "symbolic-ref", "HEAD", "refs/heads/main")
	srv := newOrigin(t, "127.0.0.1", &cgi.Handler{Path: backend, Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})

	dst := filepath.Join(t.TempDir(), "clone")
	_, errs, err := c.run(t, git, "clone", "-q", fmt.Sprintf("http://allowed.test:%d/repo.git", srv.addr.Port()), dst)
	if err != nil {
		t.Fatalf("clone allowed: %v\n%s", err, errs)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "README")); err != nil || string(b) != "served over http\n" {
		t.Fatalf("cloned README: %q %v", b, err)
	}
	before := srv.connCount()
	_, errs, err = c.run(t, git, "clone", "-q", fmt.Sprintf("http://denied.test:%d/repo.git", srv.addr.Port()), dst+"2")
	if err == nil || !strings.Contains(errs, "403") {
		t.Fatalf("clone denied: %v\n%s", err, errs)
	}
	if srv.connCount() != before {
		t.Fatal("the denied clone reached the server")
	}
	// git-remote-http, a grandchild of the test, was found as the peer.
	if !strings.Contains(c.logText(), `"comm":"testclient"`) {
		t.Fatal("no request of git's was logged with its process")
	}
}
