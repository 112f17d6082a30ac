package pin

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Handle is one of a target's open files, duplicated into the supervisor
// (pidfd_getfd): the same open file description, so operations on it keep
// the kernel's own answers for that file (EBADF on an O_PATH fd, the
// socket's own state for bind), without any path being involved. Every
// operation runs with the filesystem identity the Handle was made with.
type Handle struct {
	f    *os.File
	cred *Cred
}

// OpenHandle duplicates thread tid's fd. When want is not nil, the fd must
// still be the file want was resolved to (an fd-only call resolves its fd
// with AllowEmpty): a dup2 onto that fd number since then is EBADF, and
// the Handle acts with want's credentials. With want nil it acts with the
// supervisor's own.
func OpenHandle(tid, fd int, want *Resolved) (*Handle, error) {
	f, err := GetFd(tid, fd)
	if err != nil {
		return nil, err
	}
	h := &Handle{f: f}
	if want == nil {
		return h, nil
	}
	var got unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &got); err != nil {
		f.Close()
		return nil, fmt.Errorf("pin: fstat fd %d of %d: %w", fd, tid, err)
	}
	if got.Dev != want.Stat.Dev || got.Ino != want.Stat.Ino {
		f.Close()
		return nil, unix.EBADF
	}
	h.cred = want.Cred
	return h, nil
}

// Close releases the supervisor's duplicate.
func (h *Handle) Close() error { return h.f.Close() }

func (h *Handle) fd() int { return int(h.f.Fd()) }

// Fchmod is fchmod(2) on the target's file.
func (h *Handle) Fchmod(mode uint32) error {
	return asCred(h.cred, func() error { return retry(func() error { return unix.Fchmod(h.fd(), mode&0o7777) }) })
}

// Fchown is fchown(2) on the target's file; -1 leaves an id alone.
func (h *Handle) Fchown(uid, gid int) error {
	return asCred(h.cred, func() error { return retry(func() error { return unix.Fchown(h.fd(), uid, gid) }) })
}

// Futimens is futimens(3) (utimensat(fd, NULL, ts, 0)) on the target's
// file: EBADF for an O_PATH fd, which the AT_EMPTY_PATH spelling would
// accept. ts nil means now.
func (h *Handle) Futimens(ts *[2]unix.Timespec) error {
	return asCred(h.cred, func() error { return futimens(h.fd(), ts) })
}

// Fsetxattr is fsetxattr(2) on the target's file.
func (h *Handle) Fsetxattr(name string, value []byte, flags int) error {
	return asCred(h.cred, func() error {
		return retry(func() error { return unix.Fsetxattr(h.fd(), name, value, flags) })
	})
}

// Fremovexattr is fremovexattr(2) on the target's file.
func (h *Handle) Fremovexattr(name string) error {
	return asCred(h.cred, func() error { return retry(func() error { return unix.Fremovexattr(h.fd(), name) }) })
}

// Ioctl performs an ioctl that takes a pointer to a struct, with arg the
// struct as read once from the target's memory.
func (h *Handle) Ioctl(cmd uint64, arg []byte) error {
	if len(arg) == 0 {
		return unix.EFAULT
	}
	return asCred(h.cred, func() error { return ioctlPtr(h.fd(), cmd, arg) })
}

// GetFd duplicates thread tid's open file fd into the supervisor
// (pidfd_getfd). PIDFD_THREAD lets a non-leader TID be named. A closed fd
// is EBADF, as the kernel would answer the target.
func GetFd(tid int, fd int) (*os.File, error) {
	if fd < 0 {
		return nil, unix.EBADF
	}
	pidfd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if err != nil {
		return nil, fmt.Errorf("pin: pidfd_open(%d): %w", tid, err)
	}
	defer unix.Close(pidfd)
	nfd, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		if err == unix.EBADF {
			return nil, unix.EBADF
		}
		return nil, fmt.Errorf("pin: pidfd_getfd(%d, %d): %w", tid, fd, err)
	}
	return os.NewFile(uintptr(nfd), "fd "+strconv.Itoa(fd)+" of "+strconv.Itoa(tid)), nil
}
