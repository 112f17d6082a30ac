package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/testutil"
)

// Every test here talks to loopback only. Names end in .test (RFC 6761:
// never resolved on the Internet), and the proxy resolves them through
// mapResolver; the clients never resolve them at all (they hand the name
// to the proxy).

func compilePolicy(t testing.TB, src string) *engine.Policy {
	t.Helper()
	p, _, err := engine.Compile(engine.Config{
		Global: &engine.File{Name: "policy.jsonc", Data: []byte(src)},
		Env:    engine.Env{Home: "/home/u", Workspace: "/w", TmpDir: "/tmp"},
	})
	if err != nil {
		t.Fatalf("policy: %v", err)
	}
	return p
}

// mapResolver resolves names from a table and counts lookups.
type mapResolver struct {
	mu      sync.Mutex
	names   map[string][]netip.Addr
	lookups map[string]int
}

func newResolver(m map[string]string) *mapResolver {
	r := &mapResolver{names: map[string][]netip.Addr{}, lookups: map[string]int{}}
	for name, addrs := range m {
		for _, a := range strings.Split(addrs, ",") {
			r.names[name] = append(r.names[name], netip.MustParseAddr(a))
		}
	}
	return r
}

func (r *mapResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups[host]++
	if a, ok := r.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
}

func (r *mapResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[host]
}

// decider answers asks with answer and records them.
type decider struct {
	mu     sync.Mutex
	asks   []authority.Request
	answer func(ctx context.Context, r authority.Request) authority.Decision
}

func (d *decider) Resolve(ctx context.Context, r authority.Request) authority.Decision {
	d.mu.Lock()
	d.asks = append(d.asks, r)
	d.mu.Unlock()
	return d.answer(ctx, r)
}

func (d *decider) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.asks)
}

func allowForSession(_ context.Context, r authority.Request) authority.Decision {
	return authority.AllowedForSession(authority.ByUser{Via: "dialog"}, r.Suggested...)
}

func denyByUser(_ context.Context, r authority.Request) authority.Decision {
	return authority.Denied(authority.ByUser{Via: "dialog"}, "not this one")
}

type rig struct {
	proxy    *Proxy
	policy   *engine.Policy
	resolver *mapResolver
	decider  *decider
	log      *authority.Log
	logBuf   *testutil.SyncBuffer
	errLog   *testutil.SyncBuffer
	denied   []string
	deniedMu sync.Mutex
}

type rigOpt func(*rig, *Config, *PolicyJudge)

func withDecider(f func(context.Context, authority.Request) authority.Decision) rigOpt {
	return func(r *rig, _ *Config, j *PolicyJudge) {
		r.decider = &decider{answer: f}
		j.Decider = r.decider
	}
}

func withPeers(p Peers) rigOpt { return func(_ *rig, c *Config, _ *PolicyJudge) { c.Peers = p } }

func withLimits(l Limits) rigOpt { return func(_ *rig, c *Config, _ *PolicyJudge) { c.Limits = l } }

// newRig starts a proxy judging by policy src, with names resolved by
// names (name → comma-separated addresses).
func newRig(t testing.TB, src string, names map[string]string, opts ...rigOpt) *rig {
	t.Helper()
	r := &rig{policy: compilePolicy(t, src), resolver: newResolver(names), logBuf: &testutil.SyncBuffer{}, errLog: &testutil.SyncBuffer{}}
	r.log = authority.NewLogWriter(r.logBuf, authority.LogOptions{})
	j := &PolicyJudge{Policy: r.policy, Log: r.log, Agent: []string{"agent"},
		Process: func(pid int) authority.Process { return authority.Process{PID: pid, Comm: "testclient"} },
		Denied: func(in engine.NetIntent, reason string) {
			r.deniedMu.Lock()
			r.denied = append(r.denied, reason)
			r.deniedMu.Unlock()
		}}
	cfg := Config{Judge: j, Resolver: r.resolver, Peers: &ProcPeers{Root: os.Getpid()}, ErrorLog: r.errLog}
	for _, o := range opts {
		o(r, &cfg, j)
	}
	p, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.proxy = p
	t.Cleanup(func() {
		p.Close()
		r.log.Close()
		if s := r.errLog.String(); strings.Contains(s, "panic") {
			t.Errorf("the proxy panicked:\n%s", s)
		}
	})
	return r
}

// logText is the review log so far.
func (r *rig) logText() string {
	r.log.Close() // drains the writer; later records are dropped
	return r.logBuf.String()
}

// origin is a loopback HTTP server that counts its connections.
type origin struct {
	srv   *http.Server
	ln    net.Listener
	addr  netip.AddrPort
	conns int
	mu    sync.Mutex
	reqs  []*http.Request
	// bodies: the size of each request's body, read whole before the
	// reply. (A server that replies to a request with "Connection: close"
	// without reading its body closes with the body unread, and the
	// kernel answers the rest of it with a reset: the proxy's write of it
	// then fails, and whether the reply was read first is a race.)
	bodies []int64
}

func newOrigin(t testing.TB, ip string, h http.Handler) *origin {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	o := &origin{ln: ln, addr: ln.Addr().(*net.TCPAddr).AddrPort()}
	if h == nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, _ := io.Copy(io.Discard, r.Body)
			o.mu.Lock()
			o.reqs = append(o.reqs, r.Clone(context.Background()))
			o.bodies = append(o.bodies, n)
			o.mu.Unlock()
			fmt.Fprintf(w, "hello from %s %s\n", o.addr, r.URL.RequestURI())
		})
	}
	o.srv = &http.Server{Handler: h, ConnState: func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			o.mu.Lock()
			o.conns++
			o.mu.Unlock()
		}
	}}
	go o.srv.Serve(ln)
	t.Cleanup(func() { o.srv.Close() })
	return o
}

func (o *origin) connCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.conns
}

// rawRequest sends raw bytes to the proxy and returns what came back
// before the proxy closed or the deadline passed.
func rawRequest(t testing.TB, p *Proxy, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		var ne net.Error
		if !errors.As(err, &ne) {
			t.Fatalf("read: %v", err)
		}
	}
	return string(b)
}

// listenLoopback serves every connection to a new loopback port with
// handle, until the test ends.
func listenLoopback(t testing.TB, handle func(net.Conn)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln
}
