// Package abiprobe finds out whether the running kernel accepts i386
// syscalls (int 0x80) from a 64-bit process, by trying one in a child
// process. Reading the kernel configuration is not enough: a kernel built
// with CONFIG_IA32_EMULATION=y can still refuse them (a boot parameter,
// or a hypervisor that does not deliver int 0x80: a bare int 0x80 then
// raises SIGSEGV, as on the project's test machines).
//
// The child is a tiny static x86_64 ELF built here, run from a memfd (or a
// temporary file when memfds may not be executed), so the trial needs no
// compiler and installs nothing in the calling process.
package abiprobe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Result is what trying an i386 syscall showed.
type Result struct {
	// Works: getpid through int 0x80 returned the child's pid.
	Works bool
	// Filtered: a seccomp filter already on this process killed the
	// trial (SIGSYS), so the kernel's own answer is unknown.
	Filtered bool
	// Why says what happened, for people.
	Why string
}

// I386 tries getpid through int 0x80 in a child process. The error is
// for a trial that could not be made or ended in a way no kernel answer
// explains (the probe itself is broken); a kernel that refuses the ABI is
// a Result, not an error.
func I386() (Result, error) {
	if runtime.GOARCH != "amd64" {
		return Result{Why: "not an x86_64 machine"}, nil
	}
	path, cleanup, err := install(i386Program())
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	cmd := exec.Command(path)
	err = cmd.Run()
	if cmd.ProcessState == nil {
		return Result{}, fmt.Errorf("abiprobe: running the i386 trial: %w", err)
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		return Result{}, fmt.Errorf("abiprobe: running the i386 trial: %w", err)
	}
	switch {
	case ws.Exited() && ws.ExitStatus() == exitWorks:
		return Result{Works: true, Why: "int 0x80 getpid returned the pid"}, nil
	case ws.Exited() && ws.ExitStatus() == exitFailed:
		return Result{Why: "int 0x80 getpid returned an error"}, nil
	case ws.Signaled() && ws.Signal() == unix.SIGSEGV:
		return Result{Why: "the kernel refuses i386 syscalls: int 0x80 raised SIGSEGV"}, nil
	case ws.Signaled() && ws.Signal() == unix.SIGSYS:
		return Result{Filtered: true, Why: "a seccomp filter on this process kills i386 syscalls"}, nil
	}
	return Result{}, fmt.Errorf("abiprobe: the i386 trial ended unexpectedly (%v, %v)", cmd.ProcessState, err)
}

const (
	exitWorks  = 42
	exitFailed = 1
)

// i386Program is a static x86_64 ELF executable that makes getpid (20)
// through int 0x80 and exits 42 when it returned a pid, 1 otherwise.
func i386Program() []byte { return getpidProgram(0xcd, 0x80, 20) }

// getpidProgram makes getpid (number nr) with the two-byte instruction
// op0 op1 (int 0x80, or syscall for the native twin the tests use).
func getpidProgram(op0, op1, nr byte) []byte {
	code := []byte{
		0xb8, nr, 0x00, 0x00, 0x00, // mov eax, nr
		op0, op1, // int 0x80 / syscall
		0x85, 0xc0, // test eax, eax
		0x7e, 0x07, // jle fail
		0xbf, exitWorks, 0x00, 0x00, 0x00, // mov edi, 42
		0xeb, 0x05, // jmp exit
		0xbf, exitFailed, 0x00, 0x00, 0x00, // fail: mov edi, 1
		0xb8, 0xe7, 0x00, 0x00, 0x00, // exit: mov eax, 231 (exit_group)
		0x0f, 0x05, // syscall
	}
	return staticELF(code)
}

// staticELF wraps x86_64 machine code in the smallest executable the
// kernel loads: an ELF header and one read+execute PT_LOAD segment mapping
// the whole file at 0x400000, entry right after the headers.
func staticELF(code []byte) []byte {
	const (
		base    = 0x400000
		ehsize  = 64
		phsize  = 56
		headers = ehsize + phsize
	)
	b := make([]byte, headers+len(code))
	le := binary.LittleEndian
	copy(b, []byte{0x7f, 'E', 'L', 'F', 2 /* 64-bit */, 1 /* little-endian */, 1 /* version */})
	le.PutUint16(b[16:], 2)    // ET_EXEC
	le.PutUint16(b[18:], 0x3e) // EM_X86_64
	le.PutUint32(b[20:], 1)    // EV_CURRENT
	le.PutUint64(b[24:], base+headers)
	le.PutUint64(b[32:], ehsize) // program headers right after
	le.PutUint16(b[52:], ehsize)
	le.PutUint16(b[54:], phsize)
	le.PutUint16(b[56:], 1)
	ph := b[ehsize:]
	le.PutUint32(ph[0:], 1) // PT_LOAD
	le.PutUint32(ph[4:], 5) // PF_R|PF_X
	le.PutUint64(ph[16:], base)
	le.PutUint64(ph[24:], base)
	le.PutUint64(ph[32:], uint64(len(b)))
	le.PutUint64(ph[40:], uint64(len(b)))
	le.PutUint64(ph[48:], 0x1000)
	copy(b[headers:], code)
	return b
}

// install puts the program where it can be executed: a memfd, or a
// temporary file when memfds may not be executed (vm.memfd_noexec).
func install(prog []byte) (path string, cleanup func(), err error) {
	fd, err := unix.MemfdCreate("permwrap-abiprobe", unix.MFD_CLOEXEC)
	if err == nil {
		f := os.NewFile(uintptr(fd), "abiprobe")
		if _, err := f.Write(prog); err != nil {
			f.Close()
			return "", nil, fmt.Errorf("abiprobe: writing the trial: %w", err)
		}
		p := "/proc/self/fd/" + strconv.Itoa(fd)
		// The child execs its own inherited copy of the fd: the path is
		// resolved before close-on-exec closes it.
		if unix.Access(p, unix.X_OK) == nil && !memfdNoexec() {
			return p, func() { f.Close() }, nil
		}
		f.Close()
	}
	f, err := os.CreateTemp("", "permwrap-abiprobe-")
	if err != nil {
		return "", nil, fmt.Errorf("abiprobe: no memfd and no temporary file for the trial: %w", err)
	}
	name := f.Name()
	cleanup = func() { os.Remove(name) }
	_, werr := f.Write(prog)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(name, 0o700)); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("abiprobe: writing the trial: %w", err)
	}
	return name, cleanup, nil
}

// memfdNoexec reports vm.memfd_noexec=2 (memfds may never be executed).
func memfdNoexec() bool {
	b, err := os.ReadFile("/proc/sys/vm/memfd_noexec")
	return err == nil && len(b) > 0 && b[0] == '2'
}
