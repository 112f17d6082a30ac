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
// policy or of which syscalls matter: the caller (the supervisor's syscall
// table) says which calls to send to it and which to refuse in BPF, and
// notify adds the architecture checks.
type FilterOptions struct {
	// Rules say which syscalls are sent to the supervisor or refused in
	// BPF, and under which argument conditions.
	Rules []Rule
	// Never are syscalls no rule may notify: the init stage makes them
	// between loading the filter and the supervisor taking its listener
	// (it writes where the listener is, reads the answer, closes its
	// copy), and a notified one would block forever on a listener nobody
	// reads yet. A rule that would notify one is an error.
	Never []int32
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
	// CmpEqual: args[Arg] == Value, all 64 bits (a long, as ptrace's
	// request).
	CmpEqual
)

// Program is a classic BPF seccomp program for x86_64.
type Program struct {
	Insns []unix.SockFilter
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
		if r.Errno == 0 && slices.Contains(o.Never, r.Nr) {
			return nil, fmt.Errorf("notify: %s must not be notified: the init stage hands the listener over with it", SyscallName(r.Nr))
		}
		if err := addRule(f, r); err != nil {
			return nil, err
		}
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

// addRule adds one caller's rule: libseccomp ANDs the conditions of one
// rule, and several rules for one syscall are alternatives.
func addRule(f *seccomp.ScmpFilter, r Rule) error {
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
	case CmpEqual:
		return seccomp.MakeCondition(c.Arg, seccomp.CompareEqual, c.Value)
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
