package pin

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Sockets: the supervisor performs a target's connect and sends with a
// destination on the target's own socket (a Handle from OpenHandle with no
// want: the same open socket, duplicated with pidfd_getfd), with the
// destination exactly as it was read once and judged. The kernel never
// reads the target's sockaddr again, so a second thread rewriting it
// after the check changes nothing. Only what the socket is (its domain,
// type, protocol, O_NONBLOCK) is read here; nothing is set on it: no
// option, no flag — the target's socket stays exactly as the target left
// it, and the kernel's answers (EINPROGRESS, EISCONN, ECONNREFUSED,
// EAGAIN) are the target's answers.

// OpenSocket duplicates thread tid's fd for a socket operation performed
// on its behalf, and returns the thread's process id. The Handle acts
// with the thread's identity: a supervisor running as root must not lend
// its capabilities to a target that has none (a control message such as
// SO_MARK, a privileged source port are judged by the kernel against the
// caller).
func OpenSocket(tid, fd int) (*Handle, int, error) {
	if fd < 0 {
		return nil, 0, unix.EBADF
	}
	st, pidfd, err := quickStatus(tid)
	if err != nil {
		return nil, 0, err
	}
	if pidfd < 0 {
		f, err := GetFd(tid, fd)
		if err != nil {
			return nil, 0, err
		}
		return &Handle{f: f, cred: st.credp()}, st.tgid, nil
	}
	defer unix.Close(pidfd)
	nfd, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		if err == unix.EBADF {
			return nil, 0, unix.EBADF
		}
		return nil, 0, fmt.Errorf("pin: pidfd_getfd(%d, %d): %w", tid, fd, err)
	}
	f := os.NewFile(uintptr(nfd), "fd "+strconv.Itoa(fd)+" of "+strconv.Itoa(tid))
	return &Handle{f: f, cred: st.credp()}, st.tgid, nil
}

// SockInfo is what kind of socket an fd is: fixed when the socket was
// made.
type SockInfo struct {
	Domain, Type int
	// Protocol is read for datagram sockets only (ICMP "ping" sockets
	// are SOCK_DGRAM); 0 for the others.
	Protocol int
}

// Sock reads what the Handle's socket is: ENOTSOCK when it is not one, as
// the kernel answers connect or sendmsg on another file.
func (h *Handle) Sock() (SockInfo, error) {
	var si SockInfo
	var err error
	if si.Type, err = unix.GetsockoptInt(h.fd(), unix.SOL_SOCKET, unix.SO_TYPE); err != nil {
		return si, err // ENOTSOCK for a file that is not a socket
	}
	if si.Domain, err = unix.GetsockoptInt(h.fd(), unix.SOL_SOCKET, unix.SO_DOMAIN); err != nil {
		return si, fmt.Errorf("pin: SO_DOMAIN: %w", err)
	}
	if si.Type == unix.SOCK_DGRAM {
		if si.Protocol, err = unix.GetsockoptInt(h.fd(), unix.SOL_SOCKET, unix.SO_PROTOCOL); err != nil {
			return si, fmt.Errorf("pin: SO_PROTOCOL: %w", err)
		}
	}
	return si, nil
}

// Nonblocking reports whether the open socket has O_NONBLOCK now (a
// connect returns EINPROGRESS, a send EAGAIN, instead of waiting). It is
// the open file's flag, which the target can change at any time.
func (h *Handle) Nonblocking() (bool, error) {
	fl, err := unix.FcntlInt(h.f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		return false, fmt.Errorf("pin: F_GETFL: %w", err)
	}
	return fl&unix.O_NONBLOCK != 0, nil
}

// Connect is connect(2) on the target's socket with addr, the sockaddr's
// bytes as the target passed them (its length included). It returns what
// the kernel answers, EINPROGRESS included; it never waits for or reads the
// outcome of a non-blocking connect (that is the target's to collect with
// poll and SO_ERROR). An interrupted blocking connect is restarted, as
// SA_RESTART would: a connect to a socket already connecting waits for
// that attempt.
func (h *Handle) Connect(addr []byte) error {
	return asCred(h.cred, func() error { return h.connect(addr) })
}

// Listen makes the target's socket listen, as listen(2) would for it
// (the same socket: a listen on a duplicate is the socket's). A socket
// not yet bound is bound to a free port or abstract name first, as the
// kernel does for any listen.
func (h *Handle) Listen(backlog int) error { return unix.Listen(h.fd(), backlog) }

func (h *Handle) connect(addr []byte) error {
	return retry(func() error { return rawConnect(h.fd(), addr) })
}

// ConnectUnix connects the target's socket to the Unix socket at sock, a
// resolution (FollowLast, as connect resolves) of the path the target
// named: through the pinned inode (/proc/self/fd/N of sock.Object), so a
// file swapped in at that path after it was judged is not the one reached.
// The kernel's checks on the way there (write permission on the socket
// file) are made with the target's filesystem identity.
func (h *Handle) ConnectUnix(sock *Resolved) error {
	addr, err := pinnedSockaddr(sock)
	if err != nil {
		return err
	}
	return asCred(sock.Cred, func() error { return h.connect(addr) })
}

// pinnedSockaddr is an AF_UNIX sockaddr naming the pinned socket inode.
func pinnedSockaddr(sock *Resolved) ([]byte, error) {
	if sock == nil || sock.Object == nil {
		return nil, fmt.Errorf("pin: no pinned socket: %w", unix.EBADF)
	}
	if !sock.Exists {
		return nil, unix.ENOENT
	}
	if sock.Stat.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, unix.ECONNREFUSED // what the kernel answers for a file that is not a socket
	}
	p := "/proc/self/fd/" + strconv.Itoa(int(sock.Object.Fd()))
	b := make([]byte, 2+len(p))
	b[0], b[1] = byte(unix.AF_UNIX&0xff), byte(unix.AF_UNIX>>8)
	copy(b[2:], p)
	return b, nil
}

// Send is one datagram (or a stretch of a stream) for Sendto or Sendmsg:
// the data read once from the target, the destination as it passed it,
// and for Sendmsg its control messages, with any file descriptors in them
// already the supervisor's own duplicates.
type Send struct {
	// Name is the destination sockaddr as the target passed it; HasName
	// says the target's pointer was not NULL (sendto with a non-NULL
	// pointer and length 0 is not the same call as one with NULL).
	Name    []byte
	HasName bool
	// Unix, when set, is the resolved AF_UNIX path destination: the
	// datagram goes to that pinned inode, with the target's identity,
	// instead of Name.
	Unix    *Resolved
	Data    []byte
	Control []byte
	Flags   int
	// Ucred, when set, is the sending process's credentials, attached as
	// SCM_CREDENTIALS when the send is made with the supervisor's own
	// identity: what the kernel attaches for a receiver with SO_PASSCRED
	// is the sender's, which would be permwrap's (its pid) otherwise.
	// Only a supervisor that CanClaimUcred may set it.
	Ucred *Ucred
}

// Sendto is sendto(2) on the target's socket.
func (h *Handle) Sendto(s *Send) (int, error) {
	return h.send(s, false)
}

// Sendmsg is sendmsg(2) on the target's socket, with one iovec holding
// s.Data.
func (h *Handle) Sendmsg(s *Send) (int, error) {
	return h.send(s, true)
}

func (h *Handle) send(s *Send, msg bool) (int, error) {
	name, has := s.Name, s.HasName
	cred := h.cred
	if s.Unix != nil {
		var err error
		if name, err = pinnedSockaddr(s.Unix); err != nil {
			return 0, err
		}
		has, cred = true, s.Unix.Cred
	}
	control := s.Control
	if msg && s.Ucred != nil && !switches(cred) {
		control = append(append([]byte(nil), control...), unix.UnixCredentials(&unix.Ucred{Pid: s.Ucred.Pid, Uid: s.Ucred.UID, Gid: s.Ucred.GID})...)
	}
	var n int
	err := asCred(cred, func() error {
		return retry(func() error {
			var err error
			if msg {
				n, err = rawSendmsg(h.fd(), name, s.Data, control, s.Flags)
			} else {
				n, err = rawSendto(h.fd(), s.Data, s.Flags, name, has)
			}
			return err
		})
	})
	return n, err
}

// Local is the socket's own address (getsockname).
func (h *Handle) Local() (unix.Sockaddr, error) { return unix.Getsockname(h.fd()) }

// File is the Handle's duplicate of the target's file, for passing it on
// (SCM_RIGHTS); it stays the Handle's to close.
func (h *Handle) File() *os.File { return h.f }

// Peek reads the datagram the target's next receive on h would get,
// without taking it from the queue and without waiting (MSG_PEEK |
// MSG_DONTWAIT), into buf, and its source address. ok is false when
// there is none, or when the socket keeps a peek offset of its own
// (SO_PEEK_OFF: a peek would move it).
func (h *Handle) Peek(buf []byte) (n int, from netip.AddrPort, ok bool, err error) {
	if off, err := unix.GetsockoptInt(h.fd(), unix.SOL_SOCKET, unix.SO_PEEK_OFF); err == nil && off >= 0 {
		return 0, from, false, nil
	}
	n, sa, err := unix.Recvfrom(h.fd(), buf, unix.MSG_PEEK|unix.MSG_DONTWAIT|unix.MSG_TRUNC)
	if errors.Is(err, unix.EAGAIN) {
		return 0, from, false, nil
	}
	if err != nil {
		return 0, from, false, err
	}
	from, ok = InetAddrPort(sa)
	if !ok {
		return 0, from, false, nil
	}
	return min(n, len(buf)), from, true, nil
}

// InetAddrPort is an IPv4 or IPv6 socket address as an AddrPort; ok is
// false for any other family.
func InetAddrPort(sa unix.Sockaddr) (ap netip.AddrPort, ok bool) {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port)), true
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port)), true
	}
	return ap, false
}

// NetnsCookie is the identity of the network namespace the socket lives
// in (SO_NETNS_COOKIE, Linux 5.14).
func (h *Handle) NetnsCookie() (uint64, error) {
	return unix.GetsockoptUint64(h.fd(), unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
}

// OwnNetnsCookie is the identity of the caller's network namespace, as
// NetnsCookie gives it for a socket.
func OwnNetnsCookie() (uint64, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		// An IPv6-only or IPv4-less host still has Unix sockets.
		if fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return 0, err
		}
	}
	defer unix.Close(fd)
	return unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
}
