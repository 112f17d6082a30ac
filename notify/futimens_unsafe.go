package notify

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futimens is utimensat(fd, NULL, ts, 0): the times of the open file fd
// itself, with the kernel's own answers (EBADF for an O_PATH fd, which
// the AT_EMPTY_PATH spelling would accept). ts nil means now.
func Futimens(fd int, ts *[2]unix.Timespec) error {
	var p unsafe.Pointer
	if ts != nil {
		p = unsafe.Pointer(&ts[0])
	}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(p), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
