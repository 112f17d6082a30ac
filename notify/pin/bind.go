package pin

import (
	"errors"
	"runtime"

	"golang.org/x/sys/unix"
)

// Bind performs a target's bind(2) on its socket h (the same open socket,
// from OpenHandle with no want), with addr the raw sockaddr it passed. A bind is
// emulated rather than continued because the kernel would read the
// sockaddr again: a second thread could turn an address that was checked
// into a pathname in a denied directory.
//
// For an AF_UNIX pathname address, at is the ParentOnly resolution of the
// path and the socket file is created exactly there (in the pinned
// directory at.Dir, under the name at.Name), with the target's umask and
// filesystem identity, as the kernel would have created it; cwd is the
// target's working directory (a Resolved with its Object) when the path
// is relative, else nil. Every other address is bound as given.
//
// The kernel keeps the path a socket was bound with as its address
// (getsockname, a peer's getpeername and accept, recvfrom, /proc/net/unix
// show it), and a client connects to that address. So the bind is made
// with the target's own bytes, resolved as the target would resolve them
// (from its cwd when relative), not with the pinned directory's name. The
// pin still decides where the file may appear: the binding thread is
// confined by Landlock to creating socket files beneath at.Dir, and the
// file created is checked to be at.Dir/at.Name afterwards (BoundAt), so
// a path component swapped meanwhile fails the bind or is caught.
// Without Landlock, or when the target's root is not the supervisor's
// (an absolute path would mean another file), the name is bound relative
// to the pinned directory as before: the file is where it should be, and
// its address is its last component.
func (h *Handle) Bind(addr []byte, at *Resolved, cwd *Resolved, umask uint32) error {
	if at == nil {
		return asCred(h.cred, func() error { return rawBind(h.fd(), addr) })
	}
	if at.Dir == nil || at.Name == "" {
		return unix.EINVAL
	}
	exact := len(addr) > 2 && addr[2] != '/' && cwd != nil && cwd.Object != nil ||
		len(addr) > 2 && addr[2] == '/' && likeSupervisor(at.Tgid, "root")
	if exact {
		err := onOwnThread(func() error {
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				return err
			}
			if addr[2] != '/' {
				if err := unix.Fchdir(int(cwd.Object.Fd())); err != nil {
					return err
				}
			}
			unix.Umask(int(umask & 0o777))
			if err := landlockMakeSockBeneath(int(at.Dir.Fd())); err != nil {
				return errNoConfinement{err}
			}
			return asCred(at.Cred, func() error { return rawBind(h.fd(), addr) })
		})
		var nc errNoConfinement
		if !errors.As(err, &nc) {
			if err != nil {
				return err
			}
			return h.BoundAt(at)
		}
	}
	if len(at.Name)+1 > len(unix.RawSockaddrUnix{}.Path) {
		return unix.ENAMETOOLONG
	}
	return onOwnThread(func() error {
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			return err
		}
		if err := unix.Fchdir(int(at.Dir.Fd())); err != nil {
			return err
		}
		unix.Umask(int(umask & 0o777))
		rel := make([]byte, 2+len(at.Name)+1)
		rel[0], rel[1] = byte(unix.AF_UNIX&0xff), byte(unix.AF_UNIX>>8)
		copy(rel[2:], at.Name)
		return asCred(at.Cred, func() error { return rawBind(h.fd(), rel[:len(rel)-1]) })
	})
}

// errNoConfinement: the binding thread could not be confined (no
// Landlock): bind as the fallback does.
type errNoConfinement struct{ err error }

func (e errNoConfinement) Error() string { return "pin: no Landlock for the bind: " + e.err.Error() }

// ErrBindMoved: a socket was bound, but its file is not where the bind
// was judged (a path component was swapped between the check and the
// bind, within the directory that was judged). The socket is bound
// nonetheless; the caller must not let the process go on as if it was
// refused.
var ErrBindMoved = errors.New("pin: the socket file was created elsewhere than judged")

// BoundAt checks that h's socket is bound to the file at.Dir/at.Name (the
// kernel's answer, NETLINK_SOCK_DIAG, against an lstat through the pinned
// directory). Without socket diagnostics, a socket file at that name is
// taken as the one.
func (h *Handle) BoundAt(at *Resolved) error {
	var st unix.Stat_t
	if err := unix.Fstatat(int(at.Dir.Fd()), at.Name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return ErrBindMoved
	}
	b, ok, err := h.BoundFile()
	switch {
	case errors.Is(err, ErrNoSockDiag):
		return nil
	case err != nil:
		return err
	case !ok || b.File != (FileID{Dev: st.Dev, Ino: st.Ino}):
		return ErrBindMoved
	}
	return nil
}

// onOwnThread runs fn on a thread of its own, which is never returned to
// the runtime's pool (the goroutine ends locked, and the runtime retires
// the thread): fn may change what belongs to the thread alone (its
// fs_struct after unshare(CLONE_FS), its Landlock domain, no_new_privs).
func onOwnThread(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- fn()
	}()
	return <-done
}

// SockaddrUnixPath returns the pathname of an AF_UNIX sockaddr, ok=false
// for any other address (another family, an abstract name, autobind).
func SockaddrUnixPath(addr []byte) (path string, ok bool, err error) {
	if len(addr) < 2 {
		return "", false, unix.EINVAL
	}
	family := uint16(addr[0]) | uint16(addr[1])<<8
	if family != unix.AF_UNIX {
		return "", false, nil
	}
	name := addr[2:]
	if len(name) > len(unix.RawSockaddrUnix{}.Path) {
		return "", false, unix.EINVAL
	}
	if len(name) == 0 || name[0] == 0 {
		return "", false, nil // autobind or abstract: no filesystem object
	}
	for i, c := range name {
		if c == 0 {
			name = name[:i]
			break
		}
	}
	return string(name), true, nil
}
