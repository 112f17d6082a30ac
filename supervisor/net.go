package supervisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify/pin"
)

// Outbound network: connect, and sendto/sendmsg/sendmmsg with a
// destination. The decoder takes the target's own socket (pidfd_getfd),
// reads the destination once and resolves it (an AF_UNIX path like any
// path, pinned; an address with the names permwrap's proxy resolved to
// it); the call is judged on the net surface; an allowed call is
// performed by the supervisor on that same socket with exactly the bytes
// that were judged, so no second thread can change where it goes. Nothing
// is continued. docs/network.md says what is and is not covered.

// Bounds on what a send copies from the target.
const (
	// maxSockaddr is sizeof(struct sockaddr_storage): connect and sendto
	// refuse longer addresses with EINVAL, sendmsg cuts msg_namelen to it.
	maxSockaddr = 128
	// maxDatagram bounds one datagram (or SEQPACKET record), which must be
	// sent whole; past it the call fails with EMSGSIZE. A Unix datagram
	// socket's own limit (its send buffer, 208 KiB by default) is far
	// below.
	maxDatagram = 16 << 20
	// maxStreamChunk bounds what one send on a stream socket copies: a
	// stream send may return less than it was given, and callers send the
	// rest.
	maxStreamChunk = 1 << 20
	// maxControl is the kernel's optmem_max default: ancillary data past
	// it is ENOBUFS.
	maxControl = 128 << 10
	// uioMaxIov is UIO_MAXIOV: iovecs past it are EMSGSIZE; sendmmsg
	// sends at most this many messages.
	uioMaxIov = 1024
)

// destKind is what a sockaddr names for the socket it is used with.
type destKind uint8

const (
	destNone         destKind = iota // no address: the socket's peer (or the kernel ignores it)
	destDisconnect                   // connect(AF_UNSPEC): dissolves the association
	destLocal                        // AF_NETLINK: the kernel or a process on this machine
	destInet                         // an IPv4 or IPv6 address and port
	destUnixPath                     // an AF_UNIX pathname
	destUnixAbstract                 // an AF_UNIX abstract name
)

// dest is a parsed destination.
type dest struct {
	kind destKind
	ap   netip.AddrPort
	// path is the AF_UNIX path as given (destUnixPath), or "@name" with
	// NUL bytes shown as '@' (destUnixAbstract).
	path string
	// abstract is the abstract name as the kernel keeps it: every byte
	// after the leading NUL (destUnixAbstract).
	abstract string
}

// nameMatters reports whether the kernel uses a send's destination for
// this socket: a TCP (or MPTCP) stream ignores it unless MSG_FASTOPEN
// makes the send a connect; a Unix stream refuses it and a Unix
// SEQPACKET ignores it.
//
// Such a send is still performed by permwrap, never continued: a
// continued sendmsg looks its fd up again, and a second thread that
// dup2()s a UDP socket onto that fd number after the check would send
// to a msg_name nobody judged (flipped meanwhile, too). Performing on
// the socket taken at decode time sends on exactly the socket that was
// looked at.
func nameMatters(si pin.SockInfo, flags int) bool {
	switch {
	case si.Type == unix.SOCK_STREAM && (si.Domain == unix.AF_INET || si.Domain == unix.AF_INET6):
		return flags&unix.MSG_FASTOPEN != 0
	case si.Domain == unix.AF_UNIX && si.Type != unix.SOCK_DGRAM:
		return false
	}
	return true
}

// parseDest reads the sockaddr b (its length as the kernel copied it) as
// the kernel will for a socket of si's family. connect says it is a
// connect (AF_UNSPEC then dissolves the association) rather than a send.
// Sockaddrs the kernel refuses for that family get the kernel's errno.
func parseDest(b []byte, si pin.SockInfo, connect bool) (dest, error) {
	if len(b) < 2 {
		if !connect && len(b) == 0 {
			return dest{kind: destNone}, nil
		}
		return dest{}, kernelErr(unix.EINVAL, "address shorter than its family")
	}
	family := binary.LittleEndian.Uint16(b)
	wrongFamily := func() (dest, error) {
		if si.Domain == unix.AF_INET || si.Domain == unix.AF_INET6 {
			return dest{}, kernelErr(unix.EAFNOSUPPORT, fmt.Sprintf("address family %d", family))
		}
		return dest{}, kernelErr(unix.EINVAL, fmt.Sprintf("address family %d", family))
	}
	switch si.Domain {
	case unix.AF_NETLINK:
		return dest{kind: destLocal}, nil // the kernel validates it
	case unix.AF_UNIX:
		switch family {
		case unix.AF_UNIX:
			return parseUnix(b)
		case unix.AF_UNSPEC:
			if connect {
				return dest{kind: destDisconnect}, nil
			}
		}
		return wrongFamily()
	case unix.AF_INET, unix.AF_INET6:
		switch family {
		case unix.AF_INET:
			return parseIPv4(b)
		case unix.AF_INET6:
			return parseIPv6(b)
		case unix.AF_UNSPEC:
			switch {
			case connect:
				return dest{kind: destDisconnect}, nil
			case si.Domain == unix.AF_INET:
				// udp_sendmsg takes AF_UNSPEC as AF_INET (compatibility).
				return parseIPv4(b)
			}
			return dest{kind: destNone}, nil // udpv6_sendmsg: no address
		}
		return wrongFamily()
	}
	return dest{}, &refusal{errno: unix.EAFNOSUPPORT, why: fmt.Sprintf("a socket of family %d (permwrap judges unix, inet, inet6 and netlink sockets)", si.Domain)}
}

func parseIPv4(b []byte) (dest, error) {
	if len(b) < unix.SizeofSockaddrInet4 {
		return dest{}, kernelErr(unix.EINVAL, "IPv4 address too short")
	}
	port := binary.BigEndian.Uint16(b[2:4])
	a := netip.AddrFrom4([4]byte(b[4:8]))
	return dest{kind: destInet, ap: netip.AddrPortFrom(a, port)}, nil
}

// sin6LenRFC2133 is the shortest sockaddr_in6 the kernel accepts (without
// sin6_scope_id).
const sin6LenRFC2133 = 24

func parseIPv6(b []byte) (dest, error) {
	if len(b) < sin6LenRFC2133 {
		return dest{}, kernelErr(unix.EINVAL, "IPv6 address too short")
	}
	port := binary.BigEndian.Uint16(b[2:4])
	a := netip.AddrFrom16([16]byte(b[8:24]))
	return dest{kind: destInet, ap: netip.AddrPortFrom(a, port)}, nil
}

// parseUnix reads an AF_UNIX sockaddr as unix_validate_addr and
// unix_mkname_bsd do: a pathname up to its first NUL, or (a NUL first)
// an abstract name of every byte that follows.
func parseUnix(b []byte) (dest, error) {
	if len(b) <= 2 || len(b) > unix.SizeofSockaddrUnix {
		return dest{}, kernelErr(unix.EINVAL, "bad AF_UNIX address length")
	}
	name := b[2:]
	if name[0] == 0 {
		return dest{kind: destUnixAbstract, path: "@" + strings.ReplaceAll(string(name[1:]), "\x00", "@"), abstract: string(name[1:])}, nil
	}
	if i := strings.IndexByte(string(name), 0); i >= 0 {
		name = name[:i]
	}
	return dest{kind: destUnixPath, path: string(name)}, nil
}

// netTarget is what a connect or a send is judged on: its destination
// resolved and its intent, or nothing to judge.
type netTarget struct {
	d      dest
	unix   *pin.Resolved     // destUnixPath: the socket file, pinned
	intent *engine.NetIntent // nil: nothing to judge (no destination, local)
	// proxy: the destination is permwrap's own egress proxy.
	proxy bool
	// unheard: a Unix socket file no socket permwrap can see is bound to
	// (a server gone, or in another network namespace): an ask about it
	// is answered as the kernel answers a stale socket (connectCall).
	unheard bool
	// nobody: nothing on this machine receives this datagram (no socket
	// is bound to its local address and port).
	nobody bool
	// closed: nothing on this machine listens for this stream
	// connection. Unless the policy denies it, it is answered as the
	// kernel answers it, ECONNREFUSED, without connecting: a listener
	// that appears meanwhile (outside the tree) was not judged.
	closed bool
	// reached is the address the call is performed with, when it is not
	// the one given (the unspecified address: unspecifiedDest).
	reached []byte
}

// protoOf is the transport a socket speaks, for the log and the prompt.
func protoOf(si pin.SockInfo) engine.NetProto {
	switch {
	case si.Domain == unix.AF_UNIX:
		return engine.ProtoUnix
	case si.Type == unix.SOCK_DGRAM && (si.Protocol == unix.IPPROTO_ICMP || si.Protocol == unix.IPPROTO_ICMPV6):
		return engine.ProtoICMP
	case si.Type == unix.SOCK_DGRAM:
		return engine.ProtoUDP
	}
	return engine.ProtoTCP
}

// target resolves a parsed destination for judging. An AF_UNIX path is
// resolved as connect resolves it (relative to the thread's cwd, the
// last symlink followed) and pinned; the kernel's own failures (no such
// file, not a socket, nothing listening) are answered without judging,
// as they reveal nothing a probe could not. A destination on this
// machine is judged with what serves it (netlocal.go).
func (d *decoder) target(ds dest, h *pin.Handle, si pin.SockInfo, tgid int) (netTarget, error) {
	t := netTarget{d: ds}
	switch ds.kind {
	case destInet:
		if a := ds.ap.Addr(); a.Unmap().IsUnspecified() {
			to, err := unspecifiedDest(h, si, a)
			if err != nil {
				return t, &refusal{errno: pin.Errno(err), why: "reading the socket's own address", err: err}
			}
			ds.ap = netip.AddrPortFrom(to, ds.ap.Port())
			t.d, t.reached = ds, sockaddrInet(ds.ap, si)
		}
		a := ds.ap.Addr()
		in := &engine.NetIntent{Proto: protoOf(si), Addr: a, Port: ds.ap.Port(), PID: tgid}
		if d.net != nil {
			in.Names = d.net.names(a)
			in.Nameserver = d.net.ns.is(a)
			t.proxy = d.net.isProxy(ds.ap)
			if !t.proxy && in.Proto != engine.ProtoICMP && d.net.isLocal(a) {
				var err error
				if in.Service, t.nobody, t.closed, err = d.net.inetService(h, si, ds.ap); err != nil {
					return t, err
				}
			}
		}
		t.intent = in
	case destUnixAbstract:
		t.intent = &engine.NetIntent{Proto: engine.ProtoUnix, Path: ds.path, PID: tgid}
		if d.net != nil {
			svc, err := d.net.abstractService(h, si, ds.abstract)
			if err != nil {
				return t, err
			}
			t.intent.Service = svc
		}
	case destUnixPath:
		r, err := d.resolve(unix.AT_FDCWD, ds.path, pin.FollowLast)
		if err != nil {
			return t, err
		}
		if !r.Exists {
			return t, kernelErr(unix.ENOENT, "no such socket")
		}
		if r.Stat.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return t, kernelErr(unix.ECONNREFUSED, "not a socket")
		}
		t.unix = r
		t.intent = &engine.NetIntent{Proto: engine.ProtoUnix, Path: r.Path, PID: tgid}
		if d.net != nil {
			t.intent.Service, t.unheard = d.net.fileService(r)
		}
	}
	return t, nil
}

// judge is the answer for one destination.
func (t *netTarget) judge(p *engine.Policy, access string) verdict {
	switch {
	case t.intent == nil:
		return verdict{result: allowUnchecked(""), access: access, quiet: true}
	case t.proxy:
		// permwrap's own proxy, which judges each request by name.
		return verdict{result: allowBuiltin(t.intent, "permwrap's egress proxy"), access: access, quiet: true}
	}
	v := verdict{result: p.DecideNet(*t.intent).Result, access: access, value: netValue(t.intent), net: t.intent}
	switch {
	case v.result.Action == engine.Deny:
	case t.closed:
		v.result = allowBuiltin(t.intent, "nothing listens there: the kernel refuses the connection")
		v.quiet = true
	case v.result.Action == engine.Ask && t.nobody:
		v.result = allowBuiltin(t.intent, "nothing on this machine is bound to this address and port: the datagram reaches no one")
	}
	return v
}

// netValue is a destination as the denial line and the log show it.
func netValue(in *engine.NetIntent) string {
	s := in.String()
	if in.Proto != engine.ProtoUnix && in.Host == "" && len(in.Names) == 0 && in.Service == nil {
		s += " — use a host name through the proxy"
	}
	return s
}

// allowBuiltin allows a destination without the policy, saying why.
func allowBuiltin(in *engine.NetIntent, why string) engine.Result {
	c := engine.Check{Surface: engine.SurfaceNet, Value: in.Target()}
	return engine.Result{Action: engine.Allow, Check: c, Layer: engine.LayerBuiltin,
		Rule: engine.Rule{Surface: engine.SurfaceNet, Action: engine.Allow, Origin: engine.OriginBuiltin, Reason: why}}
}

// socketOf takes the target's socket fd for a network call, with the
// kernel's answers for a bad fd (EBADF) or a file that is not a socket
// (ENOTSOCK), and says what kind of socket it is.
func (d *decoder) socketOf(fd int) (*pin.Handle, pin.SockInfo, int, error) {
	h, tgid, err := pin.OpenSocket(d.tid, fd)
	if err != nil {
		if errors.Is(err, unix.EBADF) {
			return nil, pin.SockInfo{}, 0, kernelErr(unix.EBADF, "bad fd")
		}
		return nil, pin.SockInfo{}, 0, &refusal{errno: pin.Errno(err), why: "taking the target's socket", err: err}
	}
	si, err := h.Sock()
	if err != nil {
		h.Close()
		if errors.Is(err, unix.ENOTSOCK) {
			return nil, si, 0, kernelErr(unix.ENOTSOCK, "not a socket")
		}
		return nil, si, 0, &refusal{errno: pin.Errno(err), why: "reading what the socket is", err: err}
	}
	return h, si, tgid, nil
}

// sockaddrArg reads a (pointer, length) sockaddr argument pair as
// move_addr_to_kernel does.
func (d *decoder) sockaddrArg(ptrArg, lenArg int) ([]byte, error) {
	n := int(int32(d.arg(lenArg)))
	if n < 0 || n > maxSockaddr {
		return nil, kernelErr(unix.EINVAL, "bad address length")
	}
	if n == 0 {
		return []byte{}, nil
	}
	return d.bytes(ptrArg, n, "the address")
}

// handedOff makes a call's resources the property of the goroutine that
// performs it: close() does nothing once perform has begun, and the
// performer releases them when it is done.
type handedOff struct{ done atomic.Bool }

// take reports whether the caller is the one to release (first call wins).
func (h *handedOff) take() bool { return h.done.CompareAndSwap(false, true) }

// connect.

// Sends.
