package supervisor

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/testutil"
)

// startSleeper starts `sleep 60` with Pdeathsig from the calling thread.
func startSleeper(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "60")
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.Start(); err != nil {
		t.Error(err)
		return nil
	}
	return c
}

// TestPdeathsigFollowsTheForkingThread is the mechanism behind issue 10's
// SIGKILL, shown bare: Pdeathsig fires when the *thread* that forked the
// child ends, and Go ends a thread whose goroutine exits while locked to
// it. The twin is the watchdog's rule: a child forked from a goroutine
// that stays locked survives any number of other locked goroutines
// exiting.
func TestPdeathsigFollowsTheForkingThread(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep")
	}
	waitKilled := func(c *exec.Cmd, bound time.Duration) (killed bool) {
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case <-done:
			ws := c.ProcessState.Sys().(syscall.WaitStatus)
			return ws.Signaled() && ws.Signal() == syscall.SIGKILL
		case <-time.After(testutil.Scale(bound)):
			_ = c.Process.Kill()
			<-done
			return false
		}
	}

	// Bare: the forking goroutine exits locked; its thread is retired and
	// the child is killed. Go never ends the main thread (it parks it
	// instead), so an attempt whose goroutine happened to run there proves
	// nothing: retry.
	got := make(chan *exec.Cmd)
	killed := false
	for attempt := 0; attempt < 20 && !killed; attempt++ {
		go func() {
			runtime.LockOSThread() // never unlocked: the runtime ends this thread
			got <- startSleeper(t)
		}()
		c := <-got
		if c == nil {
			t.FailNow()
		}
		killed = waitKilled(c, 2*time.Second)
	}
	if !killed {
		t.Fatal("bare: the child of a retired thread was never killed in 20 attempts; the mechanism is not what issue 10 says")
	}

	// Twin: the forking goroutine stays locked while others come and go
	// locked (as notify's bind emulation does).
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		got <- startSleeper(t)
		<-release
	}()
	c := <-got
	if c == nil {
		t.FailNow()
	}
	for i := 0; i < 50; i++ {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(done)
		}()
		<-done
	}
	time.Sleep(200 * time.Millisecond)
	if err := c.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the child of a thread locked for good died: %v", err)
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	close(release)
}

func TestReadSpec(t *testing.T) {
	write := func(s string) *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			w.WriteString(s)
			w.Close()
		}()
		return r
	}
	spec, err := readSpec(write(`{"Argv":["sh","-c","x"],"Env":["A_TOKEN=1"]}`))
	if err != nil || len(spec.Argv) != 3 || spec.Env[0] != "A_TOKEN=1" {
		t.Errorf("good spec: %+v, %v", spec, err)
	}
	// Nothing written: the supervisor gave up, and said why itself.
	if _, err := readSpec(write(``)); !errors.Is(err, errNoSpec) {
		t.Errorf("empty spec: %v, want errNoSpec", err)
	}
	for _, bad := range []string{``, `{`, `{"Argv":[]}`, `[]`, `{"Argv":["x"]} trailing`} {
		if _, err := readSpec(write(bad)); err == nil {
			t.Errorf("spec %q was accepted", bad)
		}
	}
}

func TestHandoffData(t *testing.T) {
	b := handoffData(true, 4242, 7)
	if len(b) != handoffLen || b[0] != handoffWaitKillable || binary.LittleEndian.Uint32(b[1:]) != 4242 || binary.LittleEndian.Uint32(b[5:]) != 7 {
		t.Errorf("handoffData = %v", b)
	}
	if b := handoffData(false, 1, 3); b[0] != 0 {
		t.Errorf("flags without WaitKillable = %d", b[0])
	}
}

func TestPpidOf(t *testing.T) {
	if got := ppidOf(os.Getpid()); got != os.Getppid() {
		t.Errorf("ppidOf(self) = %d, want %d", got, os.Getppid())
	}
	// A command name with ") 1 (" in it must not confuse the parse.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	odd := t.TempDir() + "/a) 1 (b"
	if err := os.Symlink(sleep, odd); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(odd, "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	if got := ppidOf(c.Process.Pid); got != os.Getpid() {
		t.Errorf("ppidOf(child named %q) = %d, want %d", "a) 1 (b", got, os.Getpid())
	}
	if got := ppidOf(1 << 30); got != -1 {
		t.Errorf("ppidOf(no such pid) = %d, want -1", got)
	}
}
