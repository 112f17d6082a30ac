package notify

// The filter is built with libseccomp (which owns the architecture and x32
// checks and the argument comparisons) and exported as a raw program, so it
// can be loaded with flags libseccomp 2.5.4 does not know (see Install).

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// FilterOptions chooses between the filter's variants. The zero value is the
// safe one: every watched syscall is notified.
type FilterOptions struct {
	// SkipReadOnlyOpens lets open/openat whose flags are plain read-only run
	// without a notification (ALLOW in BPF). Only set it when no read rule
	// needs the supervisor: Landlock is then the only check on reads.
	// openat2 (flags in memory) and creat are always notified.
	SkipReadOnlyOpens bool
	// DenyPtrace makes ptrace fail with EPERM, so no sandboxed process can
	// rewrite another's memory while the supervisor decides on it.
	DenyPtrace bool
}

// Program is a classic BPF seccomp program for x86_64.
type Program struct {
	Insns []unix.SockFilter
}

// Len is the number of instructions (the kernel's limit is 4096).
func (p *Program) Len() int { return len(p.Insns) }

// String disassembles the program, one instruction a line, for
// `permwrap doctor` and debugging.
func (p *Program) String() string {
	var b strings.Builder
	for i, ins := range p.Insns {
		raw := bpf.RawInstruction{Op: ins.Code, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
		fmt.Fprintf(&b, "%04d: %v\n", i, raw.Disassemble())
	}
	return b.String()
}

// oReadOnlySensitive are the open flags that make an O_RDONLY open more than
// a read: creating, truncating, an anonymous file, or an O_PATH handle
// (usable as a dirfd/exec handle). Any of them, or a non-zero access mode,
// sends the open to the supervisor under SkipReadOnlyOpens.
const (
	oTmpfileBit        = 0x400000 // __O_TMPFILE; O_TMPFILE also sets O_DIRECTORY
	oReadOnlySensitive = unix.O_CREAT | unix.O_TRUNC | oTmpfileBit | unix.O_PATH
)

// NotifiedSyscalls are the syscalls the filter sends to the supervisor
// (subject to SkipReadOnlyOpens for open/openat). Exported so the
// supervisor can check it handles every one of them.
var NotifiedSyscalls = []int32{
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
	unix.SYS_SETXATTRAT, unix.SYS_REMOVEXATTRAT, unix.SYS_FILE_SETATTR,
	// bind creates a socket file for an AF_UNIX pathname; the sockaddr is
	// in memory, so every bind is seen (and emulated) by the supervisor.
	unix.SYS_BIND,
}

// NotifiedIoctls are the ioctl commands the filter sends to the
// supervisor: they change a file's attributes (chattr's flags, the
// fsxattr) through any fd, even one opened read-only, so they are writes
// of that file. Matched on the low 32 bits only: the kernel takes the
// command as an unsigned int, so set upper bits must not slip past.
var NotifiedIoctls = []uint64{
	unix.FS_IOC_SETFLAGS,
	FS_IOC_FSSETXATTR,
}

// ArchSetFS is arch_prctl's ARCH_SET_FS.
const ArchSetFS = 0x1002

// FS_IOC_FSSETXATTR is _IOW('X', 32, struct fsxattr) (x/sys lacks it).
const FS_IOC_FSSETXATTR = 0x401c5820

// sizeofFsxattr is sizeof(struct fsxattr).
const sizeofFsxattr = 28

// deniedSyscall is a side door closed in BPF: the call fails with errno
// without reaching the supervisor.
type deniedSyscall struct {
	nr    int32
	errno unix.Errno
}

// deniedSyscalls are refused outright; docs/kernel.md says why for each.
var deniedSyscalls = []deniedSyscall{
	// io_uring's openat/renameat/... run in kernel workers seccomp never sees.
	{unix.SYS_IO_URING_SETUP, unix.ENOSYS},
	{unix.SYS_IO_URING_ENTER, unix.ENOSYS},
	{unix.SYS_IO_URING_REGISTER, unix.ENOSYS},
	// File handles bypass path resolution. EOPNOTSUPP is what a filesystem
	// without handles answers, and every caller (systemd, glibc users) falls
	// back on it.
	{unix.SYS_OPEN_BY_HANDLE_AT, unix.EPERM},
	{unix.SYS_NAME_TO_HANDLE_AT, unix.EOPNOTSUPP},
	{unix.SYS_KEYCTL, unix.ENOSYS},
	{unix.SYS_ADD_KEY, unix.ENOSYS},
	{unix.SYS_REQUEST_KEY, unix.ENOSYS},
	// userfaultfd could stall the supervisor's reads of target memory.
	{unix.SYS_USERFAULTFD, unix.EPERM},
	// Tampering with another sandboxed process's memory or fds defeats any
	// check the supervisor made on them.
	{unix.SYS_PROCESS_VM_WRITEV, unix.EPERM},
	{unix.SYS_PIDFD_GETFD, unix.EPERM},
	// Filesystem topology: Landlock already refuses these for a confined
	// process; refusing them here too keeps the filter sound on its own.
	{unix.SYS_CHROOT, unix.EPERM},
	{unix.SYS_PIVOT_ROOT, unix.EPERM},
	{unix.SYS_MOUNT, unix.EPERM},
	{unix.SYS_UMOUNT2, unix.EPERM},
	{unix.SYS_OPEN_TREE, unix.EPERM},
	{unix.SYS_OPEN_TREE_ATTR, unix.EPERM},
	{unix.SYS_MOVE_MOUNT, unix.EPERM},
	{unix.SYS_FSOPEN, unix.EPERM},
	{unix.SYS_FSCONFIG, unix.EPERM},
	{unix.SYS_FSMOUNT, unix.EPERM},
	{unix.SYS_FSPICK, unix.EPERM},
	{unix.SYS_MOUNT_SETATTR, unix.EPERM},
	// clone3 keeps its flags in memory BPF cannot read; glibc falls back to
	// clone on ENOSYS, whose flags the filter can see.
	{unix.SYS_CLONE3, unix.ENOSYS},
	{unix.SYS_SETNS, unix.EPERM},
	{unix.SYS_KEXEC_LOAD, unix.EPERM},
	{unix.SYS_KEXEC_FILE_LOAD, unix.EPERM},
	{unix.SYS_INIT_MODULE, unix.EPERM},
	{unix.SYS_FINIT_MODULE, unix.EPERM},
	{unix.SYS_DELETE_MODULE, unix.EPERM},
	{unix.SYS_BPF, unix.EPERM},
}

// BuildFilter compiles the filter for o. It needs libseccomp but not the
// kernel's seccomp: nothing is loaded.
func BuildFilter(o FilterOptions) (*Program, error) {
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("notify: creating seccomp filter: %w", err)
	}
	defer f.Release()
	// A foreign ABI (i386 int 0x80) would reach the same kernel functions
	// under other numbers, past every rule below.
	if err := f.SetBadArchAction(seccomp.ActKillProcess); err != nil {
		return nil, fmt.Errorf("notify: setting bad-arch action: %w", err)
	}
	// The program is loaded by Install with raw seccomp(2); these only
	// matter to libseccomp's own Load, which is never called.
	if err := f.SetNoNewPrivsBit(true); err != nil {
		return nil, fmt.Errorf("notify: setting no-new-privs: %w", err)
	}

	notif := seccomp.ActNotify
	for _, nr := range NotifiedSyscalls {
		if o.SkipReadOnlyOpens && (nr == unix.SYS_OPEN || nr == unix.SYS_OPENAT) {
			flagsArg := uint(1)
			if nr == unix.SYS_OPENAT {
				flagsArg = 2
			}
			if err := addReadOnlyOpenRules(f, nr, flagsArg); err != nil {
				return nil, err
			}
			continue
		}
		if err := f.AddRule(seccomp.ScmpSyscall(nr), notif); err != nil {
			return nil, fmt.Errorf("notify: rule for %s: %w", SyscallName(nr), err)
		}
	}

	for _, cmd := range NotifiedIoctls {
		c, err := seccomp.MakeCondition(1, seccomp.CompareMaskedEqual, 0xffffffff, cmd&0xffffffff)
		if err != nil {
			return nil, fmt.Errorf("notify: ioctl condition: %w", err)
		}
		if err := f.AddRuleConditional(seccomp.ScmpSyscall(unix.SYS_IOCTL), notif, []seccomp.ScmpCondition{c}); err != nil {
			return nil, fmt.Errorf("notify: rule for ioctl %#x: %w", cmd, err)
		}
	}

	// arch_prctl(ARCH_SET_FS): every libc (glibc, musl) and the Go runtime
	// set the thread pointer with it before main and before any
	// constructor. It is the supervisor's stop right after an exec, where
	// the new image's argv is still the kernel's copy (programs may
	// rewrite their argv later: mkdir -p does). Only the command (a
	// register) is compared; the supervisor continues it.
	setFS, err := seccomp.MakeCondition(0, seccomp.CompareMaskedEqual, 0xffffffff, ArchSetFS)
	if err != nil {
		return nil, fmt.Errorf("notify: arch_prctl condition: %w", err)
	}
	if err := f.AddRuleConditional(seccomp.ScmpSyscall(unix.SYS_ARCH_PRCTL), notif, []seccomp.ScmpCondition{setFS}); err != nil {
		return nil, fmt.Errorf("notify: rule for arch_prctl: %w", err)
	}

	denied := deniedSyscalls
	if o.DenyPtrace {
		denied = append(denied[:len(denied):len(denied)], deniedSyscall{unix.SYS_PTRACE, unix.EPERM})
	}
	for _, d := range denied {
		if err := f.AddRule(seccomp.ScmpSyscall(d.nr), seccomp.ActErrno.SetReturnCode(int16(d.errno))); err != nil {
			return nil, fmt.Errorf("notify: rule for %s: %w", SyscallName(d.nr), err)
		}
	}

	// A second listener anywhere in the tree could CONTINUE calls past this
	// filter once ours is gone; plain nested filters stay allowed.
	newListener, err := seccomp.MakeCondition(1, seccomp.CompareMaskedEqual,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	if err != nil {
		return nil, fmt.Errorf("notify: seccomp condition: %w", err)
	}
	if err := f.AddRuleConditional(seccomp.ScmpSyscall(unix.SYS_SECCOMP),
		seccomp.ActErrno.SetReturnCode(int16(unix.EPERM)), []seccomp.ScmpCondition{newListener}); err != nil {
		return nil, fmt.Errorf("notify: rule for seccomp: %w", err)
	}

	if err := addCloneRules(f); err != nil {
		return nil, err
	}

	insns, err := exportBPF(f)
	if err != nil {
		return nil, err
	}
	p := &Program{Insns: insns}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// addReadOnlyOpenRules notifies open/openat unless the flags are plain
// O_RDONLY. libseccomp has no "masked not-equal", so each way a call can be
// more than a read is its own notify rule; what matches none is allowed.
func addReadOnlyOpenRules(f *seccomp.ScmpFilter, nr int32, arg uint) error {
	var conds []seccomp.ScmpCondition
	for _, mode := range []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_ACCMODE} {
		c, err := seccomp.MakeCondition(arg, seccomp.CompareMaskedEqual, unix.O_ACCMODE, mode)
		if err != nil {
			return fmt.Errorf("notify: open condition: %w", err)
		}
		conds = append(conds, c)
	}
	for _, bit := range []uint64{unix.O_CREAT, unix.O_TRUNC, oTmpfileBit, unix.O_PATH} {
		c, err := seccomp.MakeCondition(arg, seccomp.CompareMaskedEqual, bit, bit)
		if err != nil {
			return fmt.Errorf("notify: open condition: %w", err)
		}
		conds = append(conds, c)
	}
	for _, c := range conds {
		if err := f.AddRuleConditional(seccomp.ScmpSyscall(nr), seccomp.ActNotify, []seccomp.ScmpCondition{c}); err != nil {
			return fmt.Errorf("notify: read-only rule for %s: %w", SyscallName(nr), err)
		}
	}
	return nil
}

// addCloneRules: namespaces are allowed (see docs/kernel.md: under Landlock
// a new user+mount namespace cannot change the mount topology, so it cannot
// alias a path), so clone needs no rule today. Kept as the one place to
// change if that decision is reversed.
func addCloneRules(*seccomp.ScmpFilter) error { return nil }

// exportBPF dumps libseccomp's program through a pipe (ExportBPFMem needs
// libseccomp 2.6).
func exportBPF(f *seccomp.ScmpFilter) ([]unix.SockFilter, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("notify: pipe for BPF export: %w", err)
	}
	defer r.Close()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(r)
		done <- result{b, err}
	}()
	expErr := f.ExportBPF(w)
	w.Close()
	res := <-done
	if expErr != nil {
		return nil, fmt.Errorf("notify: exporting BPF: %w", expErr)
	}
	if res.err != nil {
		return nil, fmt.Errorf("notify: reading exported BPF: %w", res.err)
	}
	return decodeSockFilters(res.b)
}

// sockFilterSize is sizeof(struct sock_filter): u16 code, u8 jt, u8 jf, u32 k.
const sockFilterSize = 8

func decodeSockFilters(b []byte) ([]unix.SockFilter, error) {
	if len(b) == 0 || len(b)%sockFilterSize != 0 {
		return nil, fmt.Errorf("notify: exported BPF has %d bytes, not a whole number of %d-byte instructions", len(b), sockFilterSize)
	}
	insns := make([]unix.SockFilter, len(b)/sockFilterSize)
	for i := range insns {
		o := i * sockFilterSize
		// libseccomp writes host byte order; x86_64 is little-endian.
		insns[i] = unix.SockFilter{
			Code: uint16(b[o]) | uint16(b[o+1])<<8,
			Jt:   b[o+2],
			Jf:   b[o+3],
			K:    uint32(b[o+4]) | uint32(b[o+5])<<8 | uint32(b[o+6])<<16 | uint32(b[o+7])<<24,
		}
	}
	return insns, nil
}

// maxInsns is BPF_MAXINSNS; the kernel refuses longer programs.
const maxInsns = 4096

func (p *Program) validate() error {
	if p == nil || len(p.Insns) == 0 {
		return errors.New("notify: empty seccomp program")
	}
	if len(p.Insns) > maxInsns {
		return fmt.Errorf("notify: seccomp program has %d instructions, the kernel allows %d", len(p.Insns), maxInsns)
	}
	return nil
}
