package pin

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawBind is bind(2) with a sockaddr given as bytes (any family).
func rawBind(fd int, addr []byte) error {
	if len(addr) == 0 {
		return unix.EINVAL
	}
	_, _, e := unix.Syscall(unix.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&addr[0])), uintptr(len(addr)))
	if e != 0 {
		return e
	}
	return nil
}
