package egress

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/testutil"
)

// FuzzParseTarget: a CONNECT authority or a request URL either is refused
// or names a host the engine accepts and a port in range.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"github.com:443", "[::1]:22", "127.0.0.1:80", "a.b", "[::1", "x:0", "http://u@h/", "http://h:99999/",
		"http://[fe80::1%25eth0]:80/", "HTTP://GitHub.com./x", "github.com:443:1", "b\xc3\xbccher.test:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		check := func(tg target, err error) {
			if err != nil {
				return
			}
			if tg.port == 0 {
				t.Fatalf("%q: port 0 accepted", s)
			}
			if (tg.host == "") == !tg.addr.IsValid() {
				t.Fatalf("%q: want exactly one of host and address: %+v", s, tg)
			}
			if tg.host != "" {
				if n, err := engine.NormalizeHostName(tg.host); err != nil || n != tg.host {
					t.Fatalf("%q: host %q is not normalized", s, tg.host)
				}
			}
			in := engine.NetIntent{Proto: engine.ProtoTCP, Host: tg.host, Addr: tg.addr, Port: tg.port}
			if err := in.Validate(); err != nil {
				t.Fatalf("%q: the intent it makes is invalid: %v", s, err)
			}
		}
		check(parseAuthority(s))
		if u, err := url.Parse(s); err == nil {
			check(parseAbsoluteURL(u))
		}
	})
}

// denyAll denies every connection and counts what it was asked.
type denyAll struct{ n atomic.Int64 }

func (d *denyAll) Evaluate(in engine.NetIntent) engine.NetDecision {
	return engine.NetDecision{Result: engine.Result{Action: engine.Deny}}
}

func (d *denyAll) Decide(ctx context.Context, in engine.NetIntent) Verdict {
	d.n.Add(1)
	if err := in.Validate(); err != nil {
		panic("the proxy judged an invalid intent: " + err.Error())
	}
	return Verdict{Reason: "deny " + in.String()}
}

type anyPeer struct{}

func (anyPeer) Peer(_, _ netip.AddrPort) (int, error) { return 1, nil }

// FuzzProxyRequest sends arbitrary bytes to a running proxy: it must
// answer or close within its limits, never resolve or dial anything its
// judge refused, and never panic (the server's log is watched).
func FuzzProxyRequest(f *testing.F) {
	for _, s := range []string{
		"CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n",
		"GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
		"GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"POST http://1.2.3.4:80/ HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc",
		"CONNECT [::1]:22 HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\n\r\n",
		"\x00\x01\x02",
	} {
		f.Add([]byte(s))
	}
	judge := &denyAll{}
	res := newResolver(nil)
	var errLog testutil.SyncBuffer
	p, err := Start(Config{Judge: judge, Peers: anyPeer{}, Resolver: res, ErrorLog: &errLog,
		Limits: Limits{HeaderTimeout: 200 * time.Millisecond, MaxHeaderSize: 8 << 10}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { p.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := net.Dial("tcp", p.Addr().String())
		if err != nil {
			t.Skip("dial:", err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		_, _ = c.Write(data)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		buf := make([]byte, 4096)
		var out strings.Builder
		for {
			n, err := c.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if s := out.String(); s != "" && !strings.HasPrefix(s, "HTTP/1.") {
			t.Fatalf("answer is not HTTP: %q", s)
		}
		if strings.Contains(out.String(), " 200 ") {
			t.Fatalf("a deny-all proxy answered 200: %q", out.String())
		}
		res.mu.Lock()
		n := len(res.lookups)
		res.mu.Unlock()
		if n != 0 {
			t.Fatalf("a refused name was resolved")
		}
		if s := errLog.String(); strings.Contains(s, "panic") {
			t.Fatalf("panic:\n%s", s)
		}
	})
}
