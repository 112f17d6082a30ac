package abiprobe

import (
	"errors"
	"os/exec"
	"runtime"
	"testing"
)

// TestStaticELF: the trial's executable machinery works, shown with its
// native twin (getpid through the 64-bit syscall instruction), which every
// x86_64 kernel runs: it must exit 42. So a SIGSEGV from the i386 trial is
// the kernel refusing int 0x80, not a broken program.
func TestStaticELF(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x86_64 only")
	}
	path, cleanup, err := install(getpidProgram(0x0f, 0x05, 39))
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	err = exec.Command(path).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitWorks {
		t.Fatalf("native getpid program: %v, want exit %d", err, exitWorks)
	}
}

// TestI386 reports what this kernel does; it must not be an error.
func TestI386(t *testing.T) {
	r, err := I386()
	if err != nil {
		t.Fatalf("the trial itself failed: %v", err)
	}
	t.Logf("i386 syscalls: works=%v filtered=%v (%s)", r.Works, r.Filtered, r.Why)
}
