package egress

import (
	"bufio"
	"context"
	"sync"

	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/kerneltest"
)

const basePolicy = `{"permission": {"net": {
	"*": "ask",
	"allowed.test": "allow",
	"denied.test": {"action": "deny", "reason": "not for tests"},
	"rebind.test": "allow",
	"mixed.test": "allow",
	"asked-addr.test": "allow",
	"127.0.0.1": "allow",
	"127.0.0.2": {"action": "deny", "reason": "pretend metadata"},
	"127.0.0.3": "ask"
}}}`

// client is an HTTP client that uses the proxy (and trusts tlsSrv's
// certificate, when given).
func client(p *Proxy, tlsSrv *httptest.Server) *http.Client {
	u, _ := url.Parse(p.URL())
	tr := &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}
	if tlsSrv != nil {
		tr.TLSClientConfig = tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
		tr.TLSClientConfig.ServerName = "example.com" // in httptest's certificate
	}
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

func TestConnectAllowedAndDenied(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secret page")
	}))
	defer srv.Close()
	port := netip.MustParseAddrPort(srv.Listener.Addr().String()).Port()
	r := newRig(t, basePolicy, map[string]string{"allowed.test": "127.0.0.1", "denied.test": "127.0.0.1"})
	c := client(r.proxy, srv)

	resp, err := c.Get(fmt.Sprintf("https://allowed.test:%d/", port))
	if err != nil {
		t.Fatalf("allowed: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "secret page" {
		t.Fatalf("allowed: body %q", body)
	}

	if _, err := c.Get(fmt.Sprintf("https://denied.test:%d/", port)); err == nil {
		t.Fatal("denied: the request went through")
	}
	// What the client gets, read raw: a 403 naming the rule.
	out := rawRequest(t, r.proxy, fmt.Sprintf("CONNECT denied.test:%d HTTP/1.1\r\nHost: denied.test:%d\r\n\r\n", port, port))
	for _, want := range []string{
		"HTTP/1.1 403 permwrap: deny: tcp denied.test:",
		`Proxy-Status: permwrap; error=http_request_denied; details="permwrap: deny: tcp denied.test:`,
		"rule net:denied.test (deny, policy.jsonc:4:2): not for tests",
		"- rule net:denied.test (deny, policy.jsonc:4:2): not for tests\"\r\n", // the header, in ASCII
	} {
		if !strings.Contains(out, want) {
			t.Errorf("403 lacks %q:\n%s", want, out)
		}
	}
	if n := r.resolver.count("denied.test"); n != 0 {
		t.Errorf("a denied name was resolved %d times: the lookup itself carries data out", n)
	}
	if len(r.denied) == 0 || !strings.Contains(r.denied[0], "denied.test") {
		t.Errorf("the judge's Denied hook was not told: %q", r.denied)
	}
}

func TestPlainHTTPForwarded(t *testing.T) {
	o := newOrigin(t, "127.0.0.1", nil)
	r := newRig(t, basePolicy, map[string]string{"allowed.test": "127.0.0.1", "denied.test": "127.0.0.1"})
	c := client(r.proxy, nil)

	req, _ := http.NewRequest("GET", fmt.Sprintf("http://allowed.test:%d/path?q=1", o.addr.Port()), nil)
	req.Header.Set("Proxy-Authorization", "Basic c2VjcmV0OnNlY3JldA==")
	req.Header.Set("X-Custom", "kept")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "/path?q=1") {
		t.Fatalf("body %q", body)
	}
	o.mu.Lock()
	got := o.reqs[0]
	o.mu.Unlock()
	if got.RequestURI != "/path?q=1" || got.Host != fmt.Sprintf("allowed.test:%d", o.addr.Port()) {
		t.Errorf("origin got %q Host %q: want origin-form and the name", got.RequestURI, got.Host)
	}
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Forwarded-For", "Forwarded", "Via"} {
		if v := got.Header.Get(h); v != "" {
			t.Errorf("origin got %s: %q", h, v)
		}
	}
	if got.Header.Get("X-Custom") != "kept" {
		t.Errorf("an end-to-end header was dropped")
	}

	resp, err = c.Get(fmt.Sprintf("http://denied.test:%d/", o.addr.Port()))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(body), "rule net:denied.test (deny") {
		t.Fatalf("denied: %d %q", resp.StatusCode, body)
	}
	if o.connCount() != 1 {
		t.Errorf("origin saw %d connections, want 1 (the allowed one)", o.connCount())
	}
	// A POST body goes through.
	resp, err = c.Post(fmt.Sprintf("http://allowed.test:%d/up", o.addr.Port()), "text/plain", strings.NewReader(strings.Repeat("x", 100000)))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("post: %v %v", resp, err)
	}
	resp.Body.Close()
	o.mu.Lock()
	sent := o.bodies[len(o.bodies)-1]
	o.mu.Unlock()
	if sent != 100000 {
		t.Errorf("the origin got a body of %d bytes, want 100000", sent)
	}
}

// TestAddressesJudgedAfterResolving: an allowed name that resolves to an
// address the policy denies (DNS rebinding onto the metadata service) is
// refused before any connection; of several addresses the admitted ones
// are used.
func TestAddressesJudgedAfterResolving(t *testing.T) {
	bad := newOrigin(t, "127.0.0.2", nil)
	good := newOrigin(t, "127.0.0.1", nil)
	port := bad.addr.Port()
	// The good origin must listen on the same port for the mixed case.
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Skipf("port %d is taken on 127.0.0.1: %v", port, err)
	}
	good.srv.Close()
	good = &origin{ln: ln, addr: netip.MustParseAddrPort(ln.Addr().String())}
	good.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "good") })}
	go good.srv.Serve(ln)
	defer good.srv.Close()

	r := newRig(t, basePolicy, map[string]string{"rebind.test": "127.0.0.2", "mixed.test": "127.0.0.2,127.0.0.1"})
	c := client(r.proxy, nil)

	resp, err := c.Get(fmt.Sprintf("http://rebind.test:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(body), "127.0.0.2") || !strings.Contains(string(body), "pretend metadata") {
		t.Fatalf("rebind: %d %q", resp.StatusCode, body)
	}
	out := rawRequest(t, r.proxy, fmt.Sprintf("CONNECT rebind.test:%d HTTP/1.1\r\nHost: x\r\n\r\n", port))
	if !strings.HasPrefix(out, "HTTP/1.1 403") || !strings.Contains(out, "pretend metadata") {
		t.Fatalf("rebind CONNECT: %q", out)
	}
	if bad.connCount() != 0 {
		t.Fatalf("the denied address got %d connections", bad.connCount())
	}

	resp, err = c.Get(fmt.Sprintf("http://mixed.test:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "good" || bad.connCount() != 0 {
		t.Fatalf("mixed: %q, denied address got %d connections", body, bad.connCount())
	}
	// The refusal of the address is in the review log, with both spellings.
	if log := r.logText(); !strings.Contains(log, `"event":"permission_request.denied"`) ||
		!strings.Contains(log, `"net":{"addr":"127.0.0.2","host":"rebind.test"`) {
		t.Errorf("the address refusal is not logged:\n%s", log)
	}
	// The cache knows the names the proxy resolved, for later direct
	// connections to those addresses.
	if names := r.proxy.Cache().Names(netip.MustParseAddr("127.0.0.1")); len(names) != 1 || names[0] != "mixed.test" {
		t.Errorf("cache names for 127.0.0.1: %q", names)
	}
}

func TestAsks(t *testing.T) {
	o := newOrigin(t, "127.0.0.1", nil)
	port := o.addr.Port()
	names := map[string]string{"new.test": "127.0.0.1", "other.test": "127.0.0.1", "asked-addr.test": "127.0.0.3"}

	t.Run("allow for this session", func(t *testing.T) {
		r := newRig(t, basePolicy, names, withDecider(allowForSession))
		c := client(r.proxy, nil)
		for i := 0; i < 3; i++ {
			resp, err := c.Get(fmt.Sprintf("http://new.test:%d/", port))
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("request %d: %v %v", i, resp, err)
			}
			resp.Body.Close()
		}
		if n := r.decider.count(); n != 1 {
			t.Fatalf("asked %d times, want once (the session rule covers the rest)", n)
		}
		ask := r.decider.asks[0]
		if ask.Check != (engine.Check{Surface: engine.SurfaceNet, Value: fmt.Sprintf("new.test:%d", port)}) ||
			len(ask.Suggested) != 1 || ask.Suggested[0].Pattern != fmt.Sprintf("new.test:%d", port) || ask.Access != "connect" ||
			ask.Process.PID != os.Getpid() || ask.Process.Comm != "testclient" || ask.Net == nil || ask.Net.Host != "new.test" {
			t.Fatalf("ask %+v", ask)
		}
		if rules := r.policy.SessionRules(); len(rules) != 1 || rules[0].Pattern != fmt.Sprintf("new.test:%d", port) {
			t.Fatalf("session rules %v", rules)
		}
		log := r.logText()
		for _, want := range []string{`"event":"permission_request.asked"`, `"event":"permission_request.approved"`, `"surface":"net"`, `"access":"connect"`,
			`"net":{"host":"new.test","port":` + fmt.Sprint(port) + `,"proto":"tcp"}`, `"kind":"session_approval"`} {
			if !strings.Contains(log, want) {
				t.Errorf("log lacks %s:\n%s", want, log)
			}
		}
	})

	t.Run("denied by the person", func(t *testing.T) {
		r := newRig(t, basePolicy, names, withDecider(denyByUser))
		out := rawRequest(t, r.proxy, fmt.Sprintf("CONNECT other.test:%d HTTP/1.1\r\nHost: x\r\n\r\n", port))
		if !strings.HasPrefix(out, "HTTP/1.1 403") || !strings.Contains(out, "asked, and denied by user (dialog): not this one") {
			t.Fatalf("%q", out)
		}
		if r.resolver.count("other.test") != 0 {
			t.Fatal("a refused name was resolved")
		}
	})

	t.Run("nobody to ask", func(t *testing.T) {
		r := newRig(t, basePolicy, names)
		out := rawRequest(t, r.proxy, fmt.Sprintf("GET http://other.test:%d/ HTTP/1.1\r\nHost: other.test\r\n\r\n", port))
		if !strings.HasPrefix(out, "HTTP/1.1 403") || !strings.Contains(out, "denied by unavailable: confirmation unavailable") {
			t.Fatalf("%q", out)
		}
	})

	t.Run("an address rule asks after the name was allowed", func(t *testing.T) {
		ao := newOrigin(t, "127.0.0.3", nil)
		r := newRig(t, basePolicy, names, withDecider(denyByUser))
		out := rawRequest(t, r.proxy, fmt.Sprintf("GET http://asked-addr.test:%d/ HTTP/1.1\r\nHost: x\r\n\r\n", ao.addr.Port()))
		if !strings.HasPrefix(out, "HTTP/1.1 403") {
			t.Fatalf("%q", out)
		}
		if r.decider.count() != 1 {
			t.Fatalf("asked %d times", r.decider.count())
		}
		ask := r.decider.asks[0]
		if ask.Net.Host != "asked-addr.test" || ask.Net.Addr != netip.MustParseAddr("127.0.0.3") || ask.Rule.Pattern != "127.0.0.3" {
			t.Fatalf("ask %+v", ask)
		}
		if ao.connCount() != 0 {
			t.Fatal("connected before the answer")
		}
	})

	t.Run("the client leaving ends the ask", func(t *testing.T) {
		started := make(chan struct{})
		ended := make(chan error, 1)
		r := newRig(t, basePolicy, names, withDecider(func(ctx context.Context, _ authority.Request) authority.Decision {
			close(started)
			select {
			case <-ctx.Done():
				ended <- ctx.Err()
			case <-time.After(20 * time.Second):
				ended <- nil
			}
			return authority.Denied(authority.ByUnavailable{Reason: "gone"}, "gone")
		}))
		conn, err := net.Dial("tcp", r.proxy.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "CONNECT other.test:%d HTTP/1.1\r\nHost: x\r\n\r\n", port)
		<-started
		conn.Close()
		if err := <-ended; err == nil {
			t.Fatal("the ask went on after the client left")
		}
	})
}

// TestIPLiteral: an address target is judged on the address alone.
func TestIPLiteral(t *testing.T) {
	o := newOrigin(t, "127.0.0.1", nil)
	bad := newOrigin(t, "127.0.0.2", nil)
	r := newRig(t, basePolicy, nil)
	c := client(r.proxy, nil)
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/x", o.addr.Port()))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	resp.Body.Close()
	out := rawRequest(t, r.proxy, fmt.Sprintf("CONNECT 127.0.0.2:%d HTTP/1.1\r\nHost: x\r\n\r\n", bad.addr.Port()))
	if !strings.HasPrefix(out, "HTTP/1.1 403") || !strings.Contains(out, "pretend metadata") {
		t.Fatalf("%q", out)
	}
	out = rawRequest(t, r.proxy, fmt.Sprintf("CONNECT [::ffff:127.0.0.2]:%d HTTP/1.1\r\nHost: x\r\n\r\n", bad.addr.Port()))
	if !strings.HasPrefix(out, "HTTP/1.1 403") {
		t.Fatalf("mapped address: %q", out)
	}
	if bad.connCount() != 0 {
		t.Fatal("the denied address was connected to")
	}
	// The proxy never connects to itself.
	out = rawRequest(t, r.proxy, fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", r.proxy.Addr()))
	if !strings.HasPrefix(out, "HTTP/1.1 403") || !strings.Contains(out, "proxy itself") {
		t.Fatalf("loop: %q", out)
	}
}

// TestAddressNamedByCache: an address target is judged with the names
// the proxy resolved to it for this tree, and only those.
func TestAddressNamedByCache(t *testing.T) {
	o := newOrigin(t, "127.0.0.1", nil)
	r := newRig(t, `{"permission": {"net": {"*": "deny", "named.test": "allow"}}}`, map[string]string{"named.test": "127.0.0.1"})
	direct := fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n", o.addr.Port())
	if out := rawRequest(t, r.proxy, direct); !strings.HasPrefix(out, "HTTP/1.1 403") || !strings.Contains(out, "(no name known)") {
		t.Fatalf("before the name was resolved: %q", out)
	}
	resp, err := client(r.proxy, nil).Get(fmt.Sprintf("http://named.test:%d/", o.addr.Port()))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("by name: %v %v", resp, err)
	}
	resp.Body.Close()
	c, err := net.Dial("tcp", r.proxy.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, direct)
	if line, _ := bufio.NewReader(c).ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("after the name was resolved: %q", line)
	}
}

// TestBadClients: whatever a client sends, the proxy answers 4xx or
// closes, never forwards, never hangs, never panics.
func TestBadClients(t *testing.T) {
	r := newRig(t, basePolicy, map[string]string{"allowed.test": "127.0.0.1"}, withLimits(Limits{HeaderTimeout: 500 * time.Millisecond, MaxHeaderSize: 4096}))
	tests := []struct {
		name, req, want string
	}{
		{"garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 hello\r\n\r\n", "HTTP/1.1 400"},
		{"origin form", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "send absolute http:// URLs or CONNECT"},
		{"https absolute", "GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "go through CONNECT"},
		{"ftp", "GET ftp://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", `scheme \"ftp\" is not proxied`},
		{"connect without port", "CONNECT allowed.test HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400"},
		{"connect port 0", "CONNECT allowed.test:0 HTTP/1.1\r\nHost: x\r\n\r\n", "port must be 1 to 65535"},
		{"connect bad host", "CONNECT allowed.test%00:443 HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400"},
		{"connect bare ipv6", "CONNECT ::1:443 HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400"},
		{"non-ascii host", "CONNECT b\xc3\xbccher.test:443 HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400"},
		{"user info", "GET http://u:p@allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "user info"},
		{"headers too large", "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nX: " + strings.Repeat("a", 16000) + "\r\n\r\n", "HTTP/1.1 431"},
		{"no head at all (times out)", "CONNECT allowed.test:443 HTTP/1.1\r\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out := rawRequest(t, r.proxy, tt.req)
			if tt.want == "" {
				if out != "" && !strings.HasPrefix(out, "HTTP/1.1 408") && !strings.HasPrefix(out, "HTTP/1.1 400") {
					t.Fatalf("got %q", out)
				}
			} else if !strings.Contains(out, tt.want) {
				t.Fatalf("got %q, want %q", out, tt.want)
			}
			if d := time.Since(start); d > 8*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
	if n := r.resolver.count("allowed.test"); n != 0 {
		t.Errorf("a bad request led to %d lookups", n)
	}
}

// TestTunnel: bytes sent right behind the CONNECT head are not lost, a
// half-close is passed on, and Close ends open tunnels.
func TestTunnel(t *testing.T) {
	ln := listenLoopback(t, func(c net.Conn) { // echo until EOF, then say bye and close
		io.Copy(c, c)
		io.WriteString(c, "bye")
		c.Close()
	})
	port := ln.Addr().(*net.TCPAddr).Port
	r := newRig(t, basePolicy, map[string]string{"allowed.test": "127.0.0.1"})
	c, err := net.Dial("tcp", r.proxy.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT allowed.test:%d HTTP/1.1\r\nHost: x\r\n\r\nearly bytes|", port)
	br := bufio.NewReader(c)
	line, _ := br.ReadString('\n')
	if !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("%q", line)
	}
	br.ReadString('\n')
	io.WriteString(c, "late bytes")
	c.(*net.TCPConn).CloseWrite()
	rest, _ := io.ReadAll(br)
	if string(rest) != "early bytes|late bytesbye" {
		t.Fatalf("echo %q", rest)
	}

	c2, err := net.Dial("tcp", r.proxy.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	fmt.Fprintf(c2, "CONNECT allowed.test:%d HTTP/1.1\r\nHost: x\r\n\r\n", port)
	br2 := bufio.NewReader(c2)
	if line, _ := br2.ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("%q", line)
	}
	done := make(chan struct{})
	go func() { r.proxy.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end an open tunnel")
	}
	c2.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(br2); err != nil {
		t.Fatalf("tunnel not closed: %v", err)
	}
}

// TestPeerOutsideTheTree: a connection no process of the tree holds is
// refused (another user's program cannot use the proxy, or make it ask).
func TestPeerOutsideTheTree(t *testing.T) {
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	r := newRig(t, basePolicy, map[string]string{"allowed.test": "127.0.0.1"}, withPeers(&ProcPeers{Root: sleeper.Process.Pid}))
	out := rawRequest(t, r.proxy, "CONNECT allowed.test:443 HTTP/1.1\r\nHost: x\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.1 403") || !strings.Contains(out, "no process of this session holds the connection") {
		t.Fatalf("%q", out)
	}
	if r.resolver.count("allowed.test") != 0 {
		t.Fatal("resolved for a stranger")
	}
}

func TestProcPeersFindsAChild(t *testing.T) {
	r := newRig(t, basePolicy, nil)
	// A child process holds the client socket.
	py := kerneltest.Tool(t, "python3")
	cmd := exec.Command(py, "-c", `import socket,sys,time
s=socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print(s.getsockname()[1], flush=True)
time.sleep(30)`, fmt.Sprint(r.proxy.Addr().Port()))
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var port uint16
	if _, err := fmt.Fscan(stdout, &port); err != nil {
		t.Fatal(err)
	}
	pp := &ProcPeers{Root: os.Getpid()}
	pid, err := pp.Peer(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port), r.proxy.Addr())
	if err != nil || pid != cmd.Process.Pid {
		t.Fatalf("Peer = %d, %v; want %d", pid, err, cmd.Process.Pid)
	}
	// From a tree it is not in, it is not found.
	other := &ProcPeers{Root: 1 << 22}
	if _, err := other.Peer(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port), r.proxy.Addr()); err == nil {
		t.Fatal("found outside the tree")
	}
	// By parent links, the same answer.
	if pids := treeByStat(os.Getpid()); !contains(pids, cmd.Process.Pid) {
		t.Fatalf("treeByStat misses the child: %v", pids)
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestParseProcAddr(t *testing.T) {
	tests := map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000000000000000000001000000:0016": "[::1]:22",
		"0000000000000000FFFF00000100007F:01BB": "127.0.0.1:443", // v4-mapped, unmapped
	}
	for in, want := range tests {
		ap, ok := parseProcAddr([]byte(in))
		if !ok || ap.String() != want {
			t.Errorf("%s = %v %v, want %s", in, ap, ok, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "zz00007F:0050", "0100007F:zz", "01007F:0050"} {
		if _, ok := parseProcAddr([]byte(bad)); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestEnviron(t *testing.T) {
	env := ProxyEnviron([]string{"PATH=/bin", "https_proxy=http://corp:3128", "Http_Proxy=x", "NO_PROXY=.corp", "HOME=/h"}, "http://127.0.0.1:9")
	got := strings.Join(env, "\n")
	for _, want := range []string{"PATH=/bin", "HOME=/h", "HTTPS_PROXY=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9",
		"HTTP_PROXY=http://127.0.0.1:9", "http_proxy=http://127.0.0.1:9", "ALL_PROXY=http://127.0.0.1:9", "all_proxy=http://127.0.0.1:9",
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1", "NODE_USE_ENV_PROXY=1"} {
		if !strings.Contains("\n"+got+"\n", "\n"+want+"\n") {
			t.Errorf("missing %s", want)
		}
	}
	for _, gone := range []string{"corp", "Http_Proxy=x"} {
		if strings.Contains(got, gone) {
			t.Errorf("kept %q", gone)
		}
	}
}

func TestReviewLogRecordsConnections(t *testing.T) {
	o := newOrigin(t, "127.0.0.1", nil)
	r := newRig(t, basePolicy, map[string]string{"allowed.test": "127.0.0.1", "denied.test": "127.0.0.1"})
	c := client(r.proxy, nil)
	for _, h := range []string{"allowed.test", "denied.test"} {
		resp, err := c.Get(fmt.Sprintf("http://%s:%d/", h, o.addr.Port()))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	var seen []string
	for _, line := range strings.Split(strings.TrimSpace(r.logText()), "\n") {
		var rec struct {
			Event     string          `json:"event"`
			RequestID string          `json:"requestId"`
			PID       int             `json:"pid"`
			Value     string          `json:"value"`
			Net       map[string]any  `json:"net"`
			DecidedBy json.RawMessage `json:"decidedBy"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if rec.RequestID == "" || len(rec.DecidedBy) == 0 || rec.PID != os.Getpid() || rec.Net["host"] == nil || rec.Net["proto"] != "tcp" {
			t.Errorf("incomplete record: %s", line)
		}
		seen = append(seen, rec.Event+" "+rec.Value)
	}
	want := []string{
		fmt.Sprintf("permission_request.allowed allowed.test:%d", o.addr.Port()),
		fmt.Sprintf("permission_request.denied denied.test:%d", o.addr.Port()),
	}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("log events %q, want %q", seen, want)
	}
}

// TestConcurrentClients: many clients at once, a small connection cap,
// all served.
func TestConcurrentClients(t *testing.T) {
	o := newOrigin(t, "127.0.0.1", nil)
	r := newRig(t, basePolicy, map[string]string{"allowed.test": "127.0.0.1"}, withLimits(Limits{MaxConns: 4}))
	c := client(r.proxy, nil)
	errs := make(chan error, 32)
	for i := 0; i < 32; i++ {
		go func() {
			resp, err := c.Get(fmt.Sprintf("http://allowed.test:%d/", o.addr.Port()))
			if err == nil {
				if resp.StatusCode != 200 {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	for i := 0; i < 32; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestLocalServices: a destination on this machine is judged with who
// serves it (Config.Service), by address and by a localhost name, which
// is loopback (RFC 6761) and judged as its addresses without a lookup.
func TestLocalServices(t *testing.T) {
	o := newOrigin(t, "127.0.0.1", nil)
	var mu sync.Mutex
	svc := map[netip.AddrPort]*engine.NetService{}
	set := func(s *engine.NetService) {
		mu.Lock()
		defer mu.Unlock()
		svc[netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), o.addr.Port())] = s
	}
	withService := func(_ *rig, c *Config, _ *PolicyJudge) {
		c.Service = func(ap netip.AddrPort) *engine.NetService {
			mu.Lock()
			defer mu.Unlock()
			return svc[ap]
		}
	}
	r := newRig(t, `{"permission": {"net": {"*": "ask", "<outside>": {"action": "deny", "reason": "acts for its caller"}}}}`, nil, withService)
	c := client(r.proxy, nil)
	byName := fmt.Sprintf("http://localhost:%d/x", o.addr.Port())
	byAddr := fmt.Sprintf("CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n", o.addr.Port())

	set(&engine.NetService{Tree: true})
	resp, err := c.Get(byName)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the tree's own server by name: %v %v", resp, err)
	}
	resp.Body.Close()
	if out := rawRequest(t, r.proxy, byAddr); !strings.HasPrefix(out, "HTTP/1.1 200") {
		t.Fatalf("the tree's own server by address: %q", out)
	}

	set(&engine.NetService{Exe: "/usr/bin/redis-server", PID: 42})
	before := o.connCount()
	resp, err = c.Get(byName)
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("a service outside by name: %v %v", resp, err)
	}
	resp.Body.Close()
	if out := rawRequest(t, r.proxy, byAddr); !strings.HasPrefix(out, "HTTP/1.1 403") || !strings.Contains(out, "served outside the sandbox by /usr/bin/redis-server") {
		t.Fatalf("a service outside by address: %q", out)
	}
	if o.connCount() != before {
		t.Error("the service outside was connected to")
	}
	if n := r.resolver.count("localhost"); n != 0 {
		t.Errorf("localhost was resolved %d times", n)
	}
}
