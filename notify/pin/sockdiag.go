package pin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Unix sockets a process bound: which file a bound socket is reachable
// at, asked of the kernel (NETLINK_SOCK_DIAG, UDIAG_SHOW_VFS) rather
// than read back from the path, where another file may have been renamed
// in since the bind.

// BoundUnix is a bound Unix socket and the file it is bound to.
type BoundUnix struct {
	// Cookie is the kernel's id for the socket, never reused while the
	// system runs.
	Cookie uint64
	// Ino is the socket's own inode (sockfs), for the kernel's lookup.
	Ino uint32
	// File is the socket file's device and inode, as stat reports them.
	File FileID
}

// ErrNoSockDiag: the kernel cannot answer (no unix_diag support).
var ErrNoSockDiag = errors.New("pin: unix socket diagnostics (NETLINK_SOCK_DIAG) unavailable")

// BoundFile asks the kernel which file h's socket is bound to. ok is
// false for a socket bound to no file (unbound, abstract).
func (h *Handle) BoundFile() (b BoundUnix, ok bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(h.fd(), &st); err != nil {
		return b, false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK || st.Ino > 0xffffffff {
		return b, false, unix.ENOTSOCK
	}
	return unixDiag(uint32(st.Ino), [2]uint32{^uint32(0), ^uint32(0)})
}

// StillBound reports whether the socket b still exists (the same socket:
// its cookie) and is still bound to b.File.
func StillBound(b BoundUnix) (bool, error) {
	now, ok, err := unixDiag(b.Ino, [2]uint32{uint32(b.Cookie), uint32(b.Cookie >> 32)})
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil || !ok {
		return false, err
	}
	return now.Cookie == b.Cookie && now.File == b.File, nil
}

// UnixReceiver reports the socket bound to the socket file f that a
// connect or a send to it would reach: a listening socket, or a
// datagram socket (a dump of the sockets in those states). A connection a listener
// accepted carries its listener's file too, and is passed over; so is a
// stream socket bound but not listening (a connect is refused). ok is
// false when no socket would receive.
func UnixReceiver(f FileID) (r Receiver, ok bool, err error) {
	err = unixDump(udiagShowVFS|udiagShowName|udiagShowUID, receiverStates, func(s Receiver) bool {
		if s.File == f && receives(s) {
			r, ok = s, true
		}
		return !ok
	})
	if err != nil {
		return Receiver{}, false, err
	}
	return r, ok, nil
}

// AbstractReceiver reports the socket bound to the abstract name (the
// bytes after the leading NUL, compared exactly) that a connect or a
// send from a socket of type typ would reach: the kernel keeps one
// abstract namespace a socket type (a stream and a datagram socket may
// hold the same name), and, as UnixReceiver, takes a listening socket
// or a datagram socket.
func AbstractReceiver(name string, typ int) (r Receiver, ok bool, err error) {
	err = unixDump(udiagShowName|udiagShowUID, receiverStates, func(s Receiver) bool {
		if s.Abstract && s.Name == name && s.Type == typ && receives(s) {
			r, ok = s, true
		}
		return !ok
	})
	if err != nil {
		return Receiver{}, false, err
	}
	return r, ok, nil
}

// receives: a Unix socket that takes connections or datagrams at its
// address: listening, or a datagram socket connected to nobody (one
// connected to a peer takes that peer's datagrams only: the kernel
// answers another sender EPERM, unix_may_send).
func receives(s Receiver) bool {
	return s.Listening || s.Type == unix.SOCK_DGRAM && s.State == tcpClose
}

// States of a dump (udiag_states, a mask of TCP_* states): every
// socket, or only those that may receive (receives), which leaves
// connected streams — most of a desktop's Unix sockets — out of the
// answer.
const (
	tcpClose       = 7 // TCP_CLOSE: an unconnected Unix socket
	anyState       = 0xffffffff
	receiverStates = 1<<tcpListen | 1<<tcpClose
)

// unixDump asks for the Unix sockets of the namespace in states (a
// mask), with what show says, and calls each until it returns false.
// The dump is read to its end either way (the netlink socket is closed
// after).
func unixDump(show, states uint32, each func(Receiver) bool) error {
	s, err := takeDiagSock()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoSockDiag, err)
	}
	req := unixReq(unix.NLM_F_REQUEST|unix.NLM_F_DUMP, 0, show, states, [2]uint32{^uint32(0), ^uint32(0)})
	seq := diagSeq.Add(1)
	binary.LittleEndian.PutUint32(req[8:], seq)
	err = dumpFrom(s, req, seq, each)
	if err != nil {
		unix.Close(s) // the rest of the dump may be waiting in it
		return err
	}
	putDiagSock(s)
	return nil
}

// dumpFrom sends a dump request on s and reads the dump to its end.
func dumpFrom(s int, req []byte, seq uint32, each func(Receiver) bool) error {
	if err := unix.Sendto(s, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("%w: %v", ErrNoSockDiag, err)
	}
	buf := make([]byte, 32<<10)
	more := true
	for {
		n, _, err := unix.Recvfrom(s, buf, unix.MSG_TRUNC)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return fmt.Errorf("%w: %v", ErrNoSockDiag, err)
		case n > len(buf):
			return fmt.Errorf("%w: a dump part of %d bytes", ErrNoSockDiag, n)
		case n >= sizeofNlmsghdr && binary.LittleEndian.Uint32(buf[8:]) != seq:
			return fmt.Errorf("%w: an answer to another request", ErrNoSockDiag)
		}
		done, err := unixDumpPart(buf[:n], func(r Receiver) bool {
			if more {
				more = each(r)
			}
			return true
		})
		if done || err != nil {
			return err
		}
	}
}

// unixDumpPart reads one datagram of a dump: its messages, each given to
// each; done at NLMSG_DONE.
func unixDumpPart(m []byte, each func(Receiver) bool) (done bool, err error) {
	le := binary.LittleEndian
	for len(m) >= sizeofNlmsghdr {
		l := int(le.Uint32(m[0:]))
		if l < sizeofNlmsghdr || l > len(m) {
			return false, fmt.Errorf("%w: bad answer length", ErrNoSockDiag)
		}
		switch le.Uint16(m[4:]) {
		case unix.NLMSG_DONE:
			return true, nil
		case unix.NLMSG_ERROR:
			err := errorAnswer(m[sizeofNlmsghdr:l])
			if errors.Is(err, unix.ENOENT) {
				err = fmt.Errorf("%w: error answer", ErrNoSockDiag)
			}
			return false, err
		case sockDiagByFamily:
			r, _, err := parseUnixMsg(m[sizeofNlmsghdr:l])
			if err != nil {
				return false, err
			}
			if !each(r) {
				return false, nil
			}
		default:
			return false, fmt.Errorf("%w: answer of type %d", ErrNoSockDiag, le.Uint16(m[4:]))
		}
		m = m[min(len(m), (l+3)&^3):]
	}
	if len(m) != 0 {
		return false, fmt.Errorf("%w: trailing bytes", ErrNoSockDiag)
	}
	return false, nil
}

// Netlink and sock_diag wire constants (linux/sock_diag.h, unix_diag.h).
const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	udiagShowName    = 0x1
	udiagShowVFS     = 0x2
	udiagShowUID     = 0x40
	unixDiagName     = 0 // UNIX_DIAG_NAME attribute
	unixDiagVFS      = 1 // UNIX_DIAG_VFS attribute
	unixDiagUID      = 7 // UNIX_DIAG_UID attribute
	sizeofNlmsghdr   = 16
	sizeofUnixReq    = 24 // struct unix_diag_req
	sizeofUnixMsg    = 16 // struct unix_diag_msg
)

// unixDiag asks for one Unix socket by inode (and cookie, or none).
func unixDiag(ino uint32, cookie [2]uint32) (BoundUnix, bool, error) {
	buf := make([]byte, 4096)
	n, err := diagExchange(unixReq(unix.NLM_F_REQUEST, ino, udiagShowVFS, anyState, cookie), buf)
	if err != nil {
		return BoundUnix{}, false, err
	}
	return parseUnixDiag(buf[:n])
}

// unixReq is a unix_diag request (with what show says of each socket:
// UDIAG_SHOW_*), its sequence number left for the exchange to set.
func unixReq(flags uint16, ino, show, states uint32, cookie [2]uint32) []byte {
	le := binary.LittleEndian
	req := make([]byte, sizeofNlmsghdr+sizeofUnixReq)
	le.PutUint32(req[0:], uint32(len(req)))
	le.PutUint16(req[4:], sockDiagByFamily)
	le.PutUint16(req[6:], flags)
	r := req[sizeofNlmsghdr:]
	r[0] = unix.AF_UNIX // sdiag_family; sdiag_protocol and pad stay 0
	le.PutUint32(r[4:], states)
	le.PutUint32(r[8:], ino)
	le.PutUint32(r[12:], show)
	le.PutUint32(r[16:], cookie[0])
	le.PutUint32(r[20:], cookie[1])
	return req
}

// parseUnixDiag reads the answer to one request: an error, or one
// unix_diag_msg with its attributes; ok says it names a file.
func parseUnixDiag(m []byte) (BoundUnix, bool, error) {
	typ, body, err := oneMessage(m)
	if err != nil {
		return BoundUnix{}, false, err
	}
	switch typ {
	case unix.NLMSG_ERROR:
		return BoundUnix{}, false, errorAnswer(body)
	case sockDiagByFamily:
	default:
		return BoundUnix{}, false, fmt.Errorf("%w: answer of type %d", ErrNoSockDiag, typ)
	}
	r, hasFile, err := parseUnixMsg(body)
	if err != nil {
		return BoundUnix{}, false, err
	}
	return BoundUnix{Cookie: r.Cookie, Ino: r.Ino, File: r.File}, hasFile, nil
}

// parseUnixMsg reads a struct unix_diag_msg and the attributes asked
// for; hasFile says UNIX_DIAG_VFS was among them. An attribute whose
// length runs past the message is an error.
func parseUnixMsg(body []byte) (r Receiver, hasFile bool, err error) {
	le := binary.LittleEndian
	if len(body) < sizeofUnixMsg {
		return r, false, fmt.Errorf("%w: short message", ErrNoSockDiag)
	}
	r.Family, r.Type, r.State = int(body[0]), int(body[1]), body[2]
	r.Listening = r.State == tcpListen
	r.Ino = le.Uint32(body[4:])
	r.Cookie = uint64(le.Uint32(body[8:])) | uint64(le.Uint32(body[12:]))<<32
	for a := body[sizeofUnixMsg:]; len(a) >= 4; {
		alen := int(le.Uint16(a[0:]))
		atyp := le.Uint16(a[2:]) & 0x3fff // without NLA_F_NESTED, NLA_F_NET_BYTEORDER
		if alen < 4 || alen > len(a) {
			return Receiver{}, false, fmt.Errorf("%w: bad attribute length", ErrNoSockDiag)
		}
		v := a[4:alen]
		switch {
		case atyp == unixDiagVFS && len(v) >= 8:
			// struct unix_diag_vfs { u32 udiag_vfs_ino; u32 udiag_vfs_dev; },
			// the device as the kernel's own dev_t (major << 20 | minor),
			// not stat's encoding.
			kdev := le.Uint32(v[4:])
			r.File = FileID{Dev: unix.Mkdev(kdev>>20, kdev&0xfffff), Ino: uint64(le.Uint32(v[0:]))}
			hasFile = true
		case atyp == unixDiagName && len(v) > 0:
			// sun_path as bound: an abstract name after its NUL, a
			// path with its terminating NUL.
			if v[0] == 0 {
				r.Name, r.Abstract = string(v[1:]), true
			} else if i := bytes.IndexByte(v, 0); i >= 0 {
				r.Name = string(v[:i])
			} else {
				r.Name = string(v)
			}
		case atyp == unixDiagUID && len(v) >= 4:
			r.UID, r.HasUID = le.Uint32(v), true
		}
		a = a[min(len(a), (alen+3)&^3):]
	}
	return r, hasFile, nil
}

// ProbeSockDiag reports whether the kernel can say which file a bound
// Unix socket is at (for permwrap doctor): it binds a socket in dir and
// asks.
func ProbeSockDiag(dir string) error {
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(s), "probe")
	defer f.Close()
	path := dir + "/probe.sock"
	if err := unix.Bind(s, &unix.SockaddrUnix{Name: path}); err != nil {
		return err
	}
	defer os.Remove(path)
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return err
	}
	b, ok, err := (&Handle{f: f}).BoundFile()
	switch {
	case err != nil:
		return err
	case !ok || b.File != (FileID{Dev: st.Dev, Ino: st.Ino}):
		return fmt.Errorf("%w: the kernel named another file", ErrNoSockDiag)
	}
	return nil
}
