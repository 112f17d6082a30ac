package notify

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/bpftest"
)

const (
	auditArchI386 = 0x40000003
	x32Bit        = 0x40000000
)

// vmRun runs p in x/net/bpf's VM on one seccomp_data.
func vmRun(t *testing.T, p *Program, nr int32, arch uint32, args [6]uint64) uint32 {
	t.Helper()
	vm, err := bpftest.New(p.Insns)
	if err != nil {
		t.Fatal(err)
	}
	ret, err := vm.Run(nr, arch, args)
	if err != nil {
		t.Fatalf("VM run: %v", err)
	}
	return ret
}

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retNotify = unix.SECCOMP_RET_USER_NOTIF
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
)

func retErrno(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }

func retString(r uint32) string { return bpftest.Action(r) }

type vmCase struct {
	name string
	nr   int32
	arch uint32
	args [6]uint64
	want uint32
}

func buildOrFail(t *testing.T, o FilterOptions) *Program {
	t.Helper()
	p, err := BuildFilter(o)
	if err != nil {
		t.Fatalf("BuildFilter(%+v): %v", o, err)
	}
	return p
}

func runVMCases(t *testing.T, p *Program, cases []vmCase) {
	t.Helper()
	for _, c := range cases {
		arch := c.arch
		if arch == 0 {
			arch = unix.AUDIT_ARCH_X86_64
		}
		if got := vmRun(t, p, c.nr, arch, c.args); got != c.want {
			t.Errorf("%s: nr %d arch %#x args %#x: got %s, want %s", c.name, c.nr, arch, c.args, retString(got), retString(c.want))
		}
	}
}

// hi puts garbage in the upper half of a 32-bit argument: the kernel
// ignores it for int arguments, so the filter must too.
const hi = 0xdead_beef_0000_0000

// atFdcwd is AT_FDCWD as the kernel sees it in a 64-bit register.
const atFdcwd = uint64(0xffff_ffff_ffff_ff9c)

func TestFilterVMDefault(t *testing.T) {
	p := buildOrFail(t, FilterOptions{Rules: testRules(false)})
	cases := []vmCase{
		{name: "i386 open via int 0x80", nr: 5, arch: auditArchI386, want: retKill},
		{name: "i386 getpid", nr: 20, arch: auditArchI386, want: retKill},
		{name: "unknown arch", nr: unix.SYS_GETPID, arch: 0xdeadbeef, want: retKill},
		{name: "x32 openat", nr: x32Bit | unix.SYS_OPENAT, want: retKill},
		{name: "x32 getpid", nr: x32Bit | unix.SYS_GETPID, want: retKill},
		{name: "x32 execve (x32 number 520)", nr: x32Bit | 520, want: retKill},
		{name: "getpid", nr: unix.SYS_GETPID, want: retAllow},
		{name: "read", nr: unix.SYS_READ, want: retAllow},
		{name: "write", nr: unix.SYS_WRITE, want: retAllow},
		{name: "close", nr: unix.SYS_CLOSE, want: retAllow},
		{name: "clone plain", nr: unix.SYS_CLONE, args: [6]uint64{unix.CLONE_VM | unix.CLONE_THREAD}, want: retAllow},
		{name: "openat O_RDONLY notified by default", nr: unix.SYS_OPENAT, args: [6]uint64{atFdcwd, 0x1000, unix.O_RDONLY}, want: retNotify},
		{name: "invalid nr -1", nr: -1, want: retAllow},
	}
	for _, nr := range testNotified {
		cases = append(cases, vmCase{name: SyscallName(nr), nr: nr, want: retNotify})
	}
	runVMCases(t, p, cases)
}

func TestFilterVMSkipReadOnlyOpens(t *testing.T) {
	p := buildOrFail(t, FilterOptions{Rules: testRules(true)})
	openat := func(flags uint64) [6]uint64 { return [6]uint64{atFdcwd, 0x1000, flags, 0} }
	open := func(flags uint64) [6]uint64 { return [6]uint64{0x1000, flags, 0} }
	cases := []vmCase{
		{name: "openat O_RDONLY", nr: unix.SYS_OPENAT, args: openat(unix.O_RDONLY), want: retAllow},
		{name: "openat O_RDONLY|O_CLOEXEC|O_DIRECTORY|O_NOFOLLOW", nr: unix.SYS_OPENAT, args: openat(unix.O_RDONLY | unix.O_CLOEXEC | unix.O_DIRECTORY | unix.O_NOFOLLOW), want: retAllow},
		{name: "openat O_RDONLY high garbage", nr: unix.SYS_OPENAT, args: openat(hi | unix.O_RDONLY), want: retAllow},
		{name: "openat O_WRONLY", nr: unix.SYS_OPENAT, args: openat(unix.O_WRONLY), want: retNotify},
		{name: "openat O_RDWR", nr: unix.SYS_OPENAT, args: openat(unix.O_RDWR), want: retNotify},
		{name: "openat O_ACCMODE (3)", nr: unix.SYS_OPENAT, args: openat(unix.O_ACCMODE), want: retNotify},
		{name: "openat O_RDONLY|O_CREAT", nr: unix.SYS_OPENAT, args: openat(unix.O_CREAT), want: retNotify},
		{name: "openat O_RDONLY|O_TRUNC", nr: unix.SYS_OPENAT, args: openat(unix.O_TRUNC), want: retNotify},
		{name: "openat O_TMPFILE", nr: unix.SYS_OPENAT, args: openat(unix.O_TMPFILE | unix.O_RDWR), want: retNotify},
		{name: "openat __O_TMPFILE alone", nr: unix.SYS_OPENAT, args: openat(oTmpfileBit), want: retNotify},
		{name: "openat O_PATH", nr: unix.SYS_OPENAT, args: openat(unix.O_PATH), want: retNotify},
		{name: "openat O_WRONLY high garbage", nr: unix.SYS_OPENAT, args: openat(hi | unix.O_WRONLY), want: retNotify},
		{name: "open O_RDONLY", nr: unix.SYS_OPEN, args: open(unix.O_RDONLY), want: retAllow},
		{name: "open O_WRONLY|O_APPEND", nr: unix.SYS_OPEN, args: open(unix.O_WRONLY | unix.O_APPEND), want: retNotify},
		{name: "open O_CREAT", nr: unix.SYS_OPEN, args: open(unix.O_CREAT), want: retNotify},
		// open's flags are args[1]: a read-only-looking args[2] must not matter.
		{name: "open O_WRONLY, mode 0", nr: unix.SYS_OPEN, args: [6]uint64{0x1000, unix.O_WRONLY, 0}, want: retNotify},
		{name: "openat2 always notified", nr: unix.SYS_OPENAT2, args: openat(unix.O_RDONLY), want: retNotify},
		{name: "creat always notified", nr: unix.SYS_CREAT, want: retNotify},
		{name: "execve", nr: unix.SYS_EXECVE, want: retNotify},
		{name: "i386 open still killed", nr: 5, arch: auditArchI386, args: [6]uint64{0x1000, unix.O_RDONLY}, want: retKill},
	}
	runVMCases(t, p, cases)
}

func TestFilterString(t *testing.T) {
	p := buildOrFail(t, FilterOptions{Rules: testRules(false)})
	if p.Len() == 0 || p.Len() > maxInsns {
		t.Fatalf("Len() = %d", p.Len())
	}
	s := p.String()
	// The arch check must come first: load arch (offset 4) and compare.
	if want := "0000: ld [4]\n"; len(s) < len(want) || s[:len(want)] != want {
		t.Errorf("program does not start with the arch load:\n%s", s)
	}
}

func TestSyscallName(t *testing.T) {
	for nr, want := range map[int32]string{257: "openat", 59: "execve", 463: "setxattrat", 469: "file_setattr", 5000: "syscall_5000", -1: "syscall_-1"} {
		if got := SyscallName(nr); got != want {
			t.Errorf("SyscallName(%d) = %q, want %q", nr, got, want)
		}
	}
}

func TestDecodeSockFiltersRejectsPartial(t *testing.T) {
	for _, n := range []int{0, 7, 9} {
		if _, err := decodeSockFilters(make([]byte, n)); err == nil {
			t.Errorf("decodeSockFilters(%d bytes): no error", n)
		}
	}
}

// Len is the number of instructions (the kernel's limit is 4096).
func (p *Program) Len() int { return len(p.Insns) }

// String disassembles the program, one instruction a line.
func (p *Program) String() string {
	var b strings.Builder
	for i, ins := range p.Insns {
		raw := bpf.RawInstruction{Op: ins.Code, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
		fmt.Fprintf(&b, "%04d: %v\n", i, raw.Disassemble())
	}
	return b.String()
}

// TestFilterConditions: every comparison a Rule can make, alone and
// combined, with garbage in the upper half where the comparison is on an
// int.
func TestFilterConditions(t *testing.T) {
	const nrA, nrB, nrC = unix.SYS_SENDTO, unix.SYS_PRLIMIT64, unix.SYS_PTRACE
	p := buildOrFail(t, FilterOptions{Rules: []Rule{
		// sendto with a destination (args[4] != NULL) and flags with bit 0x40 clear... or flags exactly 1
		{Nr: nrA, When: []Match{
			{{Arg: 4, Op: CmpNotEqual, Value: 0}, {Arg: 3, Op: CmpMaskedEqual, Mask: 0x40, Value: 0}},
			{{Arg: 3, Op: CmpMaskedEqual, Mask: 0xffffffff, Value: 1}},
		}},
		{Nr: nrB, Errno: unix.EPERM, When: []Match{{{Arg: 0, Op: CmpNotEqual, Value: 0}}}},
		// a long compared in all 64 bits
		{Nr: nrC, Errno: unix.EPERM, When: []Match{{{Arg: 0, Op: CmpEqual, Value: hi | 5}}}},
	}})
	runVMCases(t, p, []vmCase{
		{name: "dest, flags 0", nr: nrA, args: [6]uint64{0, 0, 0, 0, 0x1000}, want: retNotify},
		{name: "dest, flags 0x40", nr: nrA, args: [6]uint64{0, 0, 0, 0x40, 0x1000}, want: retAllow},
		{name: "dest in the upper half only", nr: nrA, args: [6]uint64{0, 0, 0, 0, 0x1_0000_0000}, want: retNotify},
		{name: "no dest, flags 0", nr: nrA, want: retAllow},
		{name: "no dest, flags 1", nr: nrA, args: [6]uint64{0, 0, 0, 1, 0}, want: retNotify},
		{name: "no dest, flags 1 with upper garbage", nr: nrA, args: [6]uint64{0, 0, 0, hi | 1, 0}, want: retNotify},
		{name: "errno rule, pid set", nr: nrB, args: [6]uint64{42}, want: retErrno(unix.EPERM)},
		{name: "errno rule, pid 0", nr: nrB, want: retAllow},
		{name: "64-bit equal", nr: nrC, args: [6]uint64{hi | 5}, want: retErrno(unix.EPERM)},
		{name: "64-bit equal, low half only", nr: nrC, args: [6]uint64{5}, want: retAllow},
		{name: "64-bit equal, other high half", nr: nrC, args: [6]uint64{1<<32 | 5}, want: retAllow},
	})
}

// TestFilterRefusesHandoffNotify: a rule that would notify a syscall the
// caller says must never be (the init stage's hand-off) is refused.
func TestFilterRefusesHandoffNotify(t *testing.T) {
	never := []int32{unix.SYS_WRITE, unix.SYS_READ, unix.SYS_CLOSE}
	for _, nr := range never {
		if _, err := BuildFilter(FilterOptions{Rules: []Rule{{Nr: nr}}, Never: never}); err == nil {
			t.Errorf("a notify rule for %s was accepted", SyscallName(nr))
		}
		if _, err := BuildFilter(FilterOptions{Rules: []Rule{{Nr: nr, When: []Match{{{Arg: 0, Op: CmpEqual, Value: 1}}}}}, Never: never}); err == nil {
			t.Errorf("a conditional notify rule for %s was accepted", SyscallName(nr))
		}
		if _, err := BuildFilter(FilterOptions{Rules: []Rule{{Nr: nr, Errno: unix.EPERM}}, Never: never}); err != nil {
			t.Errorf("an errno rule for %s was refused: %v", SyscallName(nr), err)
		}
	}
	if _, err := BuildFilter(FilterOptions{Rules: []Rule{{Nr: unix.SYS_OPENAT, When: []Match{{{Arg: 6, Op: CmpNotEqual}}}}}}); err == nil {
		t.Error("a condition on argument 6 was accepted")
	}
}
