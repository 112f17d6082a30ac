package notify

// Raw seccomp(2) and listener ioctls. x/sys has the constants but no
// structs and no wrappers; all of permwrap's unsafe for them is here.

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Kernel uapi structs (include/uapi/linux/seccomp.h); sizes are checked
// against SECCOMP_GET_NOTIF_SIZES by the probe and tests.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32 // -errno, or 0
	Flags uint32
}

type seccompNotifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

type seccompNotifSizes struct {
	Notif     uint16
	NotifResp uint16
	Data      uint16
}

const (
	sizeofSeccompNotif     = unsafe.Sizeof(seccompNotif{})
	sizeofSeccompNotifResp = unsafe.Sizeof(seccompNotifResp{})
	sizeofSeccompData      = unsafe.Sizeof(seccompData{})
)

// sysSeccompSetFilter is seccomp(SECCOMP_SET_MODE_FILTER, flags, prog).
// With NEW_LISTENER the result is the listener fd.
func sysSeccompSetFilter(flags uintptr, insns []unix.SockFilter) (int, error) {
	prog := unix.SockFprog{Len: uint16(len(insns)), Filter: &insns[0]}
	// RawSyscall: between this call and the caller's return nothing may
	// reschedule onto a path that makes a notified syscall.
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// sysSeccompProbeFlags passes flags with a NULL program: the kernel
// validates the flags before it copies the program, so EFAULT means the
// flags are known, EINVAL that they are not, and nothing is installed.
func sysSeccompProbeFlags(flags uintptr) error {
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, 0)
	if errno == 0 {
		return nil
	}
	return errno
}

func sysSeccompActionAvail(action uint32) error {
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	if errno != 0 {
		return errno
	}
	return nil
}

func sysSeccompNotifSizes() (seccompNotifSizes, error) {
	var s seccompNotifSizes
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&s)))
	if errno != 0 {
		return s, errno
	}
	return s, nil
}

// The ioctls block (RECV, ADDFD with SEND), so they use Syscall, which
// lets the Go scheduler hand the P to another thread.

func ioctlNotifRecv(fd int, n *seccompNotif) error {
	*n = seccompNotif{} // the kernel refuses a non-zeroed struct
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(n)))
	if errno != 0 {
		return errno
	}
	return nil
}

func ioctlNotifSend(fd int, r *seccompNotifResp) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(r)))
	if errno != 0 {
		return errno
	}
	return nil
}

func ioctlNotifIDValid(fd int, id uint64) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id)))
	if errno != 0 {
		return errno
	}
	return nil
}

func ioctlNotifAddfd(fd int, a *seccompNotifAddfd) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_ADDFD, uintptr(unsafe.Pointer(a)))
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// ioctlNotifSetFlags passes the flags as the argument value, not a pointer.
func ioctlNotifSetFlags(fd int, flags uint64) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, uintptr(flags))
	if errno != 0 {
		return errno
	}
	return nil
}

// ppoll is ppoll(2). blind: made through RawSyscall, so the Go scheduler
// is not told the goroutine blocks (Listener.SetBlindWait); a signal (the
// runtime's preemption, the garbage collector's) interrupts it with
// EINTR. A non-nil mask is the thread's signal mask for the wait alone
// (Quiet). (unix.Ppoll passes a sigset size of 0, which the kernel
// refuses with EINVAL when a mask is given.)
func ppoll(fds []unix.PollFd, timeoutMs int, mask *unix.Sigset_t, blind bool) (int, error) {
	if len(fds) == 0 {
		return 0, unix.EINVAL
	}
	var ts *unix.Timespec
	if timeoutMs >= 0 {
		t := unix.NsecToTimespec(int64(timeoutMs) * int64(time.Millisecond))
		ts = &t
	}
	var size uintptr
	if mask != nil {
		size = kernelSigsetSize
	}
	call := unix.Syscall6
	if blind {
		call = unix.RawSyscall6
	}
	n, _, errno := call(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)), uintptr(unsafe.Pointer(ts)), uintptr(unsafe.Pointer(mask)), size, 0)
	if errno != 0 {
		return int(n), errno
	}
	return int(n), nil
}

// kernelSigsetSize is the kernel's sigset_t on x86_64 (64 signals), the
// size ppoll(2) insists on; unix.Sigset_t is glibc's, larger, and holds
// it in its first word.
const kernelSigsetSize = 8
