package pin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Receivers: for a connect or a send to a destination on this machine,
// the socket that would receive it, as the kernel itself chooses it
// (NETLINK_SOCK_DIAG), so the supervisor can tell a server the tree
// started from a service outside it. Every answer is of the network
// namespace of the calling thread (the supervisor's): a target that
// moved to a namespace of its own (compare Handle.NetnsCookie with
// OwnNetnsCookie) reaches other sockets than these. docs/kernel.md,
// "Which socket receives", has the kernel facts measured.

// Receiver is the socket that would receive a connection or a datagram.
type Receiver struct {
	// Cookie is the kernel's id for the socket, never reused while the
	// system runs (what Handle.Cookie reads of a socket the tree holds).
	Cookie uint64
	// Ino is the socket's sockfs inode: /proc/PID/fd/N of a holder
	// reads "socket:[Ino]" (Holders).
	Ino uint32
	// Family is AF_INET, AF_INET6 or AF_UNIX: the socket's own (a
	// dual-stack AF_INET6 listener receives IPv4 connections).
	Family int
	// Type is SOCK_STREAM, SOCK_DGRAM or SOCK_SEQPACKET.
	Type int
	// State is the kernel's state (TCP_* numbering, Unix sockets too);
	// Listening is State == TCP_LISTEN.
	State     uint8
	Listening bool
	// Local is an Internet socket's own address and port, as bound
	// (0.0.0.0 or :: for a wildcard).
	Local netip.AddrPort
	// Name is a Unix socket's address as bound: a path, or an abstract
	// name (Abstract, without its leading NUL). Empty when the kernel
	// did not say.
	Name     string
	Abstract bool
	// File is a path-bound Unix socket's file (device and inode, as
	// stat reports them).
	File FileID
	// UID is the socket's owner (its creator's fsuid in the socket's
	// user namespace, as the kernel reports it); HasUID says whether
	// the kernel did.
	UID    uint32
	HasUID bool
}

// String is a person's view: the family's address and the socket.
func (r Receiver) String() string {
	var where string
	switch {
	case r.Family != unix.AF_UNIX:
		where = r.Local.String()
	case r.Abstract:
		where = fmt.Sprintf("@%q", r.Name)
	default:
		where = r.Name
	}
	s := fmt.Sprintf("%s socket:[%d] cookie %d", where, r.Ino, r.Cookie)
	if r.Listening {
		s += " listening"
	}
	return s
}

const tcpListen = 10 // TCP_LISTEN, in inet_diag and unix_diag alike

// Wire sizes (linux/inet_diag.h).
const (
	sizeofInetReq = 56 // struct inet_diag_req_v2
	sizeofInetMsg = 72 // struct inet_diag_msg
	// loopbackIfindex is LOOPBACK_IFINDEX: every network namespace's
	// lo, the device a packet to a local address arrives on.
	loopbackIfindex = 1
)

// InetReceiver reports the socket a SYN (proto IPPROTO_TCP) or a
// datagram (IPPROTO_UDP) to dst would be delivered to now: the kernel's
// own lookup (sock_diag's exact request, no dump), with its wildcard
// binds, dual-stack IPv6 listeners for IPv4 destinations, and one member
// of a SO_REUSEPORT group. ok is false when no socket would receive it
// (a connect would be refused). dst must be an address of this machine:
// the lookup does not check that, and a wildcard listener matches any
// address. The unspecified address is read as the kernel routes a
// connect to it: 0.0.0.0 as 127.0.0.1, :: as ::1. A v4-mapped address
// is its IPv4 address.
//
// The request names a peer no socket can have (the unspecified address,
// port 0), so the lookup's first step (established connections, and for
// UDP the connected sockets) finds nothing and it goes on to the
// listeners: for UDP that means a socket connected to one peer is never
// the answer — it takes only that peer's datagrams.
func InetReceiver(proto int, dst netip.AddrPort) (Receiver, bool, error) {
	if proto != unix.IPPROTO_TCP && proto != unix.IPPROTO_UDP {
		return Receiver{}, false, fmt.Errorf("pin: InetReceiver: protocol %d", proto)
	}
	a := dst.Addr().Unmap()
	switch {
	case !a.IsValid():
		return Receiver{}, false, fmt.Errorf("pin: InetReceiver: no address")
	case a == netip.IPv4Unspecified():
		a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	case a == netip.IPv6Unspecified():
		a = netip.IPv6Loopback()
	}
	req := inetExactReq(proto, a, dst.Port(), loopbackIfindex)
	b := make([]byte, 2048)
	n, err := diagExchange(req, b)
	if err != nil {
		return Receiver{}, false, err
	}
	r, ok, err := parseInetAnswer(b[:n])
	if ok && proto == unix.IPPROTO_UDP {
		r.Type = unix.SOCK_DGRAM
	}
	return r, ok, err
}

// inetExactReq is an exact inet_diag request for the socket that would
// receive from the unspecified address, port 0, at dst:port. The two
// protocols read the request's addresses the other way round (v6.18):
// inet_diag_find_one_icsk calls inet_lookup(saddr = idiag_dst, sport =
// idiag_dport, daddr = idiag_src, dport = idiag_sport), the order a
// socket's own entry is reported in (src is the socket's side), while
// udp_dump_one calls __udp4_lib_lookup(saddr = idiag_src, sport =
// idiag_sport, daddr = idiag_dst, dport = idiag_dport) — "swapped for
// historical reasons".
func inetExactReq(proto int, a netip.Addr, port uint16, ifindex uint32) []byte {
	le := binary.LittleEndian
	req := make([]byte, sizeofNlmsghdr+sizeofInetReq)
	le.PutUint32(req[0:], uint32(len(req)))
	le.PutUint16(req[4:], sockDiagByFamily)
	le.PutUint16(req[6:], unix.NLM_F_REQUEST)
	le.PutUint32(req[8:], 1)
	r := req[sizeofNlmsghdr:]
	r[0] = unix.AF_INET6
	if a.Is4() {
		r[0] = unix.AF_INET
	}
	r[1] = byte(proto)
	le.PutUint32(r[4:], 0xffffffff) // idiag_states: not read by an exact request
	id := r[8:]
	// The socket's side: sport and src for TCP, dport and dst for UDP.
	portAt, addrAt := 0, 4
	if proto == unix.IPPROTO_UDP {
		portAt, addrAt = 2, 20
	}
	binary.BigEndian.PutUint16(id[portAt:], port)
	if a.Is4() {
		v := a.As4()
		copy(id[addrAt:], v[:])
	} else {
		v := a.As16()
		copy(id[addrAt:], v[:])
	}
	le.PutUint32(id[36:], ifindex)
	le.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	le.PutUint32(id[44:], 0xffffffff)
	return req
}

// diagExchange sends one sock_diag request and reads its one answer
// into b (an exact request is answered by a single message: the socket,
// or an error). The netlink socket is kept for the next exchange (a
// socket and its close are half the cost of a lookup): a few are kept,
// and one is closed, not kept, after any error or an answer to another
// request, so no stale answer can wait in a kept one.
func diagExchange(req, b []byte) (int, error) {
	s, err := takeDiagSock()
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNoSockDiag, err)
	}
	seq := diagSeq.Add(1)
	binary.LittleEndian.PutUint32(req[8:], seq)
	n, err := exchange(s, req, b)
	if err != nil || n < sizeofNlmsghdr || binary.LittleEndian.Uint32(b[8:]) != seq {
		unix.Close(s)
		if err == nil {
			err = fmt.Errorf("%w: an answer to another request", ErrNoSockDiag)
		}
		return 0, err
	}
	putDiagSock(s)
	return n, nil
}

func exchange(s int, req, b []byte) (int, error) {
	if err := unix.Sendto(s, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNoSockDiag, err)
	}
	for {
		n, _, err := unix.Recvfrom(s, b, unix.MSG_TRUNC)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, fmt.Errorf("%w: %v", ErrNoSockDiag, err)
		case n > len(b):
			return 0, fmt.Errorf("%w: an answer of %d bytes", ErrNoSockDiag, n)
		}
		return n, nil
	}
}

var (
	diagSeq   atomic.Uint32
	diagSocks = make(chan int, 4) // kept NETLINK_SOCK_DIAG sockets
)

func takeDiagSock() (int, error) {
	select {
	case s := <-diagSocks:
		return s, nil
	default:
		return unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	}
}

func putDiagSock(s int) {
	select {
	case diagSocks <- s:
	default:
		unix.Close(s)
	}
}

// parseInetAnswer reads the answer to an exact inet_diag request: the
// socket, or ENOENT (none: ok false), or another error.
func parseInetAnswer(m []byte) (Receiver, bool, error) {
	typ, body, err := oneMessage(m)
	if err != nil {
		return Receiver{}, false, err
	}
	if typ == unix.NLMSG_ERROR {
		err := errorAnswer(body)
		if errors.Is(err, unix.ENOENT) {
			return Receiver{}, false, nil
		}
		return Receiver{}, false, err
	}
	if typ != sockDiagByFamily {
		return Receiver{}, false, fmt.Errorf("%w: answer of type %d", ErrNoSockDiag, typ)
	}
	r, err := parseInetMsg(body)
	return r, err == nil, err
}

// oneMessage is the first netlink message of m: its type and body.
func oneMessage(m []byte) (uint16, []byte, error) {
	le := binary.LittleEndian
	if len(m) < sizeofNlmsghdr {
		return 0, nil, fmt.Errorf("%w: short answer", ErrNoSockDiag)
	}
	l := int(le.Uint32(m[0:]))
	if l < sizeofNlmsghdr || l > len(m) {
		return 0, nil, fmt.Errorf("%w: bad answer length", ErrNoSockDiag)
	}
	return le.Uint16(m[4:]), m[sizeofNlmsghdr:l], nil
}

// errorAnswer is the errno of an NLMSG_ERROR body (ENOENT for an
// acknowledgement, which no request here asks for).
func errorAnswer(body []byte) error {
	if len(body) < 4 {
		return fmt.Errorf("%w: short error", ErrNoSockDiag)
	}
	if e := int32(binary.LittleEndian.Uint32(body)); e < 0 {
		return unix.Errno(-e)
	}
	return unix.ENOENT
}

// parseInetMsg reads a struct inet_diag_msg.
func parseInetMsg(b []byte) (Receiver, error) {
	var r Receiver
	if len(b) < sizeofInetMsg {
		return r, fmt.Errorf("%w: short inet message", ErrNoSockDiag)
	}
	le := binary.LittleEndian
	r.Family, r.State = int(b[0]), b[1]
	r.Listening = r.State == tcpListen
	r.Type = unix.SOCK_STREAM
	port := binary.BigEndian.Uint16(b[4:])
	switch r.Family {
	case unix.AF_INET:
		r.Local = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[8:12])), port)
	case unix.AF_INET6:
		r.Local = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), port)
	default:
		return Receiver{}, fmt.Errorf("%w: family %d", ErrNoSockDiag, r.Family)
	}
	r.Cookie = uint64(le.Uint32(b[44:])) | uint64(le.Uint32(b[48:]))<<32
	r.UID, r.HasUID = le.Uint32(b[64:]), true
	r.Ino = le.Uint32(b[68:])
	return r, nil
}

// Cookie is the socket's cookie (SO_COOKIE), the id Receiver.Cookie
// reports: the supervisor records it for every socket the tree binds or
// listens on.
func (h *Handle) Cookie() (uint64, error) {
	return unix.GetsockoptUint64(h.fd(), unix.SOL_SOCKET, unix.SO_COOKIE)
}
