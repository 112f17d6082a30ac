package pin

import (
	"encoding/binary"
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

// landlockMakeSockBeneath confines the calling thread (only it: a
// thread's Landlock domain is its own) so that it can create a socket
// file only beneath the directory dirfd. Other accesses are not handled
// by the ruleset, so they stay as they were. It needs Landlock (ABI 1);
// the errno says why not.
func landlockMakeSockBeneath(dirfd int) error {
	ruleset := struct{ handledAccessFS uint64 }{unix.LANDLOCK_ACCESS_FS_MAKE_SOCK}
	r, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&ruleset)), unsafe.Sizeof(ruleset), 0)
	if e != 0 {
		return e
	}
	fd := int(r)
	defer unix.Close(fd)
	// struct landlock_path_beneath_attr is packed: 8 + 4 bytes.
	var beneath [12]byte
	binary.NativeEndian.PutUint64(beneath[:8], unix.LANDLOCK_ACCESS_FS_MAKE_SOCK)
	binary.NativeEndian.PutUint32(beneath[8:], uint32(int32(dirfd)))
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(fd), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&beneath[0])), 0, 0, 0); e != 0 {
		return e
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); e != 0 {
		return e
	}
	return nil
}
