package supervisor

import (
	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify"
)

// The syscall table: one row per syscall permwrap watches, the single
// source of truth for
//   - the BPF filter: a row is notified (always, or when its `when`
//     conditions hold), or refused in BPF with `enosys`; filterRules
//     derives the filter's rules from the rows, and notify applies them
//     without knowing why;
//   - decoding: the row's decoder reads every argument once into a typed
//     call (calls.go), whose judge is pure and whose perform uses only
//     what was decoded.
//
// Adding a syscall is one row here, its decoder (decode.go) and call
// (calls.go), and a test; docs/architecture.md walks through it.

// argNone marks an absent argument position (AT_FDCWD for a dirfd).
const argNone = -1

// sysRow is one watched syscall.
type sysRow struct {
	nr   int32
	name string
	// when narrows the notification to calls whose arguments match (nil:
	// every call). It is told whether plain read-only opens may be left to
	// Landlock (the policy allows every read).
	when func(skipReads bool) []notify.Match
	// decode reads the call (nil for an enosys row).
	decode decodeFunc
	// enosys, when set, says why the call is refused in BPF with ENOSYS
	// instead of being notified.
	enosys string
	// refuse are the calls of this syscall the filter itself fails, each
	// with its errno, when its conditions hold (a socket family permwrap
	// does not judge, a raw socket); the rest are notified when a decoder
	// is set, else allowed.
	refuse []bpfRefusal
}

// bpfRefusal is a class of calls refused in BPF: errno when any of when
// holds, and why (for docs/network.md and the tests).
type bpfRefusal struct {
	errno unix.Errno
	when  []notify.Match
	why   string
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
	{nr: unix.SYS_OPEN, name: "open", when: readOnlyOpensSkippable(1), decode: decodeOpen(argNone, 0, 1, 2)},
	{nr: unix.SYS_OPENAT, name: "openat", when: readOnlyOpensSkippable(2), decode: decodeOpen(0, 1, 2, 3)},
	{nr: unix.SYS_OPENAT2, name: "openat2", decode: decodeOpenat2},
	{nr: unix.SYS_CREAT, name: "creat", decode: decodeCreat},

	// Exec: judged, continued, verified (execverify.go).
	{nr: unix.SYS_EXECVE, name: "execve", decode: decodeExec(argNone, 0, 1, argNone)},
	{nr: unix.SYS_EXECVEAT, name: "execveat", decode: decodeExec(0, 1, 2, 4)},
	// The stop right after an exec where verification happens: every libc
	// and the Go runtime set the thread pointer before main (a register
	// compare; nothing is read).
	{nr: unix.SYS_ARCH_PRCTL, name: "arch_prctl", when: always(argEquals(0, archSetFS)), decode: decodeExecStop},

	// unshare(CLONE_NEWNS) gives the thread a copy of the mount tree as its
	// root: the resolution cache must check that thread's root again
	// (pin.RootChanged). Continued: the flags are in a register and the
	// call was allowed before; only the cache learns of it.
	{nr: unix.SYS_UNSHARE, name: "unshare", when: always(argHas(0, unix.CLONE_NEWNS)), decode: decodeUnshare},

	// chdir and fchdir change the cwd the resolution cache keeps per thread
	// (pin.CwdChanging, notify/pin/cwd.go). Continued: nothing is judged
	// (changing directory reads nothing); only the cache learns of it.
	{nr: unix.SYS_CHDIR, name: "chdir", decode: decodeChdir},
	{nr: unix.SYS_FCHDIR, name: "fchdir", decode: decodeChdir},

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
	{nr: unix.SYS_IOCTL, name: "ioctl", when: always(ioctlWatched()...), decode: decodeIoctl},

	// Other processes. Landlock scopes signals and ptrace to the sandbox,
	// but not resource limits, priorities, CPU affinity or I/O priority:
	// a sandboxed process could starve permwrap itself (a file limit makes
	// its /proc reads fail) or any other process of the user. A call on
	// the caller itself (pid 0) is left alone in BPF; any other is checked
	// to name a process of the sandboxed tree (process.go).
	{nr: unix.SYS_PRLIMIT64, name: "prlimit64", when: always(argNotZero(0), coreLimitSet(1, 2)), decode: decodePrlimit},
	{nr: unix.SYS_SETRLIMIT, name: "setrlimit", when: always(argEquals(0, unix.RLIMIT_CORE)), decode: decodeSetrlimit},
	{nr: unix.SYS_SETPRIORITY, name: "setpriority", when: always(argNotZero(0), argNotZero(1)), decode: decodeWhich(prioProcess, prioPgrp)},
	{nr: unix.SYS_IOPRIO_SET, name: "ioprio_set", when: always(argNot(0, ioprioWhoProcess), argNotZero(1)), decode: decodeWhich(ioprioWhoProcess, ioprioWhoPgrp)},
	{nr: unix.SYS_SCHED_SETAFFINITY, name: "sched_setaffinity", when: always(argNotZero(0)), decode: decodeOtherPid},
	{nr: unix.SYS_SCHED_SETSCHEDULER, name: "sched_setscheduler", when: always(argNotZero(0)), decode: decodeOtherPid},
	{nr: unix.SYS_SCHED_SETPARAM, name: "sched_setparam", when: always(argNotZero(0)), decode: decodeOtherPid},
	{nr: unix.SYS_SCHED_SETATTR, name: "sched_setattr", when: always(argNotZero(0)), decode: decodeOtherPid},

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
	{nr: unix.SYS_SENDTO, name: "sendto", when: always(argNonZero(4)), decode: decodeSendto},
	{nr: unix.SYS_SENDMSG, name: "sendmsg", decode: decodeSendmsg},
	{nr: unix.SYS_SENDMMSG, name: "sendmmsg", decode: decodeSendmmsg},
	// recvfrom that asks for the sender's address (a UDP resolver reading
	// an answer): the supervisor looks at the datagram it will get, to
	// learn the names the tree resolves (dns.go), and continues it.
	// Nothing is judged or read from memory.
	{nr: unix.SYS_RECVFROM, name: "recvfrom", when: always(argNonZero(4)), decode: decodeRecvfrom},
	{nr: unix.SYS_SOCKET, name: "socket", refuse: socketRefusals()},
	{nr: unix.SYS_SETSOCKOPT, name: "setsockopt", refuse: sockoptRefusals()},

	{nr: unix.SYS_SETXATTRAT, name: "setxattrat", enosys: "not emulated: callers fall back to setxattr/lsetxattr/fsetxattr"},
	{nr: unix.SYS_REMOVEXATTRAT, name: "removexattrat", enosys: "not emulated: callers fall back to removexattr/lremovexattr/fremovexattr"},
	{nr: unix.SYS_FILE_SETATTR, name: "file_setattr", enosys: "not emulated: callers fall back to the FS_IOC_FSSETXATTR ioctl"},
}

// rows indexes the table by syscall number.
var rows = func() map[int32]*sysRow {
	m := make(map[int32]*sysRow, len(syscalls))
	for i := range syscalls {
		r := &syscalls[i]
		if m[r.nr] != nil {
			panic("supervisor: syscall " + r.name + " has two rows")
		}
		if r.decode != nil && r.enosys != "" || r.decode == nil && r.enosys == "" && len(r.refuse) == 0 {
			panic("supervisor: syscall " + r.name + " needs a decoder, an enosys reason or refusals (not a decoder and enosys)")
		}
		m[r.nr] = r
	}
	return m
}()

// filterRules derives the BPF filter's rules from the table. skipReads:
// the policy allows every read, so plain read-only opens need no
// notification (Landlock alone stands between the sandbox and reads).
func filterRules(skipReads bool) []notify.Rule {
	out := make([]notify.Rule, 0, len(syscalls))
	for _, r := range syscalls {
		for _, rf := range r.refuse {
			out = append(out, notify.Rule{Nr: r.nr, Errno: rf.errno, When: rf.when})
		}
		if r.decode == nil && r.enosys == "" {
			continue // refused in BPF where it must be, allowed elsewhere
		}
		rule := notify.Rule{Nr: r.nr}
		if r.enosys != "" {
			rule.Errno = unix.ENOSYS
		}
		if r.when != nil {
			rule.When = r.when(skipReads)
		}
		out = append(out, rule)
	}
	return out
}

// always is a `when` that does not depend on the policy.
func always(m ...notify.Match) func(bool) []notify.Match {
	return func(bool) []notify.Match { return m }
}

// argEquals matches an int argument (the low 32 bits, all the kernel
// reads of it) equal to v.
func argEquals(arg uint, v uint64) notify.Match {
	return notify.Match{{Arg: arg, Op: notify.CmpMaskedEqual, Mask: 0xffffffff, Value: v}}
}

// argNotZero matches an int argument (its low 32 bits) that is not 0.
func argNotZero(arg uint) notify.Match { return argNot(arg, 0) }

// argNot matches an int argument (its low 32 bits) other than v. BPF
// compares 32-bit halves, and libseccomp has no masked not-equal: the
// low half is compared whole (a full-width compare of a register whose
// upper half the kernel ignores would notify too often, never too
// seldom, and the decoder reads the int).
func argNot(arg uint, v uint64) notify.Match {
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

// argNonZero matches a pointer argument that is not NULL (all 64 bits).
func argNonZero(arg uint) notify.Match {
	return notify.Match{{Arg: arg, Op: notify.CmpNotEqual, Value: 0}}
}

// argHas matches an int argument with every bit of mask set.
func argHas(arg uint, mask uint64) notify.Match {
	return notify.Match{{Arg: arg, Op: notify.CmpMaskedEqual, Mask: mask, Value: mask}}
}

// oTmpfileBit is __O_TMPFILE (O_TMPFILE also sets O_DIRECTORY).
const oTmpfileBit = 0x400000

// readOnlyOpensSkippable says which open/openat calls (flags in argument
// flagsArg) are notified. Never those with O_PATH: the kernel then ignores
// every flag but O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC (no access mode,
// no O_CREAT, no O_TRUNC), opens nothing for reading or writing and calls
// no driver's open, and every use of the fd — as a dirfd, by fchdir,
// execveat, linkat, a reopen through /proc/self/fd — is itself judged;
// the supervisor used to continue them unread, so BPF answering them
// saves the round trip and changes no answer. Otherwise every open, or,
// when reads may be left to Landlock, only those whose flags make them
// more than a read: a write access mode (including 3), O_CREAT, O_TRUNC,
// __O_TMPFILE. libseccomp has no "masked not-equal", so each way is its
// own alternative (with O_PATH clear in the same mask); what matches none
// is allowed.
func readOnlyOpensSkippable(flagsArg uint) func(bool) []notify.Match {
	return func(skipReads bool) []notify.Match {
		noPath := func(mask, value uint64) notify.Match {
			return notify.Match{{Arg: flagsArg, Op: notify.CmpMaskedEqual, Mask: mask | unix.O_PATH, Value: value}}
		}
		if !skipReads {
			return []notify.Match{noPath(0, 0)}
		}
		var ms []notify.Match
		for _, mode := range []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_ACCMODE} {
			ms = append(ms, noPath(unix.O_ACCMODE, mode))
		}
		for _, bit := range []uint64{unix.O_CREAT, unix.O_TRUNC, oTmpfileBit} {
			ms = append(ms, noPath(bit, bit))
		}
		return ms
	}
}
