package supervisor

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify/pin"
)

func sockaddr4(family uint16, a string, port uint16, n int) []byte {
	b := make([]byte, n)
	binary.LittleEndian.PutUint16(b, family)
	if n >= 8 {
		binary.BigEndian.PutUint16(b[2:], port)
		ip := netip.MustParseAddr(a).As4()
		copy(b[4:8], ip[:])
	}
	return b
}

func sockaddr6(a string, port uint16, n int) []byte {
	b := make([]byte, n)
	binary.LittleEndian.PutUint16(b, unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], port)
	ip := netip.MustParseAddr(a).As16()
	copy(b[8:24], ip[:])
	return b
}

func sockaddrUnix(name string) []byte {
	return append([]byte{unix.AF_UNIX, 0}, name...)
}

// parseDest reads a sockaddr as the kernel will for the socket's family:
// AF_UNSPEC is a disconnect for connect, an IPv4 address for a send on an
// AF_INET socket (udp_sendmsg's compatibility) and no address for one on
// AF_INET6; short or foreign addresses get the kernel's errno.
func TestParseDest(t *testing.T) {
	inet := pin.SockInfo{Domain: unix.AF_INET, Type: unix.SOCK_DGRAM}
	inet6 := pin.SockInfo{Domain: unix.AF_INET6, Type: unix.SOCK_DGRAM}
	unixS := pin.SockInfo{Domain: unix.AF_UNIX, Type: unix.SOCK_DGRAM}
	netlink := pin.SockInfo{Domain: unix.AF_NETLINK, Type: unix.SOCK_RAW}
	vsock := pin.SockInfo{Domain: unix.AF_VSOCK, Type: unix.SOCK_STREAM}
	tests := []struct {
		name    string
		b       []byte
		si      pin.SockInfo
		connect bool
		kind    destKind
		ap      string
		path    string
		errno   unix.Errno
		kernel  bool
	}{
		{name: "ipv4", b: sockaddr4(unix.AF_INET, "10.1.2.3", 443, 16), si: inet, connect: true, kind: destInet, ap: "10.1.2.3:443"},
		{name: "ipv4 short", b: sockaddr4(unix.AF_INET, "10.1.2.3", 443, 15), si: inet, connect: true, errno: unix.EINVAL, kernel: true},
		{name: "ipv4 on an inet6 socket", b: sockaddr4(unix.AF_INET, "10.1.2.3", 53, 16), si: inet6, kind: destInet, ap: "10.1.2.3:53"},
		{name: "ipv6", b: sockaddr6("2001:db8::1", 22, 28), si: inet6, connect: true, kind: destInet, ap: "[2001:db8::1]:22"},
		{name: "ipv6 RFC 2133 length", b: sockaddr6("::1", 22, 24), si: inet6, connect: true, kind: destInet, ap: "[::1]:22"},
		{name: "ipv6 short", b: sockaddr6("::1", 22, 24)[:23], si: inet6, connect: true, errno: unix.EINVAL, kernel: true},
		{name: "v4-mapped", b: sockaddr6("::ffff:169.254.169.254", 80, 28), si: inet6, connect: true, kind: destInet, ap: "[::ffff:169.254.169.254]:80"},
		{name: "unspec connect", b: sockaddr4(unix.AF_UNSPEC, "0.0.0.0", 0, 16), si: inet, connect: true, kind: destDisconnect},
		{name: "unspec send on inet is IPv4", b: sockaddr4(unix.AF_UNSPEC, "10.9.9.9", 53, 16), si: inet, kind: destInet, ap: "10.9.9.9:53"},
		{name: "unspec send on inet6 is none", b: sockaddr4(unix.AF_UNSPEC, "10.9.9.9", 53, 16), si: inet6, kind: destNone},
		{name: "unix on inet", b: sockaddrUnix("/x"), si: inet, connect: true, errno: unix.EAFNOSUPPORT, kernel: true},
		{name: "empty connect", b: []byte{}, si: inet, connect: true, errno: unix.EINVAL, kernel: true},
		{name: "empty send", b: []byte{}, si: inet, kind: destNone},
		{name: "one byte", b: []byte{2}, si: inet, errno: unix.EINVAL, kernel: true},
		{name: "unix path", b: sockaddrUnix("/run/x.sock\x00junk"), si: unixS, connect: true, kind: destUnixPath, path: "/run/x.sock"},
		{name: "unix relative", b: sockaddrUnix("s.sock"), si: unixS, kind: destUnixPath, path: "s.sock"},
		{name: "unix abstract", b: sockaddrUnix("\x00/tmp/.X11-unix/X0\x00a"), si: unixS, connect: true, kind: destUnixAbstract, path: "@/tmp/.X11-unix/X0@a"},
		{name: "unix family only", b: sockaddrUnix(""), si: unixS, connect: true, errno: unix.EINVAL, kernel: true},
		{name: "unix unspec connect (dgram disconnect)", b: []byte{0, 0}, si: unixS, connect: true, kind: destDisconnect},
		{name: "unix unspec send", b: []byte{0, 0}, si: unixS, errno: unix.EINVAL, kernel: true},
		{name: "inet on unix", b: sockaddr4(unix.AF_INET, "10.1.2.3", 1, 16), si: unixS, connect: true, errno: unix.EINVAL, kernel: true},
		{name: "netlink", b: []byte{unix.AF_NETLINK, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, si: netlink, connect: true, kind: destLocal},
		{name: "a foreign socket", b: sockaddr4(unix.AF_INET, "10.1.2.3", 1, 16), si: vsock, connect: true, errno: unix.EAFNOSUPPORT},
	}
	for _, tt := range tests {
		d, err := parseDest(tt.b, tt.si, tt.connect)
		if tt.errno != 0 {
			var r *refusal
			if !errors.As(err, &r) || r.errno != tt.errno || r.kernel != tt.kernel {
				t.Errorf("%s: err %v, want errno %v (kernel %v)", tt.name, err, tt.errno, tt.kernel)
			}
			continue
		}
		if err != nil || d.kind != tt.kind || tt.ap != "" && d.ap.String() != tt.ap || d.path != tt.path {
			t.Errorf("%s: %+v %v, want kind %d %s %q", tt.name, d, err, tt.kind, tt.ap, tt.path)
		}
	}
}

// A send's destination matters unless the kernel ignores it: a TCP
// stream (without MSG_FASTOPEN, which makes the send a connect), a Unix
// stream or seqpacket.
func TestNameMatters(t *testing.T) {
	tcp := pin.SockInfo{Domain: unix.AF_INET6, Type: unix.SOCK_STREAM}
	for _, c := range []struct {
		si    pin.SockInfo
		flags int
		want  bool
	}{
		{tcp, 0, false},
		{tcp, unix.MSG_FASTOPEN, true},
		{pin.SockInfo{Domain: unix.AF_INET, Type: unix.SOCK_DGRAM}, 0, true},
		{pin.SockInfo{Domain: unix.AF_UNIX, Type: unix.SOCK_DGRAM}, 0, true},
		{pin.SockInfo{Domain: unix.AF_UNIX, Type: unix.SOCK_STREAM}, 0, false},
		{pin.SockInfo{Domain: unix.AF_UNIX, Type: unix.SOCK_SEQPACKET}, 0, false},
		{pin.SockInfo{Domain: unix.AF_NETLINK, Type: unix.SOCK_RAW}, 0, true},
	} {
		if got := nameMatters(c.si, c.flags); got != c.want {
			t.Errorf("nameMatters(%+v, %#x) = %v", c.si, c.flags, got)
		}
	}
}

func TestNameservers(t *testing.T) {
	m := parseResolvConf([]byte("# comment\nnameserver 10.0.0.2\nnameserver fe80::1%eth0\nsearch x\nnameserver bogus\nnameserver\n"))
	if len(m) != 2 || !m[netip.MustParseAddr("10.0.0.2")] || !m[netip.MustParseAddr("fe80::1")] {
		t.Errorf("parseResolvConf = %v", m)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "resolv.conf")
	os.WriteFile(p, []byte("nameserver 10.0.0.2\n"), 0o644)
	ns := &nameservers{}
	ns.path = p
	if !ns.is(netip.MustParseAddr("::ffff:10.0.0.2")) || ns.is(netip.MustParseAddr("10.0.0.3")) {
		t.Error("the name server is not recognised (or another is)")
	}
	// The file changes (a DHCP client rewrote it): read again.
	os.WriteFile(p+".new", []byte("nameserver 10.0.0.3\n"), 0o644)
	os.Rename(p+".new", p)
	ns.check = time.Time{}
	if !ns.is(netip.MustParseAddr("10.0.0.3")) || ns.is(netip.MustParseAddr("10.0.0.2")) {
		t.Error("the rewritten file was not read")
	}
	os.Remove(p)
	ns.check = time.Time{}
	if ns.is(netip.MustParseAddr("10.0.0.3")) {
		t.Error("a missing file still names a name server")
	}
}

// A control message rebuilt by cmsg reads back the same.
func TestCmsgRoundTrip(t *testing.T) {
	b := append(cmsg(unix.SOL_IP, unix.IP_TOS, []byte{1, 2, 3}), cmsg(unix.SOL_UDP, 103 /* UDP_SEGMENT */, []byte{0xb0, 0x04})...)
	msgs, err := unix.ParseSocketControlMessage(b)
	if err != nil || len(msgs) != 2 || msgs[0].Header.Type != unix.IP_TOS || string(msgs[0].Data) != "\x01\x02\x03" ||
		msgs[1].Header.Level != unix.SOL_UDP || string(msgs[1].Data) != "\xb0\x04" {
		t.Errorf("round trip: %+v %v", msgs, err)
	}
	for _, c := range []struct {
		level, typ int32
		want       bool
	}{{unix.SOL_IP, unix.IP_RETOPTS, true}, {unix.SOL_IPV6, unix.IPV6_RTHDR, true}, {unix.SOL_IPV6, unix.IPV6_2292RTHDR, true},
		{unix.SOL_IP, unix.IP_PKTINFO, false}, {unix.SOL_IPV6, unix.IPV6_PKTINFO, false}, {unix.SOL_SOCKET, unix.SCM_RIGHTS, false}} {
		if _, got := routingCmsg(c.level, c.typ); got != c.want {
			t.Errorf("routingCmsg(%d, %d) = %v", c.level, c.typ, got)
		}
	}
}

// A connection to the proxy, to nowhere, and to a socket the tree bound
// are decided without the policy's ask; everything else by DecideNet.
func TestNetTargetJudge(t *testing.T) {
	p, _, err := engine.Compile(engine.Config{Global: &engine.File{Name: "p.jsonc",
		Data: []byte(`{"extends": "none", "permission": {"*": "allow", "net": {"*": "ask", "unix:/run/own/*": "ask", "unix:/run/denied": "deny"}}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	in := &engine.NetIntent{Proto: engine.ProtoTCP, Addr: netip.MustParseAddr("10.0.0.1"), Port: 80}
	if v := (&netTarget{}).judge(p, "sendto"); !v.quiet || v.result.Action != engine.Allow {
		t.Errorf("no destination: %+v", v)
	}
	if v := (&netTarget{intent: in, proxy: true}).judge(p, "connect"); !v.quiet || v.result.Action != engine.Allow {
		t.Errorf("the proxy: %+v", v)
	}
	v := (&netTarget{intent: in}).judge(p, "connect")
	if v.quiet || v.result.Action != engine.Ask || v.net != in || v.value != "tcp 10.0.0.1:80 (no name known) — use a host name through the proxy" {
		t.Errorf("an address: %+v", v)
	}
	tree := &engine.NetService{Tree: true}
	own := &engine.NetIntent{Proto: engine.ProtoUnix, Path: "/run/own/s", Service: tree}
	if v := (&netTarget{intent: own}).judge(p, "connect"); v.result.Action != engine.Allow || v.result.Rule.Origin != engine.OriginBuiltin {
		t.Errorf("the tree's own socket where a rule asks: %+v", v)
	}
	denied := &engine.NetIntent{Proto: engine.ProtoUnix, Path: "/run/denied", Service: tree}
	if v := (&netTarget{intent: denied}).judge(p, "connect"); v.result.Action != engine.Deny {
		t.Errorf("the tree's own socket where a rule denies: %+v", v)
	}
	udp := &engine.NetIntent{Proto: engine.ProtoUDP, Addr: netip.MustParseAddr("127.0.0.1"), Port: 9}
	if v := (&netTarget{intent: udp, nobody: true}).judge(p, "sendto"); v.result.Action != engine.Allow {
		t.Errorf("a datagram nothing receives, where a rule asks: %+v", v)
	}
}
