package supervisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/host"
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
		return dest{kind: destUnixAbstract, path: "@" + strings.ReplaceAll(string(name[1:]), "\x00", "@")}, nil
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
	// own: a Unix socket the tree itself bound (netState.own).
	own bool
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
// file, not a socket) are answered without judging, as they reveal
// nothing stat could not.
func (d *decoder) target(ds dest, si pin.SockInfo, tgid int) (netTarget, error) {
	t := netTarget{d: ds}
	switch ds.kind {
	case destInet:
		a := ds.ap.Addr()
		in := &engine.NetIntent{Proto: protoOf(si), Addr: a, Port: ds.ap.Port(), PID: tgid}
		if d.net != nil {
			in.Names = d.net.names(a)
			in.Nameserver = d.net.ns.is(a)
			t.proxy = d.net.isProxy(ds.ap)
		}
		t.intent = in
	case destUnixAbstract:
		t.intent = &engine.NetIntent{Proto: engine.ProtoUnix, Path: ds.path, PID: tgid}
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
			t.own = d.net.own.owns(r)
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
	if t.own && v.result.Action == engine.Ask {
		v.result = allowBuiltin(t.intent, "a Unix socket this session's own processes bound")
	}
	return v
}

// netValue is a destination as the denial line and the log show it.
func netValue(in *engine.NetIntent) string {
	s := in.String()
	if in.Proto != engine.ProtoUnix && in.Host == "" && len(in.Names) == 0 {
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

type connectCall struct {
	callDefaults
	tid, tgid int
	h         *pin.Handle
	si        pin.SockInfo
	nonblock  bool
	addr      []byte
	t         netTarget
	net       *netState
	// unheard: the Unix socket file is bound by no socket (judge).
	unheard bool
	handedOff
}

func decodeConnect(d *decoder) (decoded, error) {
	h, si, tgid, err := d.socketOf(d.fdArg(0))
	if err != nil {
		return nil, err
	}
	addr, err := d.sockaddrArg(1, 2)
	if err == nil {
		var ds dest
		if ds, err = parseDest(addr, si, true); err == nil {
			var t netTarget
			if t, err = d.target(ds, si, tgid); err == nil {
				var nb bool
				if nb, err = h.Nonblocking(); err == nil {
					return &connectCall{tid: d.tid, tgid: tgid, h: h, si: si, nonblock: nb, addr: addr, t: t, net: d.net}, nil
				}
				closeAll(t.unix)
				err = &refusal{errno: pin.Errno(err), why: "reading the socket's flags", err: err}
			}
		}
	}
	h.Close()
	return nil, err
}

// judge is the destination's answer, except that an ask about a Unix
// socket file no socket is bound to is not put to anyone: nothing listens
// there, and nothing ever can (bind creates a new file, it never takes
// over an existing one), so the kernel would refuse the connection
// (ECONNREFUSED), and permwrap answers that without connecting. This is
// the stale socket a tmux or screen server leaves behind when it exits:
// a tmux client inside the tree tries the default socket first, and
// starts its own server (which is the tree's, see netTarget.own) only on
// ECONNREFUSED — an ask, or a denial headless, would stop it there.
// A file whose socket is in another network namespace looks unbound
// (sock_diag sees one namespace): it is refused rather than asked about,
// never connected.
func (c *connectCall) judge(p *engine.Policy) verdict {
	v := c.t.judge(p, "connect")
	if v.result.Action == engine.Ask && c.t.unix != nil && !c.t.own && c.t.unix.Stat.Ino <= 0xffffffff {
		if bound, err := pin.FileBound(c.t.unix.ID()); err == nil && !bound {
			c.unheard = true
			v.result = allowBuiltin(c.t.intent, "no socket is bound to this file: the kernel refuses the connection")
		}
	}
	return v
}

// perform connects the target's socket. A blocking connect waits for the
// peer (or SO_SNDTIMEO), so it runs off the receiving pool; a
// non-blocking one returns at once (EINPROGRESS: the target collects the
// outcome with poll and SO_ERROR, on the same socket) and runs inline.
// The answer is the kernel's.
//
// O_NONBLOCK is the open file's, read when the call was decoded: a
// second thread of the target that clears it meanwhile makes this
// connect wait on a receiver — for as long as its own would have waited
// (the TCP handshake's retries, SO_SNDTIMEO, a Unix listener's full
// backlog). That stalls only the tree's own calls, and no decision
// depends on it.
func (c *connectCall) perform(s *supervisor, id uint64, _ *notify.Quiet) (changed bool) {
	c.done.Store(true)
	if c.nonblock {
		c.connect(s, id)
		return
	}
	go c.connect(s, id)
	return false
}

func (c *connectCall) connect(s *supervisor, id uint64) {
	defer c.release()
	var err error
	if c.unheard {
		err = unix.ECONNREFUSED
	} else if c.t.unix != nil {
		err = c.h.ConnectUnix(c.t.unix)
	} else {
		err = c.h.Connect(c.addr)
	}
	if c.t.proxy && (err == nil || errors.Is(err, unix.EINPROGRESS)) {
		c.registerWithProxy()
	}
	s.answer(id, err)
}

// registerWithProxy tells the proxy which process holds the connection
// about to reach it (before the target learns it is connected, so before
// it can send a request).
func (c *connectCall) registerWithProxy() {
	if c.net == nil || c.net.peers == nil {
		return
	}
	sa, err := c.h.Local()
	if err != nil {
		return
	}
	var ap netip.AddrPort
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		ap = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		ap = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
	default:
		return
	}
	c.net.peers.Register(ap, c.tgid)
}

func (c *connectCall) release() {
	c.h.Close()
	closeAll(c.t.unix)
}

func (c *connectCall) close() {
	if c.take() {
		c.release()
	}
}

// Sends.

// sendMsg is one message of a send: its destination, what was read of it
// and what it will be sent with.
type sendMsg struct {
	t    netTarget
	snd  pin.Send
	fds  []*os.File // SCM_RIGHTS duplicates, closed after the send
	mlen uint64     // sendmmsg: where its msg_len goes (0: not sendmmsg)
}

func (m *sendMsg) release() {
	for _, f := range m.fds {
		f.Close()
	}
	closeAll(m.t.unix)
}

// sendCall is sendto, sendmsg or sendmmsg.
type sendCall struct {
	callDefaults
	tid   int
	h     *pin.Handle
	si    pin.SockInfo
	name  string // the syscall
	msg   bool   // sendmsg/sendmmsg: sent with sendmsg(2)
	mmsg  bool   // sendmmsg: answers a count and writes each msg_len
	flags int
	msgs  []sendMsg
	// asked is the index of the message whose verdict answers the call
	// (the first), or -1 before judge.
	asked int
	// allowed records, per later message, whether the policy allowed it
	// without asking (set by judge): sendmmsg sends those that follow the
	// first, up to the first that is not.
	allowed []bool
	handedOff
}

func decodeSendto(d *decoder) (decoded, error) {
	flags := int(int32(d.arg(3)))
	h, si, tgid, err := d.socketOf(d.fdArg(0))
	if err != nil {
		return nil, err
	}
	c := &sendCall{tid: d.tid, h: h, si: si, name: "sendto", flags: flags, asked: -1}
	if err := c.decodeSendto(d, tgid); err != nil {
		c.release()
		return nil, err
	}
	return c, nil
}

func (c *sendCall) decodeSendto(d *decoder, tgid int) error {
	if err := c.checkFlags(); err != nil {
		return err
	}
	nameLen := int(int32(d.arg(5)))
	if nameLen < 0 || nameLen > maxSockaddr {
		return kernelErr(unix.EINVAL, "bad address length")
	}
	size := uint64(d.arg(2))
	if size > 0x7fffffff {
		size = 0x7fffffff // the kernel's INT_MAX cut
	}
	n, err := c.dataSize(size)
	if err != nil {
		return err
	}
	// The address and the data, read in one go.
	both, err := notify.ReadGather(d.tid, []notify.Iovec{{Base: d.arg(4), Len: uint64(nameLen)}, {Base: d.arg(1), Len: uint64(n)}}, nameLen+n)
	if err != nil {
		return memoryErr("the address and the data", err)
	}
	m := sendMsg{snd: pin.Send{Name: both[:nameLen:nameLen], HasName: d.arg(4) != 0, Data: both[nameLen:], Flags: c.flags}}
	if err := c.destination(d, &m, tgid); err != nil {
		return err
	}
	c.msgs = []sendMsg{m}
	return nil
}

func decodeSendmsg(d *decoder) (decoded, error) {
	flags := int(int32(d.arg(2)))
	h, si, tgid, err := d.socketOf(d.fdArg(0))
	if err != nil {
		return nil, err
	}
	c := &sendCall{tid: d.tid, h: h, si: si, name: "sendmsg", msg: true, flags: flags, asked: -1}
	if err := c.checkFlags(); err != nil {
		c.release()
		return nil, err
	}
	m, err := c.decodeMsghdr(d, d.arg(1), tgid)
	if err != nil {
		c.release()
		return nil, err
	}
	c.msgs = []sendMsg{m}
	return c, nil
}

// sizeofMmsghdr is struct mmsghdr: a msghdr and the unsigned msg_len the
// kernel fills in, padded to 64 bytes.
const (
	sizeofMsghdr  = 56
	sizeofMmsghdr = 64
)

func decodeSendmmsg(d *decoder) (decoded, error) {
	flags := int(int32(d.arg(3)))
	h, si, tgid, err := d.socketOf(d.fdArg(0))
	if err != nil {
		return nil, err
	}
	c := &sendCall{tid: d.tid, h: h, si: si, name: "sendmmsg", msg: true, mmsg: true, flags: flags, asked: -1}
	if err := c.checkFlags(); err != nil {
		c.release()
		return nil, err
	}
	vlen := min(uint32(d.arg(2)), uioMaxIov)
	vec := d.arg(1)
	for i := range uint64(vlen) {
		mark := len(d.pinned)
		m, err := c.decodeMsghdr(d, vec+i*sizeofMmsghdr, tgid)
		if err != nil {
			if i > 0 {
				// The kernel sends what came before a bad message; what
				// was resolved for this one is not needed.
				for _, r := range d.pinned[mark:] {
					r.Close()
				}
				d.pinned = d.pinned[:mark]
				break
			}
			c.release()
			return nil, err
		}
		m.mlen = vec + i*sizeofMmsghdr + sizeofMsghdr
		c.msgs = append(c.msgs, m)
	}
	return c, nil
}

// checkFlags refuses what cannot be performed on the target's behalf:
// MSG_ZEROCOPY on a socket with SO_ZEROCOPY (the kernel would send from
// the caller's pages and report completion on the socket's error queue
// for pages that are not the target's): ENOBUFS, which the zerocopy
// documentation tells callers to answer by sending with a copy.
func (c *sendCall) checkFlags() error {
	if c.flags&unix.MSG_ZEROCOPY != 0 {
		if host.ZeroCopy(c.h.File()) {
			return kernelErr(unix.ENOBUFS, "MSG_ZEROCOPY cannot be performed by permwrap")
		}
	}
	return nil
}

// dataSize is how much of a send of size bytes is copied: all of a
// datagram (bounded), at most a chunk of a stream.
func (c *sendCall) dataSize(size uint64) (int, error) {
	if c.si.Type == unix.SOCK_STREAM {
		return int(min(size, maxStreamChunk)), nil
	}
	if size > maxDatagram {
		return 0, kernelErr(unix.EMSGSIZE, "datagram too large")
	}
	return int(size), nil
}

// destination parses and resolves a message's destination when the
// kernel would use it.
func (c *sendCall) destination(d *decoder, m *sendMsg, tgid int) error {
	if !m.snd.HasName || !nameMatters(c.si, c.flags) {
		return nil // sent as given; the kernel ignores (or refuses) the name
	}
	if len(m.snd.Name) == 0 && c.msg {
		return nil // sendmsg: a zero-length name is no name
	}
	ds, err := parseDest(m.snd.Name, c.si, false)
	if err != nil {
		return err
	}
	if m.t, err = d.target(ds, c.si, tgid); err != nil {
		return err
	}
	m.snd.Unix = m.t.unix
	return nil
}

// decodeMsghdr reads one struct msghdr at addr: the destination, the
// data (gathered from its iovecs), the control messages (file
// descriptors duplicated from the target, routing headers refused).
func (c *sendCall) decodeMsghdr(d *decoder, addr uint64, tgid int) (sendMsg, error) {
	var m sendMsg
	b, err := notify.ReadBytes(d.tid, addr, sizeofMsghdr)
	if err != nil {
		return m, memoryErr("the msghdr", err)
	}
	le := binary.LittleEndian
	namePtr, nameLen := le.Uint64(b[0:]), int32(le.Uint32(b[8:]))
	iovPtr, iovLen := le.Uint64(b[16:]), le.Uint64(b[24:])
	ctlPtr, ctlLen := le.Uint64(b[32:]), le.Uint64(b[40:])
	if nameLen < 0 {
		return m, kernelErr(unix.EINVAL, "negative msg_namelen")
	}
	if iovLen > uioMaxIov {
		return m, kernelErr(unix.EMSGSIZE, "too many iovecs")
	}
	m.snd.Flags = c.flags
	if namePtr != 0 && nameLen > 0 {
		n := min(int(nameLen), maxSockaddr)
		if m.snd.Name, err = notify.ReadBytes(d.tid, namePtr, n); err != nil {
			return m, memoryErr("the address", err)
		}
		m.snd.HasName = true
	}
	iov, err := notify.ReadIovecs(d.tid, iovPtr, int(iovLen))
	if err != nil {
		return m, memoryErr("the iovecs", err)
	}
	var total uint64
	for _, v := range iov {
		if v.Len > 0x7fffffff || total+v.Len > 0x7fffffff {
			return m, kernelErr(unix.EINVAL, "iovecs longer than INT_MAX")
		}
		total += v.Len
	}
	n, err := c.dataSize(total)
	if err != nil {
		return m, err
	}
	if m.snd.Data, err = notify.ReadGather(d.tid, iov, n); err != nil {
		return m, memoryErr("the data", err)
	}
	creds := false
	if ctlLen > 0 {
		if ctlLen > maxControl {
			return m, kernelErr(unix.ENOBUFS, "control messages too long")
		}
		raw, err := notify.ReadBytes(d.tid, ctlPtr, int(ctlLen))
		if err != nil {
			return m, memoryErr("the control messages", err)
		}
		if m.snd.Control, m.fds, err = c.control(raw, &creds); err != nil {
			m.release()
			return m, err
		}
	}
	if !creds && c.si.Domain == unix.AF_UNIX && pin.CanClaimUcred() {
		// A receiver with SO_PASSCRED gets the sender's credentials:
		// the target's, as if it had sent the message itself.
		if u, err := pin.SenderUcred(c.tid); err == nil {
			m.snd.Ucred = &u
		}
	}
	if err := c.destination(d, &m, tgid); err != nil {
		m.release()
		return m, err
	}
	return m, nil
}

// control rebuilds a message's control data for the supervisor to send:
// SCM_RIGHTS with the target's descriptors duplicated into the supervisor
// (a bad one is EBADF, as the kernel answers), routing headers refused,
// SCM_CREDENTIALS checked as the kernel checks them for the target
// (credentials), everything else as it was. creds says whether the
// message carries SCM_CREDENTIALS.
func (c *sendCall) control(raw []byte, creds *bool) ([]byte, []*os.File, error) {
	if len(raw) < unix.SizeofCmsghdr {
		return nil, nil, nil // shorter than a header: the kernel sees none
	}
	msgs, err := unix.ParseSocketControlMessage(raw)
	if err != nil {
		return nil, nil, kernelErr(unix.EINVAL, "malformed control message")
	}
	var out []byte
	var fds []*os.File
	fail := func(err error) ([]byte, []*os.File, error) {
		for _, f := range fds {
			f.Close()
		}
		return nil, nil, err
	}
	for _, cm := range msgs {
		switch {
		case cm.Header.Level == unix.SOL_SOCKET && cm.Header.Type == unix.SCM_RIGHTS:
			var mine []int
			for i := 0; i+4 <= len(cm.Data); i += 4 {
				fd := int(int32(binary.LittleEndian.Uint32(cm.Data[i:])))
				f, err := pin.GetFd(c.tid, fd)
				if err != nil {
					if errors.Is(err, unix.EBADF) {
						return fail(kernelErr(unix.EBADF, "bad fd in SCM_RIGHTS"))
					}
					return fail(&refusal{errno: pin.Errno(err), why: "taking a descriptor passed with SCM_RIGHTS", err: err})
				}
				fds = append(fds, f)
				mine = append(mine, int(f.Fd()))
			}
			out = append(out, unix.UnixRights(mine...)...)
		case cm.Header.Level == unix.SOL_SOCKET && cm.Header.Type == unix.SCM_CREDENTIALS:
			if err := c.credentials(cm.Data); err != nil {
				return fail(err)
			}
			*creds = true
			out = append(out, cmsg(cm.Header.Level, cm.Header.Type, cm.Data)...)
		default:
			if what, ok := routingCmsg(cm.Header.Level, cm.Header.Type); ok {
				return fail(&refusal{errno: unix.EPERM, why: what + " would send the datagram past its judged destination"})
			}
			out = append(out, cmsg(cm.Header.Level, cm.Header.Type, cm.Data)...)
		}
	}
	return out, fds, nil
}

// credentials checks SCM_CREDENTIALS the target sends. The kernel checks
// them against whoever sends: permwrap, which can send them only when it
// may name any process (root: pin.CanClaimUcred). So they are checked here
// as the kernel would check them for the target — its own pid, one of its
// ids, or its capabilities — and the kernel's EPERM is its answer when
// they are not its to send.
func (c *sendCall) credentials(data []byte) error {
	if len(data) < unix.SizeofUcred {
		return kernelErr(unix.EINVAL, "short SCM_CREDENTIALS")
	}
	u := pin.Ucred{Pid: int32(binary.LittleEndian.Uint32(data)), UID: binary.LittleEndian.Uint32(data[4:]), GID: binary.LittleEndian.Uint32(data[8:])}
	switch err := pin.CheckUcred(c.tid, u); {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EINVAL):
		return kernelErr(pin.Errno(err), "SCM_CREDENTIALS that are not the sender's")
	case errors.Is(err, pin.ErrForeignNamespace):
		return &refusal{errno: unix.EPERM, why: "SCM_CREDENTIALS from another user or pid namespace, which permwrap cannot translate", err: err}
	case err != nil:
		return &refusal{errno: pin.Errno(err), why: "reading the sender's credentials", err: err}
	}
	if !pin.CanClaimUcred() {
		return &refusal{errno: unix.EPERM, why: "SCM_CREDENTIALS: permwrap sends on the process's behalf, and only a permwrap running as root may send another process's credentials"}
	}
	return nil
}

// cmsg encodes one control message.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	binary.LittleEndian.PutUint64(b[0:], uint64(unix.CmsgLen(len(data))))
	binary.LittleEndian.PutUint32(b[8:], uint32(level))
	binary.LittleEndian.PutUint32(b[12:], uint32(typ))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

// judge: the first message's destination decides the call. For
// sendmmsg, the messages after it that the policy allows outright are
// sent with it, up to the first that is not: the call returns how many
// were sent, as when the kernel stops at a failing message, and the
// program's next call (which starts at that message) is judged on it.
func (c *sendCall) judge(p *engine.Policy) verdict {
	c.allowed = make([]bool, len(c.msgs))
	if len(c.msgs) == 0 {
		return verdict{result: allowUnchecked(""), access: c.name, quiet: true}
	}
	first := c.msgs[0].t.judge(p, c.name)
	c.asked = 0
	for i := 1; i < len(c.msgs); i++ {
		v := c.msgs[i].t.judge(p, c.name)
		if v.result.Action != engine.Allow {
			break
		}
		c.allowed[i] = true
		if first.quiet && !v.quiet {
			first = v // logged under the first destination judged
		}
	}
	return first
}

// perform sends the messages, in order: the first (the one judged) and,
// for sendmmsg, those after it the policy allowed outright, up to the
// first it did not. A send on a blocking socket is first tried without
// waiting (MSG_DONTWAIT, which changes nothing when there is room); only
// one that would wait is finished off the receiving pool, blocking as the
// target's own call would have.
func (c *sendCall) perform(s *supervisor, id uint64, _ *notify.Quiet) (changed bool) {
	c.done.Store(true)
	st := &sendState{valid: func() bool { return s.l.IDValid(id) == nil }}
	if n, err, wait := c.sendFrom(st, false); !wait {
		c.finish(s, id, n, err)
		return
	}
	go func() {
		n, err, _ := c.sendFrom(st, true)
		c.finish(s, id, n, err)
	}()
	return false
}

func (c *sendCall) finish(s *supervisor, id uint64, n int, err error) {
	defer c.release()
	if err != nil {
		s.respondErr(id, errnoOf(err))
		return
	}
	s.respondVal(id, int64(n))
}

// sendState is how far a send has got.
type sendState struct {
	next  int // the message being sent
	off   int // bytes of it already sent (a stream's partial send)
	sent  int // sendmmsg: messages sent
	valid func() bool
}

// sendFrom sends from where st stands. With mayBlock false it never
// waits: wait reports that it stopped where the send would have to (the
// caller goes on off the pool). It answers the byte count of sendto and
// sendmsg, or sendmmsg's count of messages, each message's msg_len
// written back into the target's memory while it still waits in the call
// (st.valid); an error after some messages were sent ends sendmmsg with
// the count, as the kernel does.
func (c *sendCall) sendFrom(st *sendState, mayBlock bool) (result int, err error, wait bool) {
	for st.next < len(c.msgs) {
		i := st.next
		if i > 0 && !c.allowed[i] {
			break
		}
		m := &c.msgs[i]
		n, err, wouldBlock := c.sendPart(m, st.off, mayBlock)
		st.off += n
		if wouldBlock {
			return 0, nil, true
		}
		if err != nil {
			if c.mmsg && st.sent > 0 {
				return st.sent, nil, false
			}
			return 0, err, false
		}
		if !c.mmsg {
			return st.off, nil, false
		}
		if !st.valid() || notify.WriteUint32(c.tid, m.mlen, uint32(st.off)) != nil {
			return st.sent + 1, nil, false
		}
		st.sent++
		st.next, st.off = i+1, 0
	}
	return st.sent, nil, false
}

// sendPart sends what is left of one message from off: the whole
// datagram, or the rest of a stream's data (control messages go with its
// first byte, as the kernel attaches them). Without mayBlock it never
// waits: a call that may wait is sent with MSG_DONTWAIT, and one that
// could not finish on a blocking socket reports wouldBlock (a TCP Fast
// Open send, whose connect must not be made non-blocking, always does).
// Whether the socket is blocking is asked only then: most sends never
// need to know.
func (c *sendCall) sendPart(m *sendMsg, off int, mayBlock bool) (n int, err error, wouldBlock bool) {
	snd := m.snd
	if off > 0 {
		snd = pin.Send{Data: m.snd.Data[off:], Flags: m.snd.Flags &^ unix.MSG_FASTOPEN}
	}
	tryOnly := !mayBlock && c.flags&unix.MSG_DONTWAIT == 0
	if tryOnly {
		if snd.Flags&unix.MSG_FASTOPEN != 0 {
			if nb, err := c.h.Nonblocking(); err != nil || !nb {
				return 0, nil, true
			}
			tryOnly = false // a non-blocking socket: sent as it is
		} else {
			snd.Flags |= unix.MSG_DONTWAIT
		}
	}
	if c.msg || off > 0 {
		n, err = c.h.Sendmsg(&snd)
	} else {
		n, err = c.h.Sendto(&snd)
	}
	if !tryOnly {
		return n, err, false
	}
	partial := err == nil && c.si.Type == unix.SOCK_STREAM && n < len(snd.Data)
	if !errors.Is(err, unix.EAGAIN) && !partial {
		return n, err, false
	}
	if nb, ferr := c.h.Nonblocking(); ferr == nil && nb {
		return n, err, false // the target's own socket would not have waited either
	}
	return n, nil, true
}

func (c *sendCall) release() {
	c.h.Close()
	for i := range c.msgs {
		c.msgs[i].release()
	}
}

func (c *sendCall) close() {
	if c.take() {
		c.release()
	}
}
