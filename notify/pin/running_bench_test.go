package pin

import (
	"os/exec"
	"testing"
)

// BenchmarkProcessRunning: one Running (exe, cmdline, exe, exited) of a
// live process, as exec verification makes several per exec.
func BenchmarkProcessRunning(b *testing.B) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		b.Skipf("cannot start sleep: %v", err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	p, err := OpenProcess(cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	for b.Loop() {
		if _, _, err := p.Running(); err != nil {
			b.Fatal(err)
		}
	}
}
