package pin

import (
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

// FileBound reports whether any Unix socket of this network namespace is
// bound to the socket file f (a dump of every Unix socket, with the file
// each is bound to). No socket can ever be bound to an existing file
// again (bind creates a new one), so a file nobody is bound to now stays
// unreachable: a connect to it is refused (ECONNREFUSED) by the kernel.
// A socket bound in another network namespace is not in the dump.
func FileBound(f FileID) (bool, error) {
	s, err := diagAsk(unix.NLM_F_REQUEST|unix.NLM_F_DUMP, 0, [2]uint32{^uint32(0), ^uint32(0)})
	if err != nil {
		return false, err
	}
	defer unix.Close(s)
	le := binary.LittleEndian
	buf := make([]byte, 32<<10)
	found := false
	for {
		n, _, err := unix.Recvfrom(s, buf, 0)
		if err != nil {
			return false, fmt.Errorf("%w: %v", ErrNoSockDiag, err)
		}
		for m := buf[:n]; len(m) >= sizeofNlmsghdr; {
			l := int(le.Uint32(m[0:]))
			if l < sizeofNlmsghdr || l > len(m) {
				return false, fmt.Errorf("%w: bad answer length", ErrNoSockDiag)
			}
			switch le.Uint16(m[4:]) {
			case unix.NLMSG_DONE:
				return found, nil
			case unix.NLMSG_ERROR:
				_, _, err := parseUnixDiag(m[:l])
				if err == nil {
					err = fmt.Errorf("%w: error answer", ErrNoSockDiag)
				}
				return false, err
			}
			if b, ok, err := parseUnixDiag(m[:l]); err != nil {
				return false, err
			} else if ok && b.File == f {
				found = true // read on to the end of the dump
			}
			m = m[min(len(m), (l+3)&^3):]
		}
	}
}

// Netlink and sock_diag wire constants (linux/sock_diag.h, unix_diag.h).
const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	udiagShowVFS     = 0x2
	unixDiagVFS      = 1 // UNIX_DIAG_VFS attribute
	sizeofNlmsghdr   = 16
	sizeofUnixReq    = 24 // struct unix_diag_req
	sizeofUnixMsg    = 16 // struct unix_diag_msg
)

// unixDiag asks for one Unix socket by inode (and cookie, or none).
func unixDiag(ino uint32, cookie [2]uint32) (BoundUnix, bool, error) {
	var b BoundUnix
	s, err := diagAsk(unix.NLM_F_REQUEST, ino, cookie)
	if err != nil {
		return b, false, err
	}
	defer unix.Close(s)
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(s, buf, 0)
	if err != nil {
		return b, false, fmt.Errorf("%w: %v", ErrNoSockDiag, err)
	}
	return parseUnixDiag(buf[:n])
}

// diagAsk sends one unix_diag request (with the file each socket is
// bound to) and returns the netlink socket to read the answer from.
func diagAsk(flags uint16, ino uint32, cookie [2]uint32) (int, error) {
	s, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return -1, fmt.Errorf("%w: %v", ErrNoSockDiag, err)
	}
	le := binary.LittleEndian
	req := make([]byte, sizeofNlmsghdr+sizeofUnixReq)
	le.PutUint32(req[0:], uint32(len(req)))
	le.PutUint16(req[4:], sockDiagByFamily)
	le.PutUint16(req[6:], flags)
	le.PutUint32(req[8:], 1) // seq
	r := req[sizeofNlmsghdr:]
	r[0] = unix.AF_UNIX             // sdiag_family; sdiag_protocol and pad stay 0
	le.PutUint32(r[4:], 0xffffffff) // udiag_states: any
	le.PutUint32(r[8:], ino)
	le.PutUint32(r[12:], udiagShowVFS)
	le.PutUint32(r[16:], cookie[0])
	le.PutUint32(r[20:], cookie[1])
	if err := unix.Sendto(s, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(s)
		return -1, fmt.Errorf("%w: %v", ErrNoSockDiag, err)
	}
	return s, nil
}

// parseUnixDiag reads the answer to one request: an error, or one
// unix_diag_msg with its attributes.
func parseUnixDiag(m []byte) (BoundUnix, bool, error) {
	var b BoundUnix
	le := binary.LittleEndian
	if len(m) < sizeofNlmsghdr {
		return b, false, fmt.Errorf("%w: short answer", ErrNoSockDiag)
	}
	l := int(le.Uint32(m[0:]))
	typ := le.Uint16(m[4:])
	if l < sizeofNlmsghdr || l > len(m) {
		return b, false, fmt.Errorf("%w: bad answer length", ErrNoSockDiag)
	}
	m = m[:l]
	switch typ {
	case unix.NLMSG_ERROR:
		if len(m) < sizeofNlmsghdr+4 {
			return b, false, fmt.Errorf("%w: short error", ErrNoSockDiag)
		}
		if e := int32(le.Uint32(m[sizeofNlmsghdr:])); e < 0 {
			return b, false, unix.Errno(-e)
		}
		return b, false, unix.ENOENT
	case sockDiagByFamily:
	default:
		return b, false, fmt.Errorf("%w: answer of type %d", ErrNoSockDiag, typ)
	}
	body := m[sizeofNlmsghdr:]
	if len(body) < sizeofUnixMsg {
		return b, false, fmt.Errorf("%w: short message", ErrNoSockDiag)
	}
	b.Ino = le.Uint32(body[4:])
	b.Cookie = uint64(le.Uint32(body[8:])) | uint64(le.Uint32(body[12:]))<<32
	for a := body[sizeofUnixMsg:]; len(a) >= 4; {
		alen := int(le.Uint16(a[0:]))
		atyp := le.Uint16(a[2:])
		if alen < 4 || alen > len(a) {
			break
		}
		if atyp == unixDiagVFS && alen >= 12 {
			// struct unix_diag_vfs { u32 udiag_vfs_ino; u32 udiag_vfs_dev; },
			// the device as the kernel's own dev_t (major << 20 | minor),
			// not stat's encoding.
			kdev := le.Uint32(a[8:])
			b.File = FileID{Dev: unix.Mkdev(kdev>>20, kdev&0xfffff), Ino: uint64(le.Uint32(a[4:]))}
			return b, true, nil
		}
		a = a[min(len(a), (alen+3)&^3):]
	}
	return b, false, nil
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
