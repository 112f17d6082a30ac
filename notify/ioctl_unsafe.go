package notify

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IoctlSetattr performs a target's attribute-changing ioctl (one of
// NotifiedIoctls) on its file f (from GetFd), with arg the argument
// struct as read once from the target's memory, under the target's
// filesystem identity c.
func IoctlSetattr(f *os.File, cmd uint64, arg []byte, c *Cred) error {
	if len(arg) == 0 {
		return unix.EFAULT
	}
	return rsvAs(c, func() error {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), uintptr(cmd), uintptr(unsafe.Pointer(&arg[0])))
		if e != 0 {
			return e
		}
		return nil
	})
}

// IoctlArgSize is how many bytes of argument a notified ioctl takes.
func IoctlArgSize(cmd uint64) int {
	switch cmd {
	case unix.FS_IOC_SETFLAGS:
		return 4 // the kernel reads an int, despite the _IOW(long) encoding
	case FS_IOC_FSSETXATTR:
		return sizeofFsxattr
	}
	return 0
}
