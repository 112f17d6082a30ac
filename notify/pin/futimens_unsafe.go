package pin

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// futimens is utimensat(fd, NULL, ts, 0): the times of the open file fd
// itself. ts nil means now.
func futimens(fd int, ts *[2]unix.Timespec) error {
	var p unsafe.Pointer
	if ts != nil {
		p = unsafe.Pointer(&ts[0])
	}
	return retry(func() error {
		_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(p), 0, 0, 0)
		if e != 0 {
			return e
		}
		return nil
	})
}
