package pin

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

func requirePidfd(t *testing.T) {
	t.Helper()
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err == nil {
		unix.Close(fd)
	}
	kerneltest.Need(t, "pidfd_open", err)
}

// A pidfd names one process instance: alive while it runs, exited once it
// is a zombie (not yet reaped) and after, and never again alive whatever
// later gets its pid.
func TestPidfdProcess(t *testing.T) {
	requirePidfd(t)
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		kerneltest.Skipf(t, "cannot start sleep: %v", err)
	}
	p, err := OpenPidfd(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.Alive() {
		t.Fatal("a running process reads as exited")
	}
	// Killed but not reaped: a zombie has exited.
	if err := unix.Kill(cmd.Process.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.Alive() {
		if time.Now().After(deadline) {
			t.Fatal("a killed (zombie) process still reads as alive")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Wait()
	if p.Alive() {
		t.Fatal("a reaped process reads as alive")
	}
	if _, err := OpenPidfd(cmd.Process.Pid); err == nil {
		// The pid may have been reused already; that is not this test's
		// concern. Only a missing process must say ESRCH.
	} else if !errors.Is(err, unix.ESRCH) {
		t.Errorf("opening a reaped pid: %v, want ESRCH", err)
	}
}

// A thread's pidfd gives its process, and reads exited when that thread
// ends while its process goes on.
func TestPidfdThread(t *testing.T) {
	requirePidfd(t)
	// A thread of our own that ends while the process goes on: a locked
	// goroutine's thread exits with it (except the main thread, which
	// the runtime keeps: try again until the thread is another).
	var tid int
	var release chan struct{}
	var wg sync.WaitGroup
	for try := 0; ; try++ {
		tidc := make(chan int)
		release = make(chan struct{})
		wg.Add(1)
		go func(release chan struct{}) {
			defer wg.Done()
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			tidc <- unix.Gettid()
			<-release
		}(release)
		if tid = <-tidc; tid != os.Getpid() {
			break
		}
		if try == 10 {
			t.Fatal("every locked goroutine ran on the main thread")
		}
		defer close(release) // keep the main thread's goroutine parked
	}
	p, tgid, err := OpenThread(tid)
	if err != nil {
		close(release)
		kerneltest.Need(t, "pidfd for threads (PIDFD_THREAD)", err)
	}
	defer p.Close()
	if tgid != os.Getpid() {
		t.Errorf("thread %d: process %d, want %d", tid, tgid, os.Getpid())
	}
	if !p.Alive() {
		t.Fatal("a running thread reads as exited")
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for p.Alive() {
		if time.Now().After(deadline) {
			t.Fatal("an ended thread still reads as alive")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A closed Pidfd reads as exited, and concurrent checks never poll a
// closed (possibly reused) descriptor.
func TestPidfdClosed(t *testing.T) {
	requirePidfd(t)
	p, err := OpenPidfd(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				p.Alive()
			}
		}()
	}
	p.Close()
	wg.Wait()
	if p.Alive() {
		t.Fatal("a closed pidfd reads as alive")
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// A Process is a Pidfd: both views of exit agree on a live, a killed and a
// closed process, Kill goes through the pidfd, and a closed Process says
// "not exited, no error" as before (it is never asked after Close).
func TestProcessIsPidfd(t *testing.T) {
	requirePidfd(t)
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		kerneltest.Skipf(t, "cannot start sleep: %v", err)
	}
	defer cmd.Wait()
	p, err := OpenProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if p.Pid() != cmd.Process.Pid {
		t.Fatalf("Pid() = %d, want %d", p.Pid(), cmd.Process.Pid)
	}
	if gone, err := p.Exited(); gone || err != nil {
		t.Fatalf("a running process: Exited() = %v, %v", gone, err)
	}
	if p.Pidfd.Exited() {
		t.Fatal("a running process reads as exited through its Pidfd")
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		gone, err := p.Exited()
		if err != nil {
			t.Fatal(err)
		}
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a killed (zombie) process still reads as running")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !p.Pidfd.Exited() {
		t.Fatal("a killed process reads as alive through its Pidfd")
	}
	if err := p.Kill(); err != nil {
		t.Errorf("killing a zombie: %v, want nil", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if gone, err := p.Exited(); gone || err != nil {
		t.Errorf("closed Process: Exited() = %v, %v, want false, nil", gone, err)
	}
	if !p.Pidfd.Exited() {
		t.Error("a closed Pidfd reads as alive")
	}
	var nilp *Process
	if err := nilp.Close(); err != nil {
		t.Errorf("closing a nil Process: %v", err)
	}
}
