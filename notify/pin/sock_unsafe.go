package pin

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// bytesPtr is the address of b's first byte, or 0 for an empty b.
func bytesPtr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// rawConnect is connect(2) with the sockaddr given as bytes (any family,
// any length, as the target gave it).
func rawConnect(fd int, addr []byte) error {
	var one byte // a valid pointer for a zero length, as the target's was
	p := bytesPtr(addr)
	if p == nil {
		p = unsafe.Pointer(&one)
	}
	_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(p), uintptr(len(addr)))
	if e != 0 {
		return e
	}
	return nil
}

// rawSendto is sendto(2); has says the destination pointer is not NULL
// (with a zero-length name it points at a byte nobody reads).
func rawSendto(fd int, data []byte, flags int, name []byte, has bool) (int, error) {
	var one byte
	var np unsafe.Pointer
	if has {
		np = bytesPtr(name)
		if np == nil {
			np = unsafe.Pointer(&one)
		}
	}
	n, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(bytesPtr(data)), uintptr(len(data)),
		uintptr(flags), uintptr(np), uintptr(len(name)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// rawSendmsg is sendmsg(2) with one iovec.
func rawSendmsg(fd int, name, data, control []byte, flags int) (int, error) {
	var msg unix.Msghdr
	var iov unix.Iovec
	if len(data) > 0 {
		iov.Base = &data[0]
		iov.SetLen(len(data))
		msg.Iov = &iov
		msg.SetIovlen(1)
	}
	if len(name) > 0 {
		msg.Name = &name[0]
		msg.Namelen = uint32(len(name))
	}
	if len(control) > 0 {
		msg.Control = &control[0]
		msg.SetControllen(len(control))
	}
	n, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
