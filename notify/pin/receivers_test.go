package pin

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// needInetDiag skips (or fails) t when the kernel cannot answer an
// exact inet_diag request for proto.
func needInetDiag(t *testing.T, proto int) {
	t.Helper()
	_, _, err := InetReceiver(proto, netip.MustParseAddrPort("127.0.0.1:1"))
	if err != nil {
		kerneltest.Skipf(t, "inet_diag for protocol %d: %v", proto, err)
	}
}

// inetSock makes a loopback socket bound at addr (port 0: any), set up
// by opts before the bind, listening when typ is a stream; it returns
// the fd and the port it got.
func inetSock(t *testing.T, typ int, addr string, opts ...func(fd int) error) (int, uint16) {
	t.Helper()
	ap := netip.MustParseAddrPort(addr)
	domain := unix.AF_INET6
	if ap.Addr().Is4() {
		domain = unix.AF_INET
	}
	fd := socketFd(t, domain, typ)
	for _, o := range opts {
		if err := o(fd); err != nil {
			t.Fatal(err)
		}
	}
	var sa unix.Sockaddr = &unix.SockaddrInet6{Addr: ap.Addr().As16(), Port: int(ap.Port())}
	if domain == unix.AF_INET {
		sa = &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}
	}
	if err := unix.Bind(fd, sa); err != nil {
		t.Fatalf("bind %s: %v", addr, err)
	}
	if typ == unix.SOCK_STREAM {
		if err := unix.Listen(fd, 8); err != nil {
			t.Fatal(err)
		}
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	ip, _ := InetAddrPort(got)
	return fd, ip.Port()
}

func sockopt(level, opt, v int) func(int) error {
	return func(fd int) error { return unix.SetsockoptInt(fd, level, opt, v) }
}

var (
	v6only    = sockopt(unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1)
	dualStack = sockopt(unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
	reusePort = sockopt(unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
)

// idOf is what a Receiver must report of the socket fd: its cookie and
// its inode.
func idOf(t *testing.T, fd int) (cookie uint64, ino uint32) {
	t.Helper()
	c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return c, uint32(st.Ino)
}

func ap(addr string, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr(addr), port)
}

// wantReceiver checks that dst reaches the socket fd (fd < 0: none).
func wantReceiver(t *testing.T, proto int, dst netip.AddrPort, fd int) Receiver {
	t.Helper()
	r, ok, err := InetReceiver(proto, dst)
	if err != nil {
		t.Fatalf("InetReceiver(%d, %s): %v", proto, dst, err)
	}
	if fd < 0 {
		if ok {
			t.Errorf("InetReceiver(%d, %s) = %s, want none", proto, dst, r)
		}
		return r
	}
	c, ino := idOf(t, fd)
	if !ok || r.Cookie != c || r.Ino != ino {
		t.Errorf("InetReceiver(%d, %s) = %s (%v), want socket:[%d] cookie %d", proto, dst, r, ok, ino, c)
	}
	return r
}

// TCP: the listener a SYN reaches, through the kernel's own lookup, for
// every kind of bind.
func TestInetReceiverTCP(t *testing.T) {
	needInetDiag(t, unix.IPPROTO_TCP)
	tcp := unix.IPPROTO_TCP
	st := unix.SOCK_STREAM

	t.Run("loopback", func(t *testing.T) {
		fd, p := inetSock(t, st, "127.0.0.1:0")
		r := wantReceiver(t, tcp, ap("127.0.0.1", p), fd)
		if !r.Listening || r.Family != unix.AF_INET || r.Type != unix.SOCK_STREAM || r.Local != ap("127.0.0.1", p) || !r.HasUID || r.UID != uint32(os.Geteuid()) {
			t.Errorf("receiver %+v", r)
		}
		wantReceiver(t, tcp, ap("127.0.0.2", p), -1)        // another loopback address: refused
		wantReceiver(t, tcp, ap("::ffff:127.0.0.1", p), fd) // mapped: the IPv4 address
		wantReceiver(t, tcp, ap("0.0.0.0", p), fd)          // routed to 127.0.0.1
		wantReceiver(t, tcp, ap("::1", p), -1)              // an IPv4 socket takes no IPv6
	})
	t.Run("wildcard", func(t *testing.T) {
		fd, p := inetSock(t, st, "0.0.0.0:0")
		wantReceiver(t, tcp, ap("127.0.0.1", p), fd)
		wantReceiver(t, tcp, ap("127.0.0.2", p), fd)
		wantReceiver(t, tcp, ap("::1", p), -1)
		// The lookup does not ask whether the address is this
		// machine's: any address reaches a wildcard listener.
		wantReceiver(t, tcp, ap("192.0.2.99", p), fd)
	})
	t.Run("dual-stack", func(t *testing.T) {
		fd, p := inetSock(t, st, "[::]:0", dualStack)
		r := wantReceiver(t, tcp, ap("127.0.0.1", p), fd)
		if r.Family != unix.AF_INET6 || r.Local != ap("::", p) {
			t.Errorf("an IPv4 destination of a dual-stack listener: %+v", r)
		}
		wantReceiver(t, tcp, ap("::1", p), fd)
		wantReceiver(t, tcp, ap("::ffff:127.0.0.1", p), fd)
		wantReceiver(t, tcp, ap("::", p), fd)
	})
	t.Run("v6only", func(t *testing.T) {
		fd, p := inetSock(t, st, "[::]:0", v6only)
		wantReceiver(t, tcp, ap("::1", p), fd)
		wantReceiver(t, tcp, ap("127.0.0.1", p), -1)
	})
	t.Run("ipv6 loopback", func(t *testing.T) {
		fd, p := inetSock(t, st, "[::1]:0")
		wantReceiver(t, tcp, ap("::1", p), fd)
		wantReceiver(t, tcp, ap("127.0.0.1", p), -1)
	})
	t.Run("exact beats wildcard", func(t *testing.T) {
		wild, p := inetSock(t, st, "0.0.0.0:0", reusePort)
		exact, _ := inetSock(t, st, ap("127.0.0.1", p).String(), reusePort)
		wantReceiver(t, tcp, ap("127.0.0.1", p), exact)
		wantReceiver(t, tcp, ap("127.0.0.2", p), wild)
	})
	t.Run("reuseport group", func(t *testing.T) {
		a, p := inetSock(t, st, "127.0.0.1:0", reusePort)
		b, _ := inetSock(t, st, ap("127.0.0.1", p).String(), reusePort)
		r, ok, err := InetReceiver(tcp, ap("127.0.0.1", p))
		ca, _ := idOf(t, a)
		cb, _ := idOf(t, b)
		if err != nil || !ok || (r.Cookie != ca && r.Cookie != cb) {
			t.Errorf("a SO_REUSEPORT group: %s %v %v, want one of cookies %d %d", r, ok, err, ca, cb)
		}
	})
	t.Run("bound, not listening", func(t *testing.T) {
		fd := socketFd(t, unix.AF_INET, unix.SOCK_STREAM)
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		sa, _ := unix.Getsockname(fd)
		wantReceiver(t, tcp, ap("127.0.0.1", uint16(sa.(*unix.SockaddrInet4).Port)), -1)
	})
	t.Run("established", func(t *testing.T) {
		// A connection's own ports reach no listener, and the
		// listener with connections is still the answer for its port.
		l, p := inetSock(t, st, "127.0.0.1:0")
		c := socketFd(t, unix.AF_INET, unix.SOCK_STREAM)
		if err := unix.Connect(c, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: int(p)}); err != nil {
			t.Fatal(err)
		}
		nfd, _, err := unix.Accept(l)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(nfd)
		sa, _ := unix.Getsockname(c)
		wantReceiver(t, tcp, ap("127.0.0.1", uint16(sa.(*unix.SockaddrInet4).Port)), -1)
		wantReceiver(t, tcp, ap("127.0.0.1", p), l)
		// The request's peer, the unspecified address: a connect to
		// it is routed to loopback, so no connection has it as peer.
		for _, typ := range []int{unix.SOCK_STREAM, unix.SOCK_DGRAM} {
			z := socketFd(t, unix.AF_INET, typ)
			if err := unix.Connect(z, &unix.SockaddrInet4{Port: int(p)}); err != nil {
				t.Fatal(err)
			}
			peer, err := unix.Getpeername(z)
			if err != nil || peer.(*unix.SockaddrInet4).Addr != [4]byte{127, 0, 0, 1} {
				t.Errorf("type %d connected to 0.0.0.0: peer %+v %v, want 127.0.0.1", typ, peer, err)
			}
		}
		z6 := socketFd(t, unix.AF_INET6, unix.SOCK_DGRAM)
		if err := unix.Connect(z6, &unix.SockaddrInet6{Port: int(p)}); err != nil {
			t.Fatal(err)
		}
		if peer, err := unix.Getpeername(z6); err != nil || peer.(*unix.SockaddrInet6).Addr != netip.IPv6Loopback().As16() {
			t.Errorf("connected to ::: peer %+v %v, want ::1", peer, err)
		}
	})
	t.Run("bound to lo", func(t *testing.T) {
		fd := socketFd(t, unix.AF_INET, unix.SOCK_STREAM)
		if err := unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, "lo"); err != nil {
			t.Skipf("SO_BINDTODEVICE: %v", err)
		}
		if err := unix.Bind(fd, &unix.SockaddrInet4{}); err != nil {
			t.Fatal(err)
		}
		unix.Listen(fd, 1)
		sa, _ := unix.Getsockname(fd)
		wantReceiver(t, tcp, ap("127.0.0.1", uint16(sa.(*unix.SockaddrInet4).Port)), fd)
	})
}

// UDP: the socket a datagram reaches.
func TestInetReceiverUDP(t *testing.T) {
	needInetDiag(t, unix.IPPROTO_UDP)
	udp := unix.IPPROTO_UDP
	dg := unix.SOCK_DGRAM
	t.Run("loopback", func(t *testing.T) {
		fd, p := inetSock(t, dg, "127.0.0.1:0")
		r := wantReceiver(t, udp, ap("127.0.0.1", p), fd)
		if r.Type != unix.SOCK_DGRAM || r.Listening || r.Local != ap("127.0.0.1", p) {
			t.Errorf("receiver %+v", r)
		}
		wantReceiver(t, udp, ap("127.0.0.2", p), -1)
		wantReceiver(t, udp, ap("::1", p), -1)
		// TCP on the same port is another table.
		wantReceiver(t, unix.IPPROTO_TCP, ap("127.0.0.1", p), -1)
	})
	t.Run("wildcard", func(t *testing.T) {
		fd, p := inetSock(t, dg, "0.0.0.0:0")
		wantReceiver(t, udp, ap("127.0.0.3", p), fd)
	})
	t.Run("dual-stack", func(t *testing.T) {
		fd, p := inetSock(t, dg, "[::]:0", dualStack)
		wantReceiver(t, udp, ap("127.0.0.1", p), fd)
		wantReceiver(t, udp, ap("::1", p), fd)
	})
	t.Run("v6only", func(t *testing.T) {
		fd, p := inetSock(t, dg, "[::]:0", v6only)
		wantReceiver(t, udp, ap("::1", p), fd)
		wantReceiver(t, udp, ap("127.0.0.1", p), -1)
	})
	t.Run("connected", func(t *testing.T) {
		// A socket connected to a peer takes that peer's datagrams
		// only: another sender's are not its.
		peer, pp := inetSock(t, dg, "127.0.0.1:0")
		_ = peer
		fd, p := inetSock(t, dg, "127.0.0.1:0")
		if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: int(pp)}); err != nil {
			t.Fatal(err)
		}
		wantReceiver(t, udp, ap("127.0.0.1", p), -1)
	})
	t.Run("reuseport group", func(t *testing.T) {
		a, p := inetSock(t, dg, "127.0.0.1:0", reusePort)
		b, _ := inetSock(t, dg, ap("127.0.0.1", p).String(), reusePort)
		r, ok, err := InetReceiver(udp, ap("127.0.0.1", p))
		ca, _ := idOf(t, a)
		cb, _ := idOf(t, b)
		if err != nil || !ok || (r.Cookie != ca && r.Cookie != cb) {
			t.Errorf("a SO_REUSEPORT group: %s %v %v, want one of cookies %d %d", r, ok, err, ca, cb)
		}
	})
	if _, _, err := InetReceiver(unix.IPPROTO_ICMP, ap("127.0.0.1", 1)); err == nil {
		t.Error("ICMP: no error")
	}
}

// Handle.Cookie is the cookie a Receiver reports.
func TestHandleCookie(t *testing.T) {
	needInetDiag(t, unix.IPPROTO_TCP)
	fd, p := inetSock(t, unix.SOCK_STREAM, "127.0.0.1:0")
	h, _, err := OpenSocket(os.Getpid(), fd)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c, err := h.Cookie()
	r, ok, err2 := InetReceiver(unix.IPPROTO_TCP, ap("127.0.0.1", p))
	if err != nil || err2 != nil || !ok || c == 0 || r.Cookie != c {
		t.Errorf("Cookie %d %v, receiver %s %v %v", c, err, r, ok, err2)
	}
}

// unixSock binds a Unix socket of type typ at addr ("@name": abstract),
// listening when it is a stream or seqpacket.
func unixSock(t *testing.T, typ int, addr string) int {
	t.Helper()
	fd := socketFd(t, unix.AF_UNIX, typ)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: addr}); err != nil {
		t.Fatalf("bind %q: %v", addr, err)
	}
	if typ != unix.SOCK_DGRAM {
		if err := unix.Listen(fd, 8); err != nil {
			t.Fatal(err)
		}
	}
	return fd
}

func TestUnixReceiver(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "l.sock")
	l := unixSock(t, unix.SOCK_STREAM, path)
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	f := FileID{Dev: st.Dev, Ino: st.Ino}
	// An accepted connection carries the listener's file too.
	c := socketFd(t, unix.AF_UNIX, unix.SOCK_STREAM)
	if err := unix.Connect(c, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	a, _, err := unix.Accept(l)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(a)
	r, ok, err := UnixReceiver(f)
	if errors.Is(err, ErrNoSockDiag) {
		kerneltest.Skipf(t, "unix_diag: %v", err)
	}
	cookie, ino := idOf(t, l)
	if err != nil || !ok || r.Cookie != cookie || r.Ino != ino || !r.Listening || r.Name != path || r.Abstract || r.File != f || r.Family != unix.AF_UNIX || r.Type != unix.SOCK_STREAM {
		t.Fatalf("UnixReceiver = %+v %v %v, want the listener socket:[%d]", r, ok, err, ino)
	}
	if !r.HasUID || r.UID != uint32(os.Geteuid()) {
		t.Errorf("uid %d %v", r.UID, r.HasUID)
	}
	// A datagram socket receives without listening.
	dpath := filepath.Join(dir, "d.sock")
	d := unixSock(t, unix.SOCK_DGRAM, dpath)
	unix.Stat(dpath, &st)
	r, ok, err = UnixReceiver(FileID{Dev: st.Dev, Ino: st.Ino})
	if dc, _ := idOf(t, d); err != nil || !ok || r.Cookie != dc || r.Type != unix.SOCK_DGRAM {
		t.Errorf("a datagram socket: %+v %v %v", r, ok, err)
	}
	// Connected to a peer, it takes that peer's datagrams only.
	peer := socketFd(t, unix.AF_UNIX, unix.SOCK_DGRAM)
	if err := unix.Connect(d, &unix.SockaddrUnix{Name: dpath}); err != nil { // to itself
		t.Fatal(err)
	}
	if err := unix.Sendto(peer, []byte("x"), 0, &unix.SockaddrUnix{Name: dpath}); err != unix.EPERM {
		t.Errorf("a send to a datagram socket connected to another: %v, want EPERM", err)
	}
	if r, ok, err := UnixReceiver(FileID{Dev: st.Dev, Ino: st.Ino}); ok || err != nil {
		t.Errorf("a connected datagram socket: %+v %v %v, want none", r, ok, err)
	}
	// A stream socket bound but not listening receives nothing.
	npath := filepath.Join(dir, "n.sock")
	n := socketFd(t, unix.AF_UNIX, unix.SOCK_STREAM)
	if err := unix.Bind(n, &unix.SockaddrUnix{Name: npath}); err != nil {
		t.Fatal(err)
	}
	unix.Stat(npath, &st)
	if r, ok, err := UnixReceiver(FileID{Dev: st.Dev, Ino: st.Ino}); ok || err != nil {
		t.Errorf("bound, not listening: %+v %v %v", r, ok, err)
	}
	// Closed: nobody.
	unix.Close(l)
	if r, ok, err := UnixReceiver(f); ok || err != nil {
		t.Errorf("after close: %+v %v %v", r, ok, err)
	}
}

func TestAbstractReceiver(t *testing.T) {
	base := "permwrap-test-" + filepath.Base(t.TempDir())
	names := []string{base, base + "\x00nul", base + "\n", base + "x"}
	fds := map[string]int{}
	for _, n := range names[:3] {
		fds[n] = unixSock(t, unix.SOCK_STREAM, "@"+n)
	}
	for _, n := range names[:3] {
		r, ok, err := AbstractReceiver(n, unix.SOCK_STREAM)
		if errors.Is(err, ErrNoSockDiag) {
			kerneltest.Skipf(t, "unix_diag: %v", err)
		}
		c, ino := idOf(t, fds[n])
		if err != nil || !ok || r.Cookie != c || r.Ino != ino || !r.Abstract || r.Name != n || !r.Listening {
			t.Errorf("AbstractReceiver(%q) = %+v %v %v, want socket:[%d]", n, r, ok, err, ino)
		}
	}
	// No prefix match, no other type.
	if r, ok, err := AbstractReceiver(names[3], unix.SOCK_STREAM); ok || err != nil {
		t.Errorf("a name bound by nobody: %+v %v %v", r, ok, err)
	}
	if r, ok, err := AbstractReceiver(base[:len(base)-1], unix.SOCK_STREAM); ok || err != nil {
		t.Errorf("a prefix: %+v %v %v", r, ok, err)
	}
	if r, ok, err := AbstractReceiver(base, unix.SOCK_DGRAM); ok || err != nil {
		t.Errorf("another type: %+v %v %v", r, ok, err)
	}
	// The same name, bound by a datagram socket: measured, the kernel
	// keeps a namespace a type.
	d := socketFd(t, unix.AF_UNIX, unix.SOCK_DGRAM)
	if err := unix.Bind(d, &unix.SockaddrUnix{Name: "@" + base}); err != nil {
		t.Logf("the name bound by a stream socket, by a datagram socket: %v", err)
	} else {
		r, ok, err := AbstractReceiver(base, unix.SOCK_DGRAM)
		if c, _ := idOf(t, d); err != nil || !ok || r.Cookie != c {
			t.Errorf("the datagram socket of a shared name: %+v %v %v", r, ok, err)
		}
	}
}

// Lookups from many goroutines share the kept netlink sockets, exact
// requests and dumps (stopped early, at the socket sought, and read to
// their end all the same): each gets its own answer.
func TestInetReceiverConcurrent(t *testing.T) {
	needInetDiag(t, unix.IPPROTO_TCP)
	a, pa := inetSock(t, unix.SOCK_STREAM, "127.0.0.1:0")
	b, pb := inetSock(t, unix.SOCK_DGRAM, "127.0.0.1:0")
	ca, _ := idOf(t, a)
	cb, _ := idOf(t, b)
	name := "permwrap-test-" + filepath.Base(t.TempDir())
	abs := unixSock(t, unix.SOCK_STREAM, "@"+name)
	cabs, _ := idOf(t, abs)
	for range 200 { // sockets after the one sought, in the dump
		unixSock(t, unix.SOCK_STREAM, "")
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 300 {
				if i%7 == 0 {
					r, ok, err := AbstractReceiver(name, unix.SOCK_STREAM)
					if err != nil || !ok || r.Cookie != cabs {
						errs <- fmt.Errorf("abstract: %s %v %v, want cookie %d", r, ok, err, cabs)
						return
					}
					continue
				}
				proto, dst, want := unix.IPPROTO_TCP, ap("127.0.0.1", pa), ca
				if (g+i)%2 == 1 {
					proto, dst, want = unix.IPPROTO_UDP, ap("127.0.0.1", pb), cb
				}
				if (g+i)%5 == 0 { // none
					dst = ap("127.0.0.2", dst.Port())
				}
				r, ok, err := InetReceiver(proto, dst)
				if err != nil || ok != ((g+i)%5 != 0) || ok && r.Cookie != want {
					errs <- fmt.Errorf("%d %s: %s %v %v, want cookie %d", proto, dst, r, ok, err, want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
