// Package bpftest runs a seccomp BPF program in golang.org/x/net/bpf's
// virtual machine on a fake seccomp_data, so filters can be tested on any
// machine, without loading them (as runc's patchbpf tests do).
package bpftest

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// VM is a loaded program.
type VM struct{ vm *bpf.VM }

// New loads insns; every instruction must be one the VM models.
func New(insns []unix.SockFilter) (*VM, error) {
	prog := make([]bpf.Instruction, len(insns))
	for i, in := range insns {
		prog[i] = bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}.Disassemble()
		if _, ok := prog[i].(bpf.RawInstruction); ok {
			return nil, fmt.Errorf("instruction %d (%+v) is not one the VM models", i, in)
		}
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		return nil, err
	}
	return &VM{vm}, nil
}

// Run returns the program's action for one syscall. The VM loads words
// big-endian while seccomp loads them in host order, so each 32-bit word
// is stored big-endian: a program that does only 32-bit absolute loads (as
// seccomp programs must) then sees the values the kernel would.
func (v *VM) Run(nr int32, arch uint32, args [6]uint64) (uint32, error) {
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], uint32(nr))
	binary.BigEndian.PutUint32(data[4:], arch)
	// ip (8..16) stays zero.
	for i, a := range args {
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[16+8*i+4:], uint32(a>>32))
	}
	ret, err := v.vm.Run(data)
	return uint32(ret), err
}

// Action names a seccomp return value, for test messages.
func Action(r uint32) string {
	switch r & unix.SECCOMP_RET_ACTION_FULL {
	case unix.SECCOMP_RET_ALLOW:
		return "ALLOW"
	case unix.SECCOMP_RET_USER_NOTIF:
		return "USER_NOTIF"
	case unix.SECCOMP_RET_KILL_PROCESS:
		return "KILL_PROCESS"
	case unix.SECCOMP_RET_ERRNO:
		return fmt.Sprintf("ERRNO(%s)", unix.ErrnoName(unix.Errno(r&unix.SECCOMP_RET_DATA)))
	}
	return fmt.Sprintf("%#x", r)
}
