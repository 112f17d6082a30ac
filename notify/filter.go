package notify

// The filter is built with libseccomp (which owns the architecture and x32
// checks and the argument comparisons) and exported as a raw program, so it
// can be loaded with flags libseccomp 2.5.4 does not know (see Install).

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// FilterOptions is what the filter is built from. notify knows nothing of
// policy or of which syscalls matter to it: the caller (the supervisor's
// syscall table) says which calls to send to it, and notify adds the
// architecture checks and the side doors it always shuts.
type FilterOptions struct {
	// Rules say which syscalls are sent to the supervisor (or refused in
	// BPF), and under which argument conditions.
	Rules []Rule
	// DenyPtrace makes every ptrace fail with EPERM. Without it, ptrace
	// is allowed (Landlock confines it to the sandbox's own processes),
	// except the one option that would switch seccomp off for a tracee:
	// PTRACE_O_SUSPEND_SECCOMP, refused in PTRACE_SEIZE and
	// PTRACE_SETOPTIONS (docs/security.md says why the rest is sound).
	DenyPtrace bool
}

// Rule sends one syscall to the supervisor (SECCOMP_RET_USER_NOTIF), or,
// with Errno set, fails it in BPF with that errno. With When empty it
// applies to every call; otherwise to the calls where any one Match holds.
// Calls no rule matches are allowed (unless a side door below refuses
// them).
type Rule struct {
	Nr    int32
	Errno unix.Errno `json:",omitempty"`
	When  []Match    `json:",omitempty"`
}

// Match holds when all of its conditions do.
type Match []Cond

// Cond compares one syscall argument.
type Cond struct {
	Arg   uint   // 0..5
	Op    CmpOp  // how Value is compared
	Mask  uint64 `json:",omitempty"` // CmpMaskedEqual: args[Arg] & Mask == Value
	Value uint64
}

// CmpOp is a comparison a Cond makes.
type CmpOp uint8

const (
	// CmpMaskedEqual: args[Arg] & Mask == Value. For int arguments use a
	// mask within the low 32 bits: the kernel ignores the upper half of an
	// int register, so the filter must too.
	CmpMaskedEqual CmpOp = iota + 1
	// CmpNotEqual: args[Arg] != Value, all 64 bits (pointers).
	CmpNotEqual
)

// handoffSyscalls must never be notified: between loading the filter and
// the supervisor taking its listener (pidfd_getfd), the init stage makes
// these calls — it writes where the listener is, reads the supervisor's
// answer, closes its copy — and a notified one would block forever on a
// listener nobody reads yet. (sendmsg is not among them: the listener is
// not sent with SCM_RIGHTS, so sendmsg can be watched.)
var handoffSyscalls = []int32{unix.SYS_WRITE, unix.SYS_READ, unix.SYS_CLOSE}

// Program is a classic BPF seccomp program for x86_64.
type Program struct {
	Insns []unix.SockFilter
}

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
	// Files the kernel opens and writes on the caller's behalf, by a path
	// it resolves itself (docs/security.md, "Kernel-opened files"):
	// process accounting appends to any file, swap and quota files are
	// written by the kernel. All need privileges; the EPERM is what an
	// unprivileged caller gets. uselib opens a library by path (and no
	// current kernel can load one): ENOSYS, as a kernel without it.
	{unix.SYS_ACCT, unix.EPERM},
	{unix.SYS_SWAPON, unix.EPERM},
	{unix.SYS_SWAPOFF, unix.EPERM},
	{unix.SYS_QUOTACTL, unix.EPERM},
	{unix.SYS_QUOTACTL_FD, unix.EPERM},
	{unix.SYS_USELIB, unix.ENOSYS},
}

// deniedWhen are side doors closed only for some arguments (registers).
type deniedWhen struct {
	nr    int32
	errno unix.Errno
	why   string
	when  Match
}

// Flags of fanotify_init that make a group report file ids instead of
// opening the file of each event.
const fanReportFidBits = 0x200 | 0x400 // FAN_REPORT_FID | FAN_REPORT_DIR_FID

// deniedConditional are refused in BPF when their condition holds.
var deniedConditional = []deniedWhen{
	// A fanotify group without FID reporting receives, with each event, a
	// file descriptor the kernel opens for it on the file someone else
	// (permwrap included) accessed: reads of files the policy denies,
	// never judged. FID-reporting groups get handles instead, which only
	// open_by_handle_at (refused) could open. EPERM is what an
	// unprivileged caller gets for such a group.
	{nr: unix.SYS_FANOTIFY_INIT, errno: unix.EPERM, why: "event fds are files opened by the kernel",
		when: Match{{Arg: 0, Op: CmpMaskedEqual, Mask: fanReportFidBits, Value: 0}}},
	// TIOCSTI pushes bytes into a terminal's input through any fd of it,
	// read-only included: typed into whatever reads that terminal next,
	// outside the sandbox (the person's shell). TIOCLINUX can paste on a
	// virtual console. EPERM, as with dev.tty.legacy_tiocsti=0.
	{nr: unix.SYS_IOCTL, errno: unix.EPERM, why: "TIOCSTI types into a terminal outside the sandbox",
		when: Match{{Arg: 1, Op: CmpMaskedEqual, Mask: 0xffffffff, Value: unix.TIOCSTI}}},
	{nr: unix.SYS_IOCTL, errno: unix.EPERM, why: "TIOCLINUX can paste into a console",
		when: Match{{Arg: 1, Op: CmpMaskedEqual, Mask: 0xffffffff, Value: unix.TIOCLINUX}}},
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

	for _, r := range o.Rules {
		if err := addRule(f, r); err != nil {
			return nil, err
		}
	}

	denied := deniedSyscalls
	if o.DenyPtrace {
		denied = append(denied[:len(denied):len(denied)], deniedSyscall{unix.SYS_PTRACE, unix.EPERM})
	} else if err := addPtraceRules(f); err != nil {
		return nil, err
	}
	for _, d := range denied {
		if err := f.AddRule(seccomp.ScmpSyscall(d.nr), seccomp.ActErrno.SetReturnCode(int16(d.errno))); err != nil {
			return nil, fmt.Errorf("notify: rule for %s: %w", SyscallName(d.nr), err)
		}
	}
	for _, d := range deniedConditional {
		if err := addRule(f, Rule{Nr: d.nr, Errno: d.errno, When: []Match{d.when}}); err != nil {
			return nil, err
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

// ptraceOSuspendSeccomp is PTRACE_O_SUSPEND_SECCOMP (1 << 21): a tracee
// with it set skips every seccomp filter, ours included. The kernel grants
// it only to a tracer with CAP_SYS_ADMIN that is not itself under seccomp
// (so never to a sandboxed one); the filter refuses it too, so the
// sandbox does not rest on that one check.
const ptraceOSuspendSeccomp = 1 << 21

// addPtraceRules refuses PTRACE_SEIZE and PTRACE_SETOPTIONS whose options
// (the data argument, a register) hold PTRACE_O_SUSPEND_SECCOMP. The
// request is a long: compared in all 64 bits, as the kernel's switch does.
func addPtraceRules(f *seccomp.ScmpFilter) error {
	for _, req := range []uint64{unix.PTRACE_SEIZE, unix.PTRACE_SETOPTIONS} {
		isReq, err := seccomp.MakeCondition(0, seccomp.CompareEqual, req)
		if err != nil {
			return fmt.Errorf("notify: seccomp condition: %w", err)
		}
		suspend, err := seccomp.MakeCondition(3, seccomp.CompareMaskedEqual, ptraceOSuspendSeccomp, ptraceOSuspendSeccomp)
		if err != nil {
			return fmt.Errorf("notify: seccomp condition: %w", err)
		}
		if err := f.AddRuleConditional(seccomp.ScmpSyscall(unix.SYS_PTRACE),
			seccomp.ActErrno.SetReturnCode(int16(unix.EPERM)), []seccomp.ScmpCondition{isReq, suspend}); err != nil {
			return fmt.Errorf("notify: rule for ptrace: %w", err)
		}
	}
	return nil
}

// addRule adds one caller's rule: libseccomp ANDs the conditions of one
// rule, and several rules for one syscall are alternatives.
func addRule(f *seccomp.ScmpFilter, r Rule) error {
	if slices.Contains(handoffSyscalls, r.Nr) && r.Errno == 0 {
		return fmt.Errorf("notify: %s must not be notified: the init stage hands the listener over with it", SyscallName(r.Nr))
	}
	act := seccomp.ActNotify
	if r.Errno != 0 {
		act = seccomp.ActErrno.SetReturnCode(int16(r.Errno))
	}
	sc := seccomp.ScmpSyscall(r.Nr)
	if len(r.When) == 0 {
		if err := f.AddRule(sc, act); err != nil {
			return fmt.Errorf("notify: rule for %s: %w", SyscallName(r.Nr), err)
		}
		return nil
	}
	for _, m := range r.When {
		conds := make([]seccomp.ScmpCondition, 0, len(m))
		for _, c := range m {
			cond, err := c.scmp()
			if err != nil {
				return fmt.Errorf("notify: condition for %s: %w", SyscallName(r.Nr), err)
			}
			conds = append(conds, cond)
		}
		if err := f.AddRuleConditional(sc, act, conds); err != nil {
			return fmt.Errorf("notify: conditional rule for %s: %w", SyscallName(r.Nr), err)
		}
	}
	return nil
}

func (c Cond) scmp() (seccomp.ScmpCondition, error) {
	if c.Arg > 5 {
		return seccomp.ScmpCondition{}, fmt.Errorf("argument %d out of range", c.Arg)
	}
	switch c.Op {
	case CmpMaskedEqual:
		return seccomp.MakeCondition(c.Arg, seccomp.CompareMaskedEqual, c.Mask, c.Value)
	case CmpNotEqual:
		return seccomp.MakeCondition(c.Arg, seccomp.CompareNotEqual, c.Value)
	}
	return seccomp.ScmpCondition{}, fmt.Errorf("unknown comparison %d", c.Op)
}

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
