package supervisor

import (
	"golang.org/x/sys/unix"
	"slices"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// The syscall table: one row for every syscall permwrap knows, the single
// source of truth for
//   - the BPF filter: a row is notified (always, or when its `when`
//     conditions hold), refused in BPF (`refuse`: every call, or the calls
//     its conditions name), or must never be notified (`never`);
//     filterOptions derives the filter from the rows, and notify
//     applies them without knowing why;
//   - decoding: the row's decoder reads every argument once into a typed
//     call (calls.go), whose judge is pure and whose perform uses only
//     what was decoded;
//   - the receiving role (supervisor/receive): whether the worker that
//     received a call keeps the role while it handles it (`role`);
//   - the cwd cache (notify/pin/cwd.go): which calls change a thread's
//     working directory (`cwd`);
//   - the round-trip benchmark tool (internal/roundtrip, through
//     served.go): where an open's arguments are (`open`).
//
// Adding a syscall is one row here, its decoder (decode.go) and call
// (calls.go) if it is new, and a test; nothing else names a syscall
// (TestNoSyscallOutsideTheTable). docs/architecture.md walks through it.

// argNone marks an absent argument position (AT_FDCWD for a dirfd).
const argNone = -1

// sysRow is one syscall permwrap knows.
type sysRow struct {
	nr   int32
	name string
	// when narrows the notification to calls whose arguments match (nil:
	// every call). It is told which read-only opens the policy lets the
	// filter leave to Landlock (filterChoice).
	when func(filterChoice) []notify.Match
	// decode reads the call; nil for a row only refused or never notified.
	decode decodeFunc
	// refuse are the calls of this syscall the filter itself fails, each
	// class with its errno: a refusal without conditions refuses every
	// call (a side door; a call permwrap does not emulate, with ENOSYS),
	// one with conditions those that match (a socket family permwrap does
	// not judge). The rest are notified when a decoder is set, else
	// allowed.
	refuse []bpfRefusal
	// never says why the syscall must never be notified (notify refuses a
	// filter that would).
	never string
	// role: how the receiving worker treats the call (keepRole when 0).
	role roleUse
	// cwd: the call changes the calling thread's working directory or
	// umask, and is announced to the cwd cache (pin.CwdChanging) before
	// it runs.
	cwd bool
	// open: where an open's arguments are, for the round-trip benchmark
	// tool's emulation (OpenArgs).
	open *openArgs
}

// roleUse is what the worker that received a call does with the
// receiving role while it handles the call (receive.Role).
type roleUse uint8

const (
	// keepRole: the worker keeps the role; the target's next call is
	// received by the worker that answered this one.
	keepRole roleUse = iota
	// passRole: the role is handed on first (an exec: the new image's
	// first calls and its parent's may come at once).
	passRole
	// execStop: the verification stop right after an exec, which reads
	// /proc while the exec poller runs: the role is handed on while the
	// exec is still to be verified, kept once it is (a bare CONTINUE).
	execStop
)

// openArgs are the argument positions of an open (argNone: absent): what
// its decoder reads, and what the benchmark's emulation reads (OpenArgs).
type openArgs struct{ dirfd, path, flags, mode int }

var (
	openPositions   = openArgs{dirfd: argNone, path: 0, flags: 1, mode: 2}
	openatPositions = openArgs{dirfd: 0, path: 1, flags: 2, mode: 3}
	creatPositions  = openArgs{dirfd: argNone, path: 0, flags: argNone, mode: 1} // flags: O_CREAT|O_WRONLY|O_TRUNC
)

// bpfRefusal is a class of calls refused in BPF: errno when any of when
// holds (every call when when is empty), and why (for docs/kernel.md,
// docs/network.md and the tests).
type bpfRefusal struct {
	errno unix.Errno
	when  []notify.Match
	why   string
}

// refuseAll refuses every call of the syscall in BPF.
func refuseAll(errno unix.Errno, why string) []bpfRefusal {
	return []bpfRefusal{{errno: errno, why: why}}
}

// refusesAll reports whether the filter refuses every call of the row,
// and with which errno.
func (r *sysRow) refusesAll() (unix.Errno, bool) {
	for _, rf := range r.refuse {
		if len(rf.when) == 0 {
			return rf.errno, true
		}
	}
	return 0, false
}

// fsIocFssetxattr is _IOW('X', 32, struct fsxattr), which x/sys lacks.
const (
	fsIocFssetxattr = 0x401c5820
	sizeofFsxattr   = 28
)

// archSetFS is arch_prctl's ARCH_SET_FS.
const archSetFS = 0x1002

var syscalls = []sysRow{
	// Opens: every open is a read and/or write intent.
	{nr: unix.SYS_OPEN, name: "open", when: readOnlyOpensSkippable(openPositions.flags), decode: decodeOpen(openPositions), open: &openPositions},
	{nr: unix.SYS_OPENAT, name: "openat", when: readOnlyOpensSkippable(openatPositions.flags), decode: decodeOpen(openatPositions), open: &openatPositions},
	{nr: unix.SYS_OPENAT2, name: "openat2", decode: decodeOpenat2},
	{nr: unix.SYS_CREAT, name: "creat", decode: decodeCreat, open: &creatPositions},

	// Exec: judged, continued, verified (execverify.go).
	{nr: unix.SYS_EXECVE, name: "execve", decode: decodeExec(argNone, 0, 1, argNone), role: passRole},
	{nr: unix.SYS_EXECVEAT, name: "execveat", decode: decodeExec(0, 1, 2, 4), role: passRole},
	// The stop right after an exec where verification happens: every libc
	// and the Go runtime set the thread pointer before main (a register
	// compare; nothing is read).
	{nr: unix.SYS_ARCH_PRCTL, name: "arch_prctl", when: always(intEquals(0, archSetFS)), decode: decodeExecStop, role: execStop},

	// unshare(CLONE_NEWNS) gives the thread a copy of the mount tree as its
	// root: the resolution cache must check that thread's root again
	// (pin.RootChanged). Continued: the flags are in a register and the
	// call was allowed before; only the cache learns of it.
	{nr: unix.SYS_UNSHARE, name: "unshare", when: always(intHasBits(0, unix.CLONE_NEWNS)), decode: decodeUnshare, cwd: true},

	// chdir and fchdir change the cwd the resolution cache keeps per thread
	// (pin.CwdChanging, notify/pin/cwd.go). Continued: nothing is judged
	// (changing directory reads nothing); only the cache learns of it.
	{nr: unix.SYS_CHDIR, name: "chdir", decode: decodeAnnounced, cwd: true},
	{nr: unix.SYS_FCHDIR, name: "fchdir", decode: decodeAnnounced, cwd: true},
	// umask changes the umask the same cache keeps per thread for the
	// calls that create (pin.Thread.Umask). Continued, like chdir.
	{nr: unix.SYS_UMASK, name: "umask", decode: decodeAnnounced, cwd: true},

	// Names: removal, renaming, creation, links.
	{nr: unix.SYS_UNLINK, name: "unlink", decode: decodeUnlink(argNone, 0, argNone)},
	{nr: unix.SYS_UNLINKAT, name: "unlinkat", decode: decodeUnlink(0, 1, 2)},
	{nr: unix.SYS_RMDIR, name: "rmdir", decode: decodeRmdir},
	{nr: unix.SYS_RENAME, name: "rename", decode: decodeRename(argNone, 0, argNone, 1, argNone)},
	{nr: unix.SYS_RENAMEAT, name: "renameat", decode: decodeRename(0, 1, 2, 3, argNone)},
	{nr: unix.SYS_RENAMEAT2, name: "renameat2", decode: decodeRename(0, 1, 2, 3, 4)},
	{nr: unix.SYS_MKDIR, name: "mkdir", decode: decodeMkdir(argNone, 0, 1)},
	{nr: unix.SYS_MKDIRAT, name: "mkdirat", decode: decodeMkdir(0, 1, 2)},
	{nr: unix.SYS_MKNOD, name: "mknod", decode: decodeMknod(argNone, 0, 1, 2)},
	{nr: unix.SYS_MKNODAT, name: "mknodat", decode: decodeMknod(0, 1, 2, 3)},
	{nr: unix.SYS_LINK, name: "link", decode: decodeLink(argNone, 0, argNone, 1, argNone)},
	{nr: unix.SYS_LINKAT, name: "linkat", decode: decodeLink(0, 1, 2, 3, 4)},
	{nr: unix.SYS_SYMLINK, name: "symlink", decode: decodeSymlink(0, argNone, 1)},
	{nr: unix.SYS_SYMLINKAT, name: "symlinkat", decode: decodeSymlink(0, 1, 2)},
	// An AF_UNIX pathname creates a socket file; the sockaddr is in
	// memory, so every bind is read once and performed by permwrap.
	{nr: unix.SYS_BIND, name: "bind", decode: decodeBind},

	// Contents and metadata by path (Landlock never restricts metadata).
	{nr: unix.SYS_TRUNCATE, name: "truncate", decode: decodeTruncate},
	{nr: unix.SYS_CHMOD, name: "chmod", decode: decodeChmod(argNone, 0, 1, argNone)},
	{nr: unix.SYS_FCHMODAT, name: "fchmodat", decode: decodeChmod(0, 1, 2, argNone)}, // no flags argument
	{nr: unix.SYS_FCHMODAT2, name: "fchmodat2", decode: decodeChmod(0, 1, 2, 3)},
	{nr: unix.SYS_CHOWN, name: "chown", decode: decodeChown(argNone, 0, 1, argNone, true)},
	{nr: unix.SYS_LCHOWN, name: "lchown", decode: decodeChown(argNone, 0, 1, argNone, false)},
	{nr: unix.SYS_FCHOWNAT, name: "fchownat", decode: decodeChown(0, 1, 2, 4, true)},
	{nr: unix.SYS_UTIME, name: "utime", decode: decodeUtimes(argNone, 0, 1, argNone, timesUtimbuf)},
	{nr: unix.SYS_UTIMES, name: "utimes", decode: decodeUtimes(argNone, 0, 1, argNone, timesTimeval)},
	{nr: unix.SYS_FUTIMESAT, name: "futimesat", decode: decodeUtimes(0, 1, 2, argNone, timesTimeval)},
	{nr: unix.SYS_UTIMENSAT, name: "utimensat", decode: decodeUtimes(0, 1, 2, 3, timesTimespec)}, // a NULL path means the dirfd itself
	{nr: unix.SYS_SETXATTR, name: "setxattr", decode: decodeSetxattr(0, true)},
	{nr: unix.SYS_LSETXATTR, name: "lsetxattr", decode: decodeSetxattr(0, false)},
	{nr: unix.SYS_REMOVEXATTR, name: "removexattr", decode: decodeRemovexattr(0, true)},
	{nr: unix.SYS_LREMOVEXATTR, name: "lremovexattr", decode: decodeRemovexattr(0, false)},

	// Metadata by fd: the target's own open file.
	{nr: unix.SYS_FCHMOD, name: "fchmod", decode: decodeFchmod},
	{nr: unix.SYS_FCHOWN, name: "fchown", decode: decodeFchown},
	{nr: unix.SYS_FSETXATTR, name: "fsetxattr", decode: decodeSetxattr(argNone, false)},
	{nr: unix.SYS_FREMOVEXATTR, name: "fremovexattr", decode: decodeRemovexattr(argNone, false)},
	{nr: unix.SYS_IOCTL, name: "ioctl", when: always(ioctlWatched()...), decode: decodeIoctl, refuse: ioctlRefusals},

	// Other processes. Landlock scopes signals and ptrace to the sandbox,
	// but not resource limits, priorities, CPU affinity or I/O priority:
	// a sandboxed process could starve permwrap itself (a file limit makes
	// its /proc reads fail) or any other process of the user. A call on
	// the caller itself (pid 0) is left alone in BPF; any other is checked
	// to name a process of the sandboxed tree (process.go).
	{nr: unix.SYS_PRLIMIT64, name: "prlimit64", when: always(intNotZero(0), coreLimitSet(1, 2)), decode: decodePrlimit},
	{nr: unix.SYS_SETRLIMIT, name: "setrlimit", when: always(intEquals(0, unix.RLIMIT_CORE)), decode: decodeSetrlimit},
	{nr: unix.SYS_SETPRIORITY, name: "setpriority", when: always(intNotZero(0), intNotZero(1)), decode: decodeWhich(prioProcess, prioPgrp)},
	{nr: unix.SYS_IOPRIO_SET, name: "ioprio_set", when: always(intNot(0, ioprioWhoProcess), intNotZero(1)), decode: decodeWhich(ioprioWhoProcess, ioprioWhoPgrp)},
	{nr: unix.SYS_SCHED_SETAFFINITY, name: "sched_setaffinity", when: always(intNotZero(0)), decode: decodeOtherPid},
	{nr: unix.SYS_SCHED_SETSCHEDULER, name: "sched_setscheduler", when: always(intNotZero(0)), decode: decodeOtherPid},
	{nr: unix.SYS_SCHED_SETPARAM, name: "sched_setparam", when: always(intNotZero(0)), decode: decodeOtherPid},
	{nr: unix.SYS_SCHED_SETATTR, name: "sched_setattr", when: always(intNotZero(0)), decode: decodeOtherPid},

	// Newer *at variants permwrap does not emulate yet. ENOSYS is what a
	// kernel without them answers, and every caller of a syscall this new
	// probes for it and falls back on ENOSYS to the calls above, which are
	// judged. EACCES (or a notification answered "could not decide") would
	// be a permission error the caller reports instead of falling back.
	// Network (net.go): where a connection or a datagram goes is judged;
	// the supervisor performs the call on the target's own socket with the
	// destination it read once. sendto names its destination in a
	// register-visible pointer (NULL: the socket's peer, nothing to
	// judge); sendmsg and sendmmsg keep theirs in memory, so every call is
	// read. Which sockets can exist at all is decided in BPF (socket).
	{nr: unix.SYS_CONNECT, name: "connect", decode: decodeConnect},
	// listen judges nothing: it is performed by permwrap so the socket is
	// known as the tree's own server (netlocal.go), whether bound
	// explicitly or by the listen itself.
	{nr: unix.SYS_LISTEN, name: "listen", decode: decodeListen},
	{nr: unix.SYS_SENDTO, name: "sendto", when: always(ptrNotNull(4)), decode: decodeSendto},
	{nr: unix.SYS_SENDMSG, name: "sendmsg", decode: decodeSendmsg},
	{nr: unix.SYS_SENDMMSG, name: "sendmmsg", decode: decodeSendmmsg},
	// recvfrom that asks for the sender's address (a UDP resolver reading
	// an answer): the supervisor looks at the datagram it will get, to
	// learn the names the tree resolves (dns.go), and continues it.
	// Nothing is judged or read from memory.
	{nr: unix.SYS_RECVFROM, name: "recvfrom", when: always(ptrNotNull(4)), decode: decodeRecvfrom},
	{nr: unix.SYS_SOCKET, name: "socket", refuse: socketRefusals()},
	{nr: unix.SYS_SETSOCKOPT, name: "setsockopt", refuse: sockoptRefusals()},

	{nr: unix.SYS_SETXATTRAT, name: "setxattrat", refuse: refuseAll(unix.ENOSYS, "not emulated: callers fall back to setxattr/lsetxattr/fsetxattr")},
	{nr: unix.SYS_REMOVEXATTRAT, name: "removexattrat", refuse: refuseAll(unix.ENOSYS, "not emulated: callers fall back to removexattr/lremovexattr/fremovexattr")},
	{nr: unix.SYS_FILE_SETATTR, name: "file_setattr", refuse: refuseAll(unix.ENOSYS, "not emulated: callers fall back to the FS_IOC_FSSETXATTR ioctl")},

	// Side doors, refused in BPF (docs/kernel.md, docs/security.md).
	// io_uring's openat/renameat/... run in kernel workers seccomp never sees.
	{nr: unix.SYS_IO_URING_SETUP, name: "io_uring_setup", refuse: refuseAll(unix.ENOSYS, "io_uring's operations run in kernel workers seccomp never sees")},
	{nr: unix.SYS_IO_URING_ENTER, name: "io_uring_enter", refuse: refuseAll(unix.ENOSYS, "io_uring")},
	{nr: unix.SYS_IO_URING_REGISTER, name: "io_uring_register", refuse: refuseAll(unix.ENOSYS, "io_uring")},
	// File handles bypass path resolution. EOPNOTSUPP is what a filesystem
	// without handles answers, and every caller (systemd, glibc users) falls
	// back on it.
	{nr: unix.SYS_OPEN_BY_HANDLE_AT, name: "open_by_handle_at", refuse: refuseAll(unix.EPERM, "a file handle bypasses path resolution")},
	{nr: unix.SYS_NAME_TO_HANDLE_AT, name: "name_to_handle_at", refuse: refuseAll(unix.EOPNOTSUPP, "file handles (callers fall back, as on a filesystem without them)")},
	{nr: unix.SYS_KEYCTL, name: "keyctl", refuse: refuseAll(unix.ENOSYS, "the kernel keyring")},
	{nr: unix.SYS_ADD_KEY, name: "add_key", refuse: refuseAll(unix.ENOSYS, "the kernel keyring")},
	{nr: unix.SYS_REQUEST_KEY, name: "request_key", refuse: refuseAll(unix.ENOSYS, "the kernel keyring")},
	{nr: unix.SYS_USERFAULTFD, name: "userfaultfd", refuse: refuseAll(unix.EPERM, "could stall the supervisor's reads of target memory")},
	// Tampering with another sandboxed process's memory or fds defeats any
	// check the supervisor made on them.
	{nr: unix.SYS_PROCESS_VM_WRITEV, name: "process_vm_writev", refuse: refuseAll(unix.EPERM, "writes another process's memory")},
	{nr: unix.SYS_PIDFD_GETFD, name: "pidfd_getfd", refuse: refuseAll(unix.EPERM, "takes another process's fds")},
	// Filesystem topology: Landlock already refuses these for a confined
	// process; refusing them here too keeps the filter sound on its own.
	{nr: unix.SYS_CHROOT, name: "chroot", refuse: refuseAll(unix.EPERM, "filesystem topology")},
	{nr: unix.SYS_PIVOT_ROOT, name: "pivot_root", refuse: refuseAll(unix.EPERM, "filesystem topology")},
	{nr: unix.SYS_MOUNT, name: "mount", refuse: refuseAll(unix.EPERM, "filesystem topology")},
	{nr: unix.SYS_UMOUNT2, name: "umount2", refuse: refuseAll(unix.EPERM, "filesystem topology")},
	{nr: unix.SYS_OPEN_TREE, name: "open_tree", refuse: refuseAll(unix.EPERM, "filesystem topology")},
	{nr: unix.SYS_OPEN_TREE_ATTR, name: "open_tree_attr", refuse: refuseAll(unix.EPERM, "filesystem topology")},
	{nr: unix.SYS_MOVE_MOUNT, name: "move_mount", refuse: refuseAll(unix.EPERM, "filesystem topology")},
	{nr: unix.SYS_FSOPEN, name: "fsopen", refuse: refuseAll(unix.EPERM, "filesystem topology")},
	{nr: unix.SYS_FSCONFIG, name: "fsconfig", refuse: refuseAll(unix.EPERM, "filesystem topology")},
	{nr: unix.SYS_FSMOUNT, name: "fsmount", refuse: refuseAll(unix.EPERM, "filesystem topology")},
	{nr: unix.SYS_FSPICK, name: "fspick", refuse: refuseAll(unix.EPERM, "filesystem topology")},
	{nr: unix.SYS_MOUNT_SETATTR, name: "mount_setattr", refuse: refuseAll(unix.EPERM, "filesystem topology")},
	// clone3 keeps its flags in memory BPF cannot read; glibc falls back to
	// clone on ENOSYS, whose flags the filter can see.
	{nr: unix.SYS_CLONE3, name: "clone3", refuse: refuseAll(unix.ENOSYS, "its flags are in memory BPF cannot read (callers fall back to clone)")},
	{nr: unix.SYS_SETNS, name: "setns", refuse: refuseAll(unix.EPERM, "entering another namespace")},
	{nr: unix.SYS_KEXEC_LOAD, name: "kexec_load", refuse: refuseAll(unix.EPERM, "the kernel itself")},
	{nr: unix.SYS_KEXEC_FILE_LOAD, name: "kexec_file_load", refuse: refuseAll(unix.EPERM, "the kernel itself")},
	{nr: unix.SYS_INIT_MODULE, name: "init_module", refuse: refuseAll(unix.EPERM, "the kernel itself")},
	{nr: unix.SYS_FINIT_MODULE, name: "finit_module", refuse: refuseAll(unix.EPERM, "the kernel itself")},
	{nr: unix.SYS_DELETE_MODULE, name: "delete_module", refuse: refuseAll(unix.EPERM, "the kernel itself")},
	{nr: unix.SYS_BPF, name: "bpf", refuse: refuseAll(unix.EPERM, "the kernel itself")},
	// Files the kernel opens and writes on the caller's behalf, by a path
	// it resolves itself (docs/security.md, "Kernel-opened files"):
	// process accounting appends to any file, swap and quota files are
	// written by the kernel. All need privileges; the EPERM is what an
	// unprivileged caller gets. uselib opens a library by path (and no
	// current kernel can load one): ENOSYS, as a kernel without it.
	{nr: unix.SYS_ACCT, name: "acct", refuse: refuseAll(unix.EPERM, "a file the kernel writes")},
	{nr: unix.SYS_SWAPON, name: "swapon", refuse: refuseAll(unix.EPERM, "a file the kernel writes")},
	{nr: unix.SYS_SWAPOFF, name: "swapoff", refuse: refuseAll(unix.EPERM, "a file the kernel writes")},
	{nr: unix.SYS_QUOTACTL, name: "quotactl", refuse: refuseAll(unix.EPERM, "a file the kernel writes")},
	{nr: unix.SYS_QUOTACTL_FD, name: "quotactl_fd", refuse: refuseAll(unix.EPERM, "a file the kernel writes")},
	{nr: unix.SYS_USELIB, name: "uselib", refuse: refuseAll(unix.ENOSYS, "a library opened by path")},
	// A fanotify group without FID reporting receives, with each event, a
	// file descriptor the kernel opens for it on the file someone else
	// (permwrap included) accessed: reads of files the policy denies,
	// never judged. FID-reporting groups get handles instead, which only
	// open_by_handle_at (refused) could open. EPERM is what an
	// unprivileged caller gets for such a group.
	{nr: unix.SYS_FANOTIFY_INIT, name: "fanotify_init", refuse: []bpfRefusal{{errno: unix.EPERM, why: "event fds are files opened by the kernel",
		when: []notify.Match{{{Arg: 0, Op: notify.CmpMaskedEqual, Mask: fanReportFidBits, Value: 0}}}}}},
	// A second listener anywhere in the tree could CONTINUE calls past this
	// filter once ours is gone; plain nested filters stay allowed.
	{nr: unix.SYS_SECCOMP, name: "seccomp", refuse: []bpfRefusal{{errno: unix.EPERM, why: "a second listener could continue calls past this filter",
		when: []notify.Match{intHasBits(1, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)}}}},
	// ptrace is allowed, so debuggers work inside the tree (gdb, strace,
	// ASan's leak checker): Landlock confines it to the sandbox's own
	// processes, and nothing permwrap decides rests on memory a tracer
	// could change afterwards (docs/security.md). Refused: the one option
	// that would switch seccomp off for a tracee.
	{nr: unix.SYS_PTRACE, name: "ptrace", refuse: ptraceRefusals},

	// The init stage hands the listener over with these before the
	// supervisor serves it (init.go): a notified one would block forever.
	{nr: unix.SYS_WRITE, name: "write", never: "the init stage writes where the listener is"},
	{nr: unix.SYS_READ, name: "read", never: "the init stage reads the supervisor's answer"},
	{nr: unix.SYS_CLOSE, name: "close", never: "the init stage closes its copy of the listener"},
}

// Flags of fanotify_init that make a group report file ids instead of
// opening the file of each event.
const fanReportFidBits = 0x200 | 0x400 // FAN_REPORT_FID | FAN_REPORT_DIR_FID

// ptraceOSuspendSeccomp is PTRACE_O_SUSPEND_SECCOMP (1 << 21): a tracee
// with it set skips every seccomp filter, ours included. The kernel grants
// it only to a tracer with CAP_SYS_ADMIN that is not itself under seccomp
// (so never to a sandboxed one); the filter refuses it too, so the
// sandbox does not rest on that one check.
const ptraceOSuspendSeccomp = 1 << 21

// ptraceRefusals refuse PTRACE_SEIZE and PTRACE_SETOPTIONS whose options
// (the data argument, a register) hold PTRACE_O_SUSPEND_SECCOMP. The
// request is a long: compared in all 64 bits, as the kernel's switch does.
var ptraceRefusals = []bpfRefusal{{errno: unix.EPERM, why: "PTRACE_O_SUSPEND_SECCOMP switches seccomp off for the tracee", when: []notify.Match{
	{{Arg: 0, Op: notify.CmpEqual, Value: unix.PTRACE_SEIZE}, {Arg: 3, Op: notify.CmpMaskedEqual, Mask: ptraceOSuspendSeccomp, Value: ptraceOSuspendSeccomp}},
	{{Arg: 0, Op: notify.CmpEqual, Value: unix.PTRACE_SETOPTIONS}, {Arg: 3, Op: notify.CmpMaskedEqual, Mask: ptraceOSuspendSeccomp, Value: ptraceOSuspendSeccomp}},
}}}

// ioctlRefusals: TIOCSTI pushes bytes into a terminal's input through any
// fd of it, read-only included: typed into whatever reads that terminal
// next, outside the sandbox (the person's shell). TIOCLINUX can paste on
// a virtual console. EPERM, as with dev.tty.legacy_tiocsti=0.
var ioctlRefusals = []bpfRefusal{
	{errno: unix.EPERM, why: "TIOCSTI types into a terminal outside the sandbox", when: []notify.Match{intEquals(1, unix.TIOCSTI)}},
	{errno: unix.EPERM, why: "TIOCLINUX can paste into a console", when: []notify.Match{intEquals(1, unix.TIOCLINUX)}},
}

// rows indexes the table by syscall number (rowOf): a slice, so that the
// lookups every notification makes (handle, keepRole) are an index.
var rows = func() []*sysRow {
	top := int32(0)
	for _, r := range syscalls {
		top = max(top, r.nr)
	}
	m := make([]*sysRow, top+1)
	for i := range syscalls {
		r := &syscalls[i]
		if m[r.nr] != nil {
			panic("supervisor: syscall " + r.name + " has two rows")
		}
		_, all := r.refusesAll()
		switch {
		case r.never != "" && (r.decode != nil || len(r.refuse) > 0):
			panic("supervisor: syscall " + r.name + " is never notified: it needs no decoder or refusals")
		case r.decode != nil && all:
			panic("supervisor: syscall " + r.name + " is refused in BPF: a decoder would never run")
		case r.decode == nil && r.never == "" && len(r.refuse) == 0:
			panic("supervisor: syscall " + r.name + " needs a decoder, refusals or a reason it is never notified")
		}
		m[r.nr] = r
	}
	return m
}()

// rowOf is the table's row of syscall nr, nil when it has none.
func rowOf(nr int32) *sysRow {
	if nr < 0 || int(nr) >= len(rows) {
		return nil
	}
	return rows[nr]
}

// cwdCalls are the syscalls the table says change the cwd.
func cwdCalls() []int {
	var nrs []int
	for _, r := range syscalls {
		if r.cwd {
			nrs = append(nrs, int(r.nr))
		}
	}
	return nrs
}

func init() {
	nrs := cwdCalls()
	pin.SetCwdCalls(nrs, slices.Contains(nrs, unix.SYS_UMASK))
}

// filterChoice is what the policy lets the filter leave to Landlock.
type filterChoice struct {
	// skipReads: the policy allows every read, so plain read-only opens
	// need no notification (Landlock alone stands between the sandbox
	// and reads).
	skipReads bool
	// freeListings: read-only opens with O_DIRECTORY (listings) are not
	// judged (the policy's "listings": "free"; readOnlyOpensSkippable
	// says why that is sound).
	freeListings bool
}

// filterChoiceOf is what p lets the filter leave to Landlock.
func filterChoiceOf(p *engine.Policy) filterChoice {
	return filterChoice{skipReads: p.ReadsAlwaysAllowed(), freeListings: p.ListingsFree()}
}

// filterOptions derives the BPF filter from the table.
func filterOptions(fc filterChoice) notify.FilterOptions {
	o := notify.FilterOptions{Rules: make([]notify.Rule, 0, len(syscalls))}
	for _, r := range syscalls {
		if r.never != "" {
			o.Never = append(o.Never, r.nr)
		}
		for _, rf := range r.refuse {
			o.Rules = append(o.Rules, notify.Rule{Nr: r.nr, Errno: rf.errno, When: rf.when})
		}
		if r.decode == nil {
			continue // refused in BPF where it must be, allowed elsewhere
		}
		rule := notify.Rule{Nr: r.nr}
		if r.when != nil {
			rule.When = r.when(fc)
		}
		o.Rules = append(o.Rules, rule)
	}
	return o
}

// keepsRole says whether a worker holding the receiving role keeps it
// while it handles n: the row's role (every call but an exec and its
// verification stop; the supervisor keeps the stop of an exec verified
// already, keepRole in loop.go).
func keepsRole(n *notify.Notif) bool {
	r := rowOf(n.Nr)
	return r == nil || r.role == keepRole
}

// isExecStop reports whether nr is the exec verification stop.
func isExecStop(nr int32) bool {
	r := rowOf(nr)
	return r != nil && r.role == execStop
}

// always is a `when` that does not depend on the policy.
func always(m ...notify.Match) func(filterChoice) []notify.Match {
	return func(filterChoice) []notify.Match { return m }
}

// intEquals matches an int argument (the low 32 bits, all the kernel
// reads of it) equal to v.
func intEquals(arg uint, v uint64) notify.Match {
	return notify.Match{{Arg: arg, Op: notify.CmpMaskedEqual, Mask: 0xffffffff, Value: v}}
}

// intNotZero matches an int argument (its low 32 bits) that is not 0.
func intNotZero(arg uint) notify.Match { return intNot(arg, 0) }

// intNot matches an int argument (its low 32 bits) other than v. BPF
// compares 32-bit halves, and libseccomp has no masked not-equal: the
// low half is compared whole (a full-width compare of a register whose
// upper half the kernel ignores would notify too often, never too
// seldom, and the decoder reads the int).
func intNot(arg uint, v uint64) notify.Match {
	return notify.Match{{Arg: arg, Op: notify.CmpNotEqual, Value: v}}
}

// coreLimitSet matches a prlimit64 that sets RLIMIT_CORE (resource in
// argument res, a new limit pointer in argument ptr).
func coreLimitSet(res, ptr uint) notify.Match {
	return notify.Match{
		{Arg: res, Op: notify.CmpMaskedEqual, Mask: 0xffffffff, Value: unix.RLIMIT_CORE},
		{Arg: ptr, Op: notify.CmpNotEqual, Value: 0},
	}
}

// ptrNotNull matches a pointer argument that is not NULL (all 64 bits).
func ptrNotNull(arg uint) notify.Match {
	return notify.Match{{Arg: arg, Op: notify.CmpNotEqual, Value: 0}}
}

// intHasBits matches an int argument with every bit of mask set.
func intHasBits(arg uint, mask uint64) notify.Match {
	return notify.Match{{Arg: arg, Op: notify.CmpMaskedEqual, Mask: mask, Value: mask}}
}

// oTmpfileBit is __O_TMPFILE (O_TMPFILE also sets O_DIRECTORY).
const oTmpfileBit = 0x400000

// readOnlyOpensSkippable says which open/openat calls (flags in argument
// flagsArg) are notified; the rest are allowed in BPF. Every decision is
// on the flags register: nothing in memory is read, and a thread racing
// the call cannot change a register the kernel already copied.
//
// Never those with O_PATH: the kernel then ignores every flag but
// O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC (no access mode, no O_CREAT, no
// O_TRUNC), opens nothing for reading or writing and calls no driver's
// open, and every use of the fd — as a dirfd, by fchdir, execveat,
// linkat, a reopen through /proc/self/fd — is itself judged; the
// supervisor used to continue them unread, so BPF answering them saves
// the round trip and changes no answer.
//
// With fc.freeListings, not a listing either: access mode O_RDONLY,
// O_DIRECTORY, and none of O_CREAT, O_TRUNC, __O_TMPFILE (O_TMPFILE is
// __O_TMPFILE|O_DIRECTORY, a creating open: notified). The kernel fails
// such an open with ENOTDIR unless the name resolves (symlinks followed,
// as the supervisor would) to a directory, before any open method of a
// file runs, so no device, FIFO or file's content is reached. The fd
// gives what an O_PATH fd of the directory gives (every use as a dirfd or
// cwd judged by the path it names), plus its names (getdents), its own
// metadata (fstat, fstatfs, fgetxattr: readable by path anyway), flock,
// fsync and dnotify; what could change the directory through it —
// fchmod, fchown, fsetxattr, fremovexattr, futimens, the filesystem
// ioctls — is watched whatever the fd's open was. docs/kernel.md has the
// whole argument; attack_test.go the attacks.
//
// Otherwise every open, or, when reads may be left to Landlock
// (fc.skipReads), only those whose flags make them more than a read: a
// write access mode (including 3), O_CREAT, O_TRUNC, __O_TMPFILE.
// libseccomp has no "masked not-equal", so each way of being notified is
// its own alternative (with O_PATH clear in the same mask), and a
// listing is the alternative "O_DIRECTORY clear" left out; what matches
// none is allowed.
func readOnlyOpensSkippable(flagsArg int) func(filterChoice) []notify.Match {
	return func(fc filterChoice) []notify.Match {
		noPath := func(mask, value uint64) notify.Match {
			return notify.Match{{Arg: uint(flagsArg), Op: notify.CmpMaskedEqual, Mask: mask | unix.O_PATH, Value: value}}
		}
		switch {
		case fc.skipReads:
			return writingOpens(noPath)
		case fc.freeListings:
			// Any open that is not a listing: O_DIRECTORY clear, or
			// one of the writing ways.
			return append([]notify.Match{noPath(unix.O_DIRECTORY, 0)}, writingOpens(noPath)...)
		}
		return []notify.Match{noPath(0, 0)}
	}
}

// writingOpens are the alternatives that make an open more than a read:
// a write access mode (including 3), O_CREAT, O_TRUNC, __O_TMPFILE.
func writingOpens(noPath func(mask, value uint64) notify.Match) []notify.Match {
	var ms []notify.Match
	for _, mode := range []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_ACCMODE} {
		ms = append(ms, noPath(unix.O_ACCMODE, mode))
	}
	for _, bit := range []uint64{unix.O_CREAT, unix.O_TRUNC, oTmpfileBit} {
		ms = append(ms, noPath(bit, bit))
	}
	return ms
}
