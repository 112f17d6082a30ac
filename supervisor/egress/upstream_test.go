package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permwrap/permwrap/engine"
)

func TestUpstreamFromEnv(t *testing.T) {
	tests := []struct {
		env        []string
		tunnel     string // the upstream for a CONNECT to example.test:443 ("" none)
		plain      string // for GET http://example.test:80
		noProxyHit string // for a tunnel to no.test:443
		err        bool
	}{
		{env: nil},
		{env: []string{"HTTPS_PROXY=http://corp.test:3128"}, tunnel: "http://corp.test:3128"},
		{env: []string{"https_proxy=corp.test:8080", "HTTPS_PROXY=http://other.test:1"}, tunnel: "http://corp.test:8080"},
		{env: []string{"HTTP_PROXY=http://u:p@corp.test:3128"}, plain: "http://u:p@corp.test:3128"},
		{env: []string{"ALL_PROXY=http://corp.test:3128"}, tunnel: "http://corp.test:3128", plain: "http://corp.test:3128"},
		{env: []string{"https_proxy=http://corp.test:3128", "no_proxy=no.test"}, tunnel: "http://corp.test:3128"},
		{env: []string{"https_proxy=socks5://corp.test:1080"}, err: true},
		{env: []string{"https_proxy=http://corp.test"}, tunnel: "http://corp.test:1080"},
	}
	for _, tt := range tests {
		u, err := UpstreamFromEnv(tt.env)
		if (err != nil) != tt.err {
			t.Errorf("%v: error %v, want error %v", tt.env, err, tt.err)
		}
		str := func(t target, tunnel bool) string {
			if p := u.For(t, tunnel); p != nil {
				return p.String()
			}
			return ""
		}
		ex := target{host: "example.test", port: 443}
		if got := str(ex, true); got != tt.tunnel {
			t.Errorf("%v: tunnel upstream %q, want %q", tt.env, got, tt.tunnel)
		}
		if got := str(target{host: "example.test", port: 80}, false); got != tt.plain {
			t.Errorf("%v: plain upstream %q, want %q", tt.env, got, tt.plain)
		}
		if got := str(target{host: "no.test", port: 443}, true); tt.noProxyHit == "" && got != "" && strings.Contains(strings.Join(tt.env, " "), "no_proxy") {
			t.Errorf("%v: NO_PROXY ignored: %q", tt.env, got)
		}
		if got := str(target{addr: netip.MustParseAddr("127.0.0.1"), port: 80}, false); got != "" {
			t.Errorf("%v: loopback goes through %q", tt.env, got)
		}
	}
}

// fakeUpstream is the user's own proxy: it records what it was asked and
// serves CONNECT by dialling the destination itself, plain requests by
// answering them.
type fakeUpstream struct {
	mu       sync.Mutex
	connects []string
	gets     []string
	auth     []string
	dial     func(string) (net.Conn, error)
}

func (f *fakeUpstream) handle(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	f.mu.Lock()
	f.auth = append(f.auth, req.Header.Get("Proxy-Authorization"))
	f.mu.Unlock()
	if req.Method == http.MethodConnect {
		f.mu.Lock()
		f.connects = append(f.connects, req.RequestURI)
		f.mu.Unlock()
		up, err := f.dial(req.RequestURI)
		if err != nil {
			io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
			return
		}
		defer up.Close()
		io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n")
		go io.Copy(up, br)
		io.Copy(c, up)
		return
	}
	f.mu.Lock()
	f.gets = append(f.gets, req.RequestURI)
	f.mu.Unlock()
	fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nvia upstream")
}

// Through the user's own proxy: names are judged as always (a denied
// name never reaches the upstream), allowed tunnels and plain requests go
// through it with its credentials, and a name the local resolver does
// not know is still reachable (the upstream resolves it).
func TestProxyChainsToUpstream(t *testing.T) {
	o := newOrigin(t, "127.0.0.1", nil)
	fu := &fakeUpstream{dial: func(hostport string) (net.Conn, error) {
		return net.Dial("tcp", o.addr.String()) // every name is the origin
	}}
	ln := listenLoopback(t, fu.handle)
	up, err := UpstreamFromEnv([]string{"HTTPS_PROXY=http://u:secret@" + ln.Addr().String(), "HTTP_PROXY=http://u:secret@" + ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, `{ "extends": "none", "permission": { "*": "allow", "net": { "*": "deny", "ok.test": "allow", "internal.test": "allow" } } }`,
		map[string]string{"ok.test": "192.0.2.10"}, withPeers(anyPeer{}),
		func(_ *rig, c *Config, _ *PolicyJudge) { c.Upstream = up })

	tunnel := func(hostport string) string {
		t.Helper()
		c, err := net.Dial("tcp", r.proxy.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			return resp.Status
		}
		fmt.Fprintf(c, "GET /t HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		b, _ := io.ReadAll(br)
		return string(b)
	}
	if got := tunnel("ok.test:443"); !strings.Contains(got, "hello from") {
		t.Errorf("allowed tunnel: %q", got)
	}
	if got := tunnel("internal.test:443"); !strings.Contains(got, "hello from") {
		t.Errorf("a name only the upstream resolves: %q", got)
	}
	if got := tunnel("denied.test:443"); !strings.HasPrefix(got, "403") {
		t.Errorf("denied tunnel: %q", got)
	}
	resp := rawRequest(t, r.proxy, "GET http://ok.test/page HTTP/1.1\r\nHost: ok.test\r\nConnection: close\r\n\r\n")
	if !strings.Contains(resp, "via upstream") {
		t.Errorf("plain request: %q", resp)
	}
	fu.mu.Lock()
	defer fu.mu.Unlock()
	if strings.Join(fu.connects, ",") != "ok.test:443,internal.test:443" {
		t.Errorf("the upstream was asked to CONNECT to %v", fu.connects)
	}
	if strings.Join(fu.gets, ",") != "http://ok.test/page" {
		t.Errorf("the upstream was sent %v", fu.gets)
	}
	for _, a := range fu.auth {
		if a != "Basic dTpzZWNyZXQ=" {
			t.Errorf("Proxy-Authorization %q", a)
		}
	}
	if o.connCount() != 2 {
		t.Errorf("the origin saw %d connections, want 2 (the tunnels)", o.connCount())
	}
}

// An upstream is not used for a resolved address the policy refuses: the
// name's addresses are judged before the upstream is asked.
func TestProxyUpstreamAddressDeny(t *testing.T) {
	fu := &fakeUpstream{dial: func(string) (net.Conn, error) { return nil, fmt.Errorf("no") }}
	ln := listenLoopback(t, fu.handle)
	up, _ := UpstreamFromEnv([]string{"HTTPS_PROXY=http://" + ln.Addr().String()})
	r := newRig(t, `{ "extends": "none", "permission": { "*": "allow", "net": { "*": "deny", "*.ok.test": "allow", "169.254.169.254": "deny" } } }`,
		map[string]string{"meta.ok.test": "169.254.169.254"}, withPeers(anyPeer{}),
		func(_ *rig, c *Config, _ *PolicyJudge) { c.Upstream = up })
	resp := rawRequest(t, r.proxy, "CONNECT meta.ok.test:443 HTTP/1.1\r\nHost: meta.ok.test:443\r\n\r\n")
	if !strings.HasPrefix(resp, "HTTP/1.1 403") {
		t.Errorf("a name resolving to a denied address went through the upstream: %q", resp)
	}
	fu.mu.Lock()
	defer fu.mu.Unlock()
	if len(fu.connects) != 0 {
		t.Errorf("the upstream was asked: %v", fu.connects)
	}
}

func TestExactPeers(t *testing.T) {
	now := time.Unix(1000, 0)
	fb := &countingPeers{}
	e := &ExactPeers{Fallback: fb, now: func() time.Time { return now }}
	client := netip.MustParseAddrPort("127.0.0.1:40000")
	proxy := netip.MustParseAddrPort("127.0.0.1:3128")
	e.Register(netip.MustParseAddrPort("[::ffff:127.0.0.1]:40000"), 42)
	if pid, err := e.Peer(client, proxy); pid != 42 || err != nil {
		t.Errorf("registered peer: %d %v", pid, err)
	}
	// Used once: the port is reused by later connections.
	if pid, _ := e.Peer(client, proxy); pid != 7 || fb.n != 1 {
		t.Errorf("second lookup: pid %d, fallback asked %d times", pid, fb.n)
	}
	e.Register(client, 43)
	now = now.Add(exactPeerTTL + time.Second)
	if pid, _ := e.Peer(client, proxy); pid != 7 {
		t.Errorf("a stale registration was used: %d", pid)
	}
	if _, err := (&ExactPeers{}).Peer(client, proxy); err != ErrNoPeer {
		t.Errorf("no fallback: %v", err)
	}
}

type countingPeers struct{ n int }

func (c *countingPeers) Peer(_, _ netip.AddrPort) (int, error) { c.n++; return 7, nil }

// In audit mode the proxy lets what the policy would refuse through and
// logs it as would_deny, as the supervisor does for the tree's own
// connections.
func TestProxyAuditMode(t *testing.T) {
	o := newOrigin(t, "127.0.0.1", nil)
	r := newRig(t, `{ "extends": "none", "permission": { "*": "allow", "net": { "*": "deny" } } }`,
		map[string]string{"audited.test": "127.0.0.1"}, withPeers(anyPeer{}),
		func(r *rig, _ *Config, j *PolicyJudge) {
			p, _, err := engine.Compile(engine.Config{Audit: true,
				Global: &engine.File{Name: "policy.jsonc", Data: []byte(`{ "extends": "none", "permission": { "*": "allow", "net": { "*": "deny" } } }`)}})
			if err != nil {
				t.Fatal(err)
			}
			r.policy, j.Policy = p, p
		})
	port := o.addr.Port()
	resp := rawRequest(t, r.proxy, fmt.Sprintf("GET http://audited.test:%d/x HTTP/1.1\r\nHost: audited.test\r\nConnection: close\r\n\r\n", port))
	if !strings.Contains(resp, "hello from") {
		t.Fatalf("audit mode refused: %q", resp)
	}
	if log := r.logText(); !strings.Contains(log, "would_deny") {
		t.Errorf("no would_deny record:\n%s", log)
	}
}
