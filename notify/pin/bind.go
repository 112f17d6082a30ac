package pin

import (
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
// filesystem identity, as the kernel would have created it. Every other
// address is bound as given.
func (h *Handle) Bind(addr []byte, at *Resolved, umask uint32) error {
	if at == nil {
		return asCred(h.cred, func() error { return rawBind(h.fd(), addr) })
	}
	if at.Dir == nil || at.Name == "" {
		return unix.EINVAL
	}
	if len(at.Name)+1 > len(unix.RawSockaddrUnix{}.Path) {
		return unix.ENAMETOOLONG
	}
	// The name is bound relative to a working directory, and umask applies
	// to the new inode: both belong to the whole process in Go, so do it on
	// a thread of its own with a private fs_struct (unshare(CLONE_FS)),
	// which is never returned to the runtime's pool (the goroutine ends
	// locked, and the runtime retires the thread).
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- func() error {
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
		}()
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
