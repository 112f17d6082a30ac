package egress

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestParseAuthority(t *testing.T) {
	tests := []struct{ in, want string }{
		{"github.com:443", "github.com:443"},
		{"GitHub.COM.:443", "github.com:443"},
		{"127.0.0.1:8080", "127.0.0.1:8080"},
		{"[::1]:22", "[::1]:22"},
		{"[::ffff:1.2.3.4]:1", "[::ffff:1.2.3.4]:1"}, // the engine unmaps it when judging
		{"_srv.example.test:1", "_srv.example.test:1"},
		{"github.com", "error: has no port"},
		{"github.com:", "error: want host:port"},
		{"github.com:0", "error: port must be 1 to 65535"},
		{"github.com:65536", "error: port must be 1 to 65535"},
		{"github.com:+443", "error: bad port"},
		{"github.com:443:1", "error: want host:port"},
		{"::1:22", "error: want host:port"},
		{"[::1]", "error: has no port"},
		{"[fe80::1%eth0]:22", "error: zoned"},
		{"[::1]x:22", "error: want host:port"},
		{"a b.test:1", "error: character ' '"},
		{"a%2e.test:1", "error: character '%'"},
		{"xn--bcher-kva.test:443", "xn--bcher-kva.test:443"},
		{"b\xc3\xbccher.test:443", "error: non-ASCII"},
		{"10.0.0.256:80", "error: neither an IP address nor a host name"},
		{":443", "error: empty host name"},
		{"", "error: empty CONNECT target"},
	}
	for _, tt := range tests {
		tg, err := parseAuthority(tt.in)
		got := tg.String()
		if err != nil {
			got = "error: " + err.Error()
			if !errors.Is(err, errBadTarget) {
				t.Errorf("%q: error not errBadTarget", tt.in)
			}
		}
		if tt.want != got && !(strings.HasPrefix(tt.want, "error: ") && strings.HasPrefix(got, "error: ") && strings.Contains(got, tt.want[7:])) {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseAbsoluteURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://example.test/x", "example.test:80"},
		{"HTTP://Example.Test:8080/x?y", "example.test:8080"},
		{"http://[::1]:8080/", "[::1]:8080"},
		{"http://127.0.0.1/", "127.0.0.1:80"},
		{"/x", "error: send absolute http:// URLs or CONNECT"},
		{"https://example.test/", "error: go through CONNECT"},
		{"ftp://example.test/", "error: scheme \"ftp\" is not proxied"},
		{"http://u:p@example.test/", "error: user info"},
		{"http:///x", "error: names no host"},
		{"http://example.test:0/", "error: port must be 1 to 65535"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.in)
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		tg, err := parseAbsoluteURL(u)
		got := tg.String()
		if err != nil {
			got = "error: " + err.Error()
		}
		if tt.want != got && !(strings.HasPrefix(tt.want, "error: ") && strings.Contains(got, tt.want[7:])) {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}

// BenchmarkProcPeers measures naming a connection's process through /proc
// (the socket table, then the fds of the tree): the cost each new client
// connection pays before its first request is judged.
func BenchmarkProcPeers(b *testing.B) {
	var (
		mu   sync.Mutex
		held []net.Conn // the server ends stay open: fds to scan past
	)
	ln := listenLoopback(b, func(c net.Conn) { mu.Lock(); held = append(held, c); mu.Unlock() })
	// Some fds to scan past, as a busy process has.
	var keep []net.Conn
	for i := 0; i < 50; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		keep = append(keep, c)
	}
	defer func() {
		for _, c := range keep {
			c.Close()
		}
	}()
	c := keep[len(keep)-1]
	client := netip.MustParseAddrPort(c.LocalAddr().String())
	server := netip.MustParseAddrPort(ln.Addr().String())
	b.Run("socket-table", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := socketInode(client, server); err != nil {
				b.Fatal(err)
			}
		}
	})
	inode, _ := socketInode(client, server)
	b.Run("fd-scan-self", func(b *testing.B) {
		link := "socket:[" + strconv.FormatUint(inode, 10) + "]"
		for i := 0; i < b.N; i++ {
			if !holdsFd(os.Getpid(), link) {
				b.Fatal("not found")
			}
		}
	})
	for _, bc := range []struct {
		name string
		pp   *ProcPeers
	}{{"tree", &ProcPeers{Root: os.Getpid()}}, {"all-processes", &ProcPeers{}}} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				bc.pp.last.Store(0) // no hint: the full scan
				pid, err := bc.pp.Peer(client, server)
				if err != nil || pid != os.Getpid() {
					b.Fatalf("%d %v", pid, err)
				}
			}
		})
	}
}
