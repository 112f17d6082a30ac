package supervisor

import "golang.org/x/sys/unix"

// op is what a watched syscall does, independent of its calling
// convention (open vs openat vs openat2 are one op).
type op uint8

const (
	opOpen op = iota + 1
	opExec
	opUnlink // unlink, unlinkat without AT_REMOVEDIR
	opRmdir  // rmdir, unlinkat with AT_REMOVEDIR
	opRename
	opMkdir
	opMknod
	opLink
	opSymlink
	opTruncate
	opChmod
	opChown
	opUtimes
	opSetxattr
	opRemovexattr
	opBind        // bind(2): an AF_UNIX pathname creates a socket file
	opIoctl       // the attribute-changing ioctls (notify.NotifiedIoctls)
	opUnsupported // watched but not emulated: answered ENOSYS so callers fall back
)

var opNames = [...]string{"", "open", "exec", "unlink", "rmdir", "rename", "mkdir", "mknod", "link", "symlink", "truncate", "chmod", "chown", "utimes", "setxattr", "removexattr", "bind", "setattr", "unsupported"}

func (o op) String() string { return opNames[o] }

// argNone marks an absent argument position.
const argNone = -1

// sysDesc says where a syscall keeps its arguments. Path pairs are
// (dirfd argument, path argument); a dirfd of argNone means AT_FDCWD.
// A path argument of argNone with a dirfd means the call names an fd only
// (fchmod and friends).
type sysDesc struct {
	name string
	op   op

	dirfd, path   int // the (first) path
	dirfd2, path2 int // the second path (rename/link new name, symlink link path)
	flags         int // flags argument index, argNone if none
	mode          int // mode argument index
	// follow: whether the last component's symlink is followed when the
	// call has no flag saying otherwise.
	follow bool
	// fixedFlags are implied flags (creat is open with these).
	fixedFlags uint64
	// atFlags: the flags argument holds AT_* flags (AT_SYMLINK_NOFOLLOW,
	// AT_EMPTY_PATH, AT_SYMLINK_FOLLOW, AT_REMOVEDIR).
	atFlags bool
}

func d(name string, o op) sysDesc {
	return sysDesc{name: name, op: o, dirfd: argNone, path: argNone, dirfd2: argNone, path2: argNone, flags: argNone, mode: argNone}
}

// Syscall numbers libseccomp 2.5.4 / x/sys may not name.
const (
	sysFchmodat2     = 452
	sysSetxattrat    = 463
	sysRemovexattrat = 466
	sysFileSetattr   = 469
)

// watched describes every syscall the filter sends to the supervisor.
var watched = func() map[int32]sysDesc {
	m := map[int32]sysDesc{}
	set := func(nr int, s sysDesc) { m[int32(nr)] = s }

	s := d("open", opOpen)
	s.path, s.flags, s.mode, s.follow = 0, 1, 2, true
	set(unix.SYS_OPEN, s)
	s = d("openat", opOpen)
	s.dirfd, s.path, s.flags, s.mode, s.follow = 0, 1, 2, 3, true
	set(unix.SYS_OPENAT, s)
	s = d("openat2", opOpen) // flags, mode and resolve come from struct open_how (arg 2, size arg 3)
	s.dirfd, s.path, s.follow = 0, 1, true
	set(unix.SYS_OPENAT2, s)
	s = d("creat", opOpen)
	s.path, s.mode, s.follow = 0, 1, true
	s.fixedFlags = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
	set(unix.SYS_CREAT, s)

	s = d("execve", opExec)
	s.path, s.follow = 0, true
	set(unix.SYS_EXECVE, s)
	s = d("execveat", opExec)
	s.dirfd, s.path, s.flags, s.follow, s.atFlags = 0, 1, 4, true, true
	set(unix.SYS_EXECVEAT, s)

	s = d("unlink", opUnlink)
	s.path = 0
	set(unix.SYS_UNLINK, s)
	s = d("unlinkat", opUnlink) // AT_REMOVEDIR turns it into rmdir
	s.dirfd, s.path, s.flags, s.atFlags = 0, 1, 2, true
	set(unix.SYS_UNLINKAT, s)
	s = d("rmdir", opRmdir)
	s.path = 0
	set(unix.SYS_RMDIR, s)

	s = d("rename", opRename)
	s.path, s.path2 = 0, 1
	set(unix.SYS_RENAME, s)
	s = d("renameat", opRename)
	s.dirfd, s.path, s.dirfd2, s.path2 = 0, 1, 2, 3
	set(unix.SYS_RENAMEAT, s)
	s = d("renameat2", opRename)
	s.dirfd, s.path, s.dirfd2, s.path2, s.flags = 0, 1, 2, 3, 4
	set(unix.SYS_RENAMEAT2, s)

	s = d("mkdir", opMkdir)
	s.path, s.mode = 0, 1
	set(unix.SYS_MKDIR, s)
	s = d("mkdirat", opMkdir)
	s.dirfd, s.path, s.mode = 0, 1, 2
	set(unix.SYS_MKDIRAT, s)
	s = d("mknod", opMknod)
	s.path, s.mode = 0, 1 // dev is arg 2
	set(unix.SYS_MKNOD, s)
	s = d("mknodat", opMknod)
	s.dirfd, s.path, s.mode = 0, 1, 2 // dev is arg 3
	set(unix.SYS_MKNODAT, s)

	s = d("link", opLink)
	s.path, s.path2 = 0, 1
	set(unix.SYS_LINK, s)
	s = d("linkat", opLink)
	s.dirfd, s.path, s.dirfd2, s.path2, s.flags, s.atFlags = 0, 1, 2, 3, 4, true
	set(unix.SYS_LINKAT, s)
	s = d("symlink", opSymlink) // arg 0 is the link's content, not a path we resolve
	s.path2 = 1
	set(unix.SYS_SYMLINK, s)
	s = d("symlinkat", opSymlink)
	s.dirfd2, s.path2 = 1, 2
	set(unix.SYS_SYMLINKAT, s)

	s = d("truncate", opTruncate)
	s.path, s.follow = 0, true
	set(unix.SYS_TRUNCATE, s)

	s = d("chmod", opChmod)
	s.path, s.mode, s.follow = 0, 1, true
	set(unix.SYS_CHMOD, s)
	s = d("fchmodat", opChmod) // the syscall has no flags argument
	s.dirfd, s.path, s.mode, s.follow = 0, 1, 2, true
	set(unix.SYS_FCHMODAT, s)
	s = d("fchmodat2", opChmod)
	s.dirfd, s.path, s.mode, s.flags, s.follow, s.atFlags = 0, 1, 2, 3, true, true
	set(sysFchmodat2, s)
	s = d("fchmod", opChmod) // fd only
	s.dirfd, s.mode = 0, 1
	set(unix.SYS_FCHMOD, s)

	s = d("chown", opChown)
	s.path, s.follow = 0, true
	set(unix.SYS_CHOWN, s)
	s = d("lchown", opChown)
	s.path = 0
	set(unix.SYS_LCHOWN, s)
	s = d("fchownat", opChown)
	s.dirfd, s.path, s.flags, s.follow, s.atFlags = 0, 1, 4, true, true
	set(unix.SYS_FCHOWNAT, s)
	s = d("fchown", opChown)
	s.dirfd = 0
	set(unix.SYS_FCHOWN, s)

	s = d("utime", opUtimes)
	s.path, s.follow = 0, true
	set(unix.SYS_UTIME, s)
	s = d("utimes", opUtimes)
	s.path, s.follow = 0, true
	set(unix.SYS_UTIMES, s)
	s = d("futimesat", opUtimes)
	s.dirfd, s.path, s.follow = 0, 1, true
	set(unix.SYS_FUTIMESAT, s)
	s = d("utimensat", opUtimes) // a NULL path means the dirfd itself
	s.dirfd, s.path, s.flags, s.follow, s.atFlags = 0, 1, 3, true, true
	set(unix.SYS_UTIMENSAT, s)

	s = d("setxattr", opSetxattr)
	s.path, s.follow = 0, true
	set(unix.SYS_SETXATTR, s)
	s = d("lsetxattr", opSetxattr)
	s.path = 0
	set(unix.SYS_LSETXATTR, s)
	s = d("fsetxattr", opSetxattr)
	s.dirfd = 0
	set(unix.SYS_FSETXATTR, s)
	s = d("removexattr", opRemovexattr)
	s.path, s.follow = 0, true
	set(unix.SYS_REMOVEXATTR, s)
	s = d("lremovexattr", opRemovexattr)
	s.path = 0
	set(unix.SYS_LREMOVEXATTR, s)
	s = d("fremovexattr", opRemovexattr)
	s.dirfd = 0
	set(unix.SYS_FREMOVEXATTR, s)

	// The sockaddr (arg 1, length arg 2) is decoded by hand: only an
	// AF_UNIX pathname names a path.
	set(unix.SYS_BIND, d("bind", opBind))
	s = d("ioctl", opIoctl) // fd only; the filter passes only notify.NotifiedIoctls
	s.dirfd = 0
	set(unix.SYS_IOCTL, s)

	// Newer *at variants: callers fall back to the calls above on ENOSYS.
	set(sysSetxattrat, d("setxattrat", opUnsupported))
	set(sysRemovexattrat, d("removexattrat", opUnsupported))
	set(sysFileSetattr, d("file_setattr", opUnsupported))
	return m
}()
