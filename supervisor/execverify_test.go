package supervisor

import (
	"bytes"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/testutil"
	"github.com/permwrap/permwrap/notify/pin"
)

// heldProcess is a running `sleep 30`, held, with what it runs now.
func heldProcess(t *testing.T) (*pin.Process, pin.Running) {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	proc, err := pin.OpenProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Close() })
	for deadline := time.Now().Add(testutil.Scale(5 * time.Second)); ; time.Sleep(time.Millisecond) {
		run, ok, err := proc.Running()
		if err != nil {
			t.Fatal(err)
		}
		if ok && string(run.Cmdline) == "sleep\x0030\x00" {
			return proc, run
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep did not show its command line: %q", run.Cmdline)
		}
	}
}

// pendingFor registers p with v as continueExec does, its poller due
// after d; started reports whether the poller ran.
func pendingFor(v *execVerifier, p *pendingExec, d time.Duration) (started *atomic.Bool) {
	started = new(atomic.Bool)
	v.add(p, d, func() { started.Store(true); v.poll(p) })
	return started
}

// TestExecPollerNotStartedWhenSettled: an exec settled before the
// poller's first look (at the new image's first call, as about half the
// execs of /bin/true are here) never starts the poller, and the poller's reference is
// dropped with it, so the process's pidfd is released.
func TestExecPollerNotStartedWhenSettled(t *testing.T) {
	proc, run := heldProcess(t)
	v := &execVerifier{pending: map[int]*pendingExec{}}
	p := &pendingExec{proc: proc, tid: proc.Pid(), tgid: proc.Pid(), wantExe: run.Exe, wantCmd: run.Cmdline, startedAt: time.Now()}
	started := pendingFor(v, p, 50*time.Millisecond)
	// The new image's first call: the exec'ing thread returned, and the
	// process runs what was judged.
	if !v.settle(p, true) {
		t.Fatal("settle killed a process that runs what was judged")
	}
	if !p.done.Load() {
		t.Fatal("not settled")
	}
	time.Sleep(100 * time.Millisecond)
	if started.Load() {
		t.Error("the poller started after the exec was settled")
	}
	v.mu.Lock()
	refs, left := p.refs, len(v.pending)
	v.mu.Unlock()
	if refs != 0 || left != 0 {
		t.Errorf("after settling: %d references, %d pending; want 0, 0", refs, left)
	}
	if _, err := proc.Exited(); err != nil {
		t.Errorf("Exited: %v", err)
	}
}

// TestExecPollerVerifiesWithoutACall: an image that makes no call is
// verified by the poller, which starts firstLookAfter the continue.
func TestExecPollerVerifiesWithoutACall(t *testing.T) {
	proc, run := heldProcess(t)
	v := &execVerifier{pending: map[int]*pendingExec{}}
	// What ran before the exec: another image (the exec has happened).
	before := pin.Running{Exe: pin.FileID{Dev: run.Exe.Dev, Ino: run.Exe.Ino + 1}, Cmdline: []byte("sh\x00")}
	p := &pendingExec{proc: proc, tid: proc.Pid(), tgid: proc.Pid(), pre: before, wantExe: run.Exe, wantCmd: run.Cmdline, startedAt: time.Now()}
	started := pendingFor(v, p, firstLookAfter)
	for deadline := time.Now().Add(testutil.Scale(5 * time.Second)); !p.done.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the poller did not verify the exec")
		}
	}
	if !started.Load() {
		t.Fatal("verified, but not by the poller")
	}
	if ok, err := proc.Exited(); err != nil || ok {
		t.Errorf("the verified process: exited %v, %v; want running", ok, err)
	}
}

// TestReadEnviron: readEnviron gives exactly the environment the process
// was started with, for one that fits its first buffer and for one that
// must grow it (a 100 kB variable), and reports a process that is gone.
// The process's environment is published a moment after os/exec's Start
// returns (at the close-on-exec of its status pipe, before the kernel
// copies the environment), so the test waits for it.
func TestReadEnviron(t *testing.T) {
	for _, size := range []int{10, 100 << 10} {
		cmd := exec.Command("sleep", "30")
		cmd.Env = []string{"A=1", "LD_LIBRARY_PATH=/x", "BIG=" + strings.Repeat("b", size)}
		want := []byte(strings.Join(cmd.Env, "\x00") + "\x00")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		small := make([]byte, 16)
		var got []byte
		var err error
		for deadline := time.Now().Add(testutil.Scale(5 * time.Second)); ; time.Sleep(time.Millisecond) {
			got, err = readEnviron(cmd.Process.Pid, &small)
			if err != nil || len(got) > 0 || time.Now().After(deadline) {
				break
			}
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("size %d: read %d bytes, want %d", size, len(got), len(want))
		}
		if _, err := readEnviron(cmd.Process.Pid, &small); err == nil {
			t.Errorf("size %d: a reaped process's environ was read", size)
		}
	}
}

// TestEmptyEnvironWaitsForTheExecsEnd: an empty environment is what a
// look in the middle of an exec reads (the argv area is published, the
// environment not yet), so it verifies nothing until the exec'ing thread
// has made its next call; then it is the image's own.
func TestEmptyEnvironWaitsForTheExecsEnd(t *testing.T) {
	cmd := exec.Command("/bin/sleep", "30")
	cmd.Env = []string{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	proc, err := pin.OpenProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Close()
	// Its argv shows once the exec is over; its (empty) environment
	// looks the same before and after.
	for deadline := time.Now().Add(testutil.Scale(5 * time.Second)); ; time.Sleep(time.Millisecond) {
		if run, ok, err := proc.Running(); err == nil && ok && len(run.Cmdline) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sleep did not show its command line")
		}
	}
	v := &execVerifier{pending: map[int]*pendingExec{}}
	p := &pendingExec{proc: proc, tid: cmd.Process.Pid, tgid: cmd.Process.Pid}
	if st, err := v.envState(p, false); st != execUnchanged || err != nil {
		t.Errorf("empty environment, exec not known to be over: %v, %v; want execUnchanged", st, err)
	}
	if st, err := v.envState(p, true); st != execGood || err != nil {
		t.Errorf("empty environment after the exec's end: %v, %v; want execGood", st, err)
	}
	p.wantEnv = []string{"LD_PRELOAD=/x"}
	if st, _ := v.envState(p, true); st != execBad {
		t.Errorf("empty environment where LD_PRELOAD was judged: %v; want execBad", st)
	}
}
