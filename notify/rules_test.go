package notify

import "golang.org/x/sys/unix"

// The rules the kernel tests in this package build their filter from: a
// fixed stand-in for the supervisor's syscall table (which this package
// must not know), with the same shapes (unconditional, conditional on a
// register, refused in BPF).

// testNotified are notified on every call.
var testNotified = []int32{
	unix.SYS_OPEN, unix.SYS_OPENAT, unix.SYS_OPENAT2, unix.SYS_CREAT,
	unix.SYS_EXECVE, unix.SYS_EXECVEAT,
	unix.SYS_UNLINK, unix.SYS_UNLINKAT,
	unix.SYS_RENAME, unix.SYS_RENAMEAT, unix.SYS_RENAMEAT2,
	unix.SYS_MKDIR, unix.SYS_MKDIRAT, unix.SYS_RMDIR,
	unix.SYS_LINK, unix.SYS_LINKAT, unix.SYS_SYMLINK, unix.SYS_SYMLINKAT,
	unix.SYS_MKNOD, unix.SYS_MKNODAT,
	unix.SYS_TRUNCATE,
	unix.SYS_CHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2, unix.SYS_FCHMOD,
	unix.SYS_CHOWN, unix.SYS_LCHOWN, unix.SYS_FCHOWN, unix.SYS_FCHOWNAT,
	unix.SYS_UTIME, unix.SYS_UTIMES, unix.SYS_FUTIMESAT, unix.SYS_UTIMENSAT,
	unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR,
	unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR,
	unix.SYS_BIND,
}

// oTmpfileBit is __O_TMPFILE; O_TMPFILE also sets O_DIRECTORY.
const oTmpfileBit = 0x400000

// testRules is the test filter; skipReadOnly lets plain read-only
// open/openat through in BPF.
func testRules(skipReadOnly bool) []Rule {
	var rs []Rule
	for _, nr := range testNotified {
		r := Rule{Nr: nr}
		if skipReadOnly && (nr == unix.SYS_OPEN || nr == unix.SYS_OPENAT) {
			arg := uint(1)
			if nr == unix.SYS_OPENAT {
				arg = 2
			}
			for _, mode := range []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_ACCMODE} {
				r.When = append(r.When, Match{{Arg: arg, Op: CmpMaskedEqual, Mask: unix.O_ACCMODE, Value: mode}})
			}
			for _, bit := range []uint64{unix.O_CREAT, unix.O_TRUNC, oTmpfileBit, unix.O_PATH} {
				r.When = append(r.When, Match{{Arg: arg, Op: CmpMaskedEqual, Mask: bit, Value: bit}})
			}
		}
		rs = append(rs, r)
	}
	rs = append(rs,
		Rule{Nr: unix.SYS_IOCTL, When: []Match{{{Arg: 1, Op: CmpMaskedEqual, Mask: 0xffffffff, Value: unix.FS_IOC_SETFLAGS}}}},
		Rule{Nr: unix.SYS_ARCH_PRCTL, When: []Match{{{Arg: 0, Op: CmpMaskedEqual, Mask: 0xffffffff, Value: 0x1002}}}},
		Rule{Nr: unix.SYS_SETXATTRAT, Errno: unix.ENOSYS},
	)
	return rs
}
