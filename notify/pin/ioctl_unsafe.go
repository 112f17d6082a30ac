package pin

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ioctlPtr is ioctl(fd, cmd, &arg[0]); arg is not empty.
func ioctlPtr(fd int, cmd uint64, arg []byte) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(cmd), uintptr(unsafe.Pointer(&arg[0])))
	if e != 0 {
		return e
	}
	return nil
}
