package notify

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

const (
	envChildPath = "PERMWRAP_NOTIFY_TEST_PATH"
	envChildArgv = "PERMWRAP_NOTIFY_TEST_ARGV"
)

func init() {
	registerChildRole("openat", childOpenat)
	registerChildRole("mkdir", childMkdir)
	registerChildRole("execve", childExecve)
	registerChildRole("exit", func() int { return 0 })
	registerChildRole("open-after-stdin", childOpenAfterStdin)
	registerChildRole("waitkill", childWaitKill)
	registerChildRole("threads", childThreads)
	registerChildRole("bench", childBench)
	registerChildRole("exec-env-argv", childExecArgv)
	registerChildRole("addfd-loop", childAddfdLoop)
}

// childOpenat opens $PATH read-only with O_CLOEXEC and prints what it got:
// "fd=N cloexec=B data=..." or "err=ERRNO".
func childOpenat() int {
	fd, err := unix.Openat(unix.AT_FDCWD, os.Getenv(envChildPath), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Printf("err=%s\n", unix.ErrnoName(err.(unix.Errno)))
		return 0
	}
	fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	buf := make([]byte, 256)
	n, _ := unix.Read(fd, buf)
	fmt.Printf("fd=%d cloexec=%v data=%q\n", fd, fl&unix.FD_CLOEXEC != 0, buf[:max(n, 0)])
	return 0
}

func childMkdir() int {
	err := unix.Mkdir(os.Getenv(envChildPath), 0o755)
	fmt.Printf("err=%v\n", errnoName(err))
	return 0
}

func childExecve() int {
	err := unix.Exec("/bin/true", []string{"true", "a", "b c", ""}, []string{"X=1"})
	fmt.Printf("err=%v\n", errnoName(err))
	return 0
}

func childOpenAfterStdin() int {
	var b [1]byte
	os.Stdin.Read(b[:])
	_, err := unix.Openat(unix.AT_FDCWD, "/dev/null", unix.O_RDONLY, 0)
	fmt.Printf("err=%v\n", errnoName(err))
	return 0
}

func childWaitKill() int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, unix.SIGUSR1)
	fd, err := unix.Openat(unix.AT_FDCWD, "/dev/null", unix.O_RDONLY, 0)
	got := "no"
	select {
	case <-sigs:
		got = "yes"
	case <-time.After(5 * time.Second):
	}
	fmt.Printf("fd-ok=%v err=%v sigusr1=%s\n", fd >= 0, errnoName(err), got)
	return 0
}

// childThreads opens /dev/null from 4 threads, 50 times each.
func childThreads() int {
	var wg sync.WaitGroup
	var ok atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if fd, err := unix.Openat(unix.AT_FDCWD, "/dev/null", unix.O_RDONLY, 0); err == nil {
					ok.Add(1)
					unix.Close(fd)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("ok=%d\n", ok.Load())
	return 0
}

// childExecArgv execs the command in $PERMWRAP_NOTIFY_TEST_ARGV
// (separated by \x1f) under the filter.
func childExecArgv() int {
	argv := strings.Split(os.Getenv(envChildArgv), "\x1f")
	err := unix.Exec(argv[0], argv, os.Environ())
	fmt.Printf("exec: %v\n", err)
	return 1
}

// childAddfdLoop opens $PATH N times and checks each result is a fresh fd
// that reads the supervisor's file; it prints how many were wrong.
func childAddfdLoop() int {
	n, _ := strconv.Atoi(os.Getenv("PERMWRAP_NOTIFY_BENCH_N"))
	path := os.Getenv(envChildPath)
	bad := 0
	var b [1]byte
	for range n {
		fd, err := unix.Openat(unix.AT_FDCWD, path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil || fd < 3 {
			bad++
			continue
		}
		if r, err := unix.Pread(fd, b[:], 0); err != nil || r != 1 || b[0] != 'P' {
			bad++
		}
		unix.Close(fd)
	}
	fmt.Printf("bad=%d\n", bad)
	return 0
}

func childBench() int {
	n, _ := strconv.Atoi(os.Getenv("PERMWRAP_NOTIFY_BENCH_N"))
	threads, _ := strconv.Atoi(os.Getenv("PERMWRAP_NOTIFY_BENCH_THREADS"))
	path := os.Getenv(envChildPath)
	if threads > 1 {
		var wg sync.WaitGroup
		var failed atomic.Bool
		for t := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Split n exactly: the parent counts every open.
				for i := t; i < n; i += threads {
					fd, err := unix.Openat(unix.AT_FDCWD, path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
					if err != nil {
						failed.Store(true)
						return
					}
					unix.Close(fd)
				}
			}()
		}
		wg.Wait()
		if failed.Load() {
			fmt.Println("err")
			return 1
		}
		return 0
	}
	for range n {
		fd, err := unix.Openat(unix.AT_FDCWD, path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			fmt.Printf("err=%v\n", err)
			return 1
		}
		unix.Close(fd)
	}
	return 0
}

func errnoName(err error) string {
	if err == nil {
		return "none"
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return unix.ErrnoName(e)
	}
	return err.Error()
}

func TestKernelContinueAndReadString(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hello")
	if err := os.WriteFile(path, []byte("from disk"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startFilteredChild(t, "openat", "", envChildPath+"="+path)
	n := receiveOrFail(t, c.L)
	if n.Nr != unix.SYS_OPENAT || n.Arch != unix.AUDIT_ARCH_X86_64 {
		t.Fatalf("got %v arch %#x, want openat on x86_64", &n, n.Arch)
	}
	got, err := ReadString(int(n.Pid), n.Args[1], PathMax)
	if err != nil {
		t.Fatalf("ReadString: %v", err)
	}
	if got != path {
		t.Errorf("ReadString = %q, want %q", got, path)
	}
	if n.Args[2]&unix.O_ACCMODE != unix.O_RDONLY || n.Args[2]&unix.O_CLOEXEC == 0 {
		t.Errorf("flags %#x, want O_RDONLY|O_CLOEXEC", n.Args[2])
	}
	if err := c.L.IDValid(n.ID); err != nil {
		t.Errorf("IDValid on a pending notification: %v", err)
	}
	if err := c.L.Continue(n.ID); err != nil {
		t.Fatalf("Continue: %v", err)
	}
	if err := c.L.IDValid(n.ID); err != ErrGone || !errors.Is(err, unix.ENOENT) {
		t.Errorf("IDValid after the answer = %v, want ErrGone matching ENOENT", err)
	}
	// The kernel answers EINPROGRESS while the answered notification is
	// still queued and ENOENT once the target has taken it.
	if err := c.L.Continue(n.ID); err != ErrGone && !errors.Is(err, unix.EINPROGRESS) {
		t.Errorf("second Continue = %v, want ErrGone or EINPROGRESS", err)
	}
	out := c.output(t)
	if !strings.Contains(out, `data="from disk"`) {
		t.Errorf("child output %q, want the file's content", out)
	}
}

func TestKernelRespondError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "made")
	c := startFilteredChild(t, "mkdir", "", envChildPath+"="+dir)
	n := receiveOrFail(t, c.L)
	if n.Nr != unix.SYS_MKDIRAT && n.Nr != unix.SYS_MKDIR {
		t.Fatalf("got %v, want mkdir", &n)
	}
	if err := c.L.RespondError(n.ID, unix.EACCES); err != nil {
		t.Fatalf("RespondError: %v", err)
	}
	out := c.output(t)
	if strings.TrimSpace(out) != "err=EACCES" {
		t.Errorf("child output %q, want err=EACCES", out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("denied mkdir created %s (stat: %v)", dir, err)
	}
	if err := c.L.RespondError(1, 0); err == nil {
		t.Error("RespondError with errno 0 accepted")
	}
}

func TestKernelRespondValue(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "made")
	c := startFilteredChild(t, "mkdir", "", envChildPath+"="+dir)
	n := receiveOrFail(t, c.L)
	// Emulation: the supervisor does the work and reports success.
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := c.L.RespondValue(n.ID, 0); err != nil {
		t.Fatalf("RespondValue: %v", err)
	}
	out, _ := c.Wait()
	if strings.TrimSpace(out) != "err=none" {
		t.Errorf("child output %q, want success", out)
	}
}

func TestKernelAddFD(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "parent-file")
	if err := os.WriteFile(secret, []byte("parent content"), 0o600); err != nil {
		t.Fatal(err)
	}
	const asked = "/nonexistent-permwrap/child-path"
	c := startFilteredChild(t, "openat", "", envChildPath+"="+asked)
	n := receiveOrFail(t, c.L)
	if got, err := ReadString(int(n.Pid), n.Args[1], PathMax); err != nil || got != asked {
		t.Fatalf("ReadString = %q, %v; want %q", got, err, asked)
	}
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tfd, err := c.L.AddFD(n.ID, int(f.Fd()), n.Args[2]&unix.O_CLOEXEC != 0)
	if err != nil {
		if errors.Is(err, unix.EINVAL) {
			kerneltest.Skipf(t, "ADDFD with SEND: %v", err)
		}
		t.Fatalf("AddFD: %v", err)
	}
	out := c.output(t)
	want := fmt.Sprintf("fd=%d cloexec=true data=%q", tfd, "parent content")
	if strings.TrimSpace(out) != want {
		t.Errorf("child output %q, want %q", out, want)
	}
	if _, err := c.L.AddFD(n.ID, int(f.Fd()), true); err != ErrGone {
		t.Errorf("AddFD on an answered id = %v, want ErrGone", err)
	}
}

func TestKernelReadArgv(t *testing.T) {
	c := startFilteredChild(t, "execve", "")
	n := receiveOrFail(t, c.L)
	if n.Nr != unix.SYS_EXECVE {
		t.Fatalf("got %v, want execve", &n)
	}
	pid := int(n.Pid)
	if p, err := ReadString(pid, n.Args[0], PathMax); err != nil || p != "/bin/true" {
		t.Errorf("path = %q, %v", p, err)
	}
	argv, err := ReadArgv(pid, n.Args[1], 64, 4096)
	if err != nil {
		t.Fatalf("ReadArgv: %v", err)
	}
	if want := []string{"true", "a", "b c", ""}; fmt.Sprintf("%q", argv) != fmt.Sprintf("%q", want) {
		t.Errorf("argv = %q, want %q", argv, want)
	}
	env, err := ReadArgv(pid, n.Args[2], 64, 4096)
	if err != nil || len(env) != 1 || env[0] != "X=1" {
		t.Errorf("envp = %q, %v", env, err)
	}
	if _, err := ReadArgv(pid, n.Args[1], 3, 4096); !errors.Is(err, unix.E2BIG) {
		t.Errorf("ReadArgv over maxArgs: %v, want E2BIG", err)
	}
	if _, err := ReadArgv(pid, n.Args[1], 64, 10); !errors.Is(err, unix.E2BIG) {
		t.Errorf("ReadArgv over maxBytes: %v, want E2BIG", err)
	}
	if err := c.L.IDValid(n.ID); err != nil {
		t.Errorf("IDValid: %v", err)
	}
	if err := c.L.RespondError(n.ID, unix.EPERM); err != nil {
		t.Fatal(err)
	}
	if out, _ := c.Wait(); strings.TrimSpace(out) != "err=EPERM" {
		t.Errorf("child output %q", out)
	}
}

func TestKernelEOFWhenChildExits(t *testing.T) {
	c := startFilteredChild(t, "exit", "")
	if _, err := c.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n Notif
			errs[i] = c.L.Receive(&n)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != io.EOF {
			t.Errorf("receiver %d: %v, want io.EOF", i, err)
		}
	}
}

func TestKernelCloseWakesReceiversAndFailsClosed(t *testing.T) {
	c, w := startChildOpeningAfterStdin(t)
	done := make(chan error, 2)
	for range 2 {
		go func() {
			var n Notif
			done <- c.L.Receive(&n)
		}()
	}
	// Both receivers are (or will be) waiting: one in poll, one on the mutex.
	if err := c.L.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for range 2 {
		select {
		case err := <-done:
			if err != ErrClosed {
				t.Errorf("Receive after Close = %v, want ErrClosed", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Close did not wake a blocked Receive")
		}
	}
	if err := c.L.Continue(1); err != ErrClosed || !errors.Is(err, os.ErrClosed) {
		t.Errorf("Continue after Close = %v, want ErrClosed matching os.ErrClosed", err)
	}
	// With no listener left the watched syscall fails instead of running.
	w.Write([]byte{1})
	out := c.output(t)
	if strings.TrimSpace(out) != "err=ENOSYS" {
		t.Errorf("watched syscall after Close: child printed %q, want err=ENOSYS", out)
	}
}

// TestKernelBlindWait: a receiver waiting in the scheduler-blind poll
// (SetBlindWait) holds a P, yet with GOMAXPROCS 2 the rest of the
// program runs meanwhile and a garbage collection, which must stop every
// P, completes (the runtime's signal interrupts the poll); the receiver
// then gets the notification, and io.EOF once the child is gone.
func TestKernelBlindWait(t *testing.T) {
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet=%v", quiet), func(t *testing.T) { blindWait(t, quiet) })
	}
}

// blindWait: with quiet, the receiver holds a Quiet (its thread's signals
// blocked), so only the wait's own mask lets the collections through.
func blindWait(t *testing.T, quiet bool) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	c, w := startChildOpeningAfterStdin(t)
	c.L.SetBlindWait()
	got := make(chan error, 1)
	var n Notif
	go func() {
		var q Quiet
		if quiet {
			if err := q.Hold(); err != nil || !q.Held() {
				got <- fmt.Errorf("Hold: %v (held %v)", err, q.Held())
				return
			}
			defer q.Release()
		}
		got <- c.L.ReceiveQuiet(&n, &q)
	}()
	time.Sleep(50 * time.Millisecond) // let it block in the poll
	for i := range 3 {
		ran := make(chan struct{})
		go func() {
			runtime.GC()
			close(ran)
		}()
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatalf("garbage collection %d did not complete while a receiver waited blind", i)
		}
	}
	select {
	case err := <-got:
		t.Fatalf("Receive returned %v before any notification", err)
	default:
	}
	w.Write([]byte{1})
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the blind receiver missed the notification")
	}
	if n.Nr != unix.SYS_OPENAT {
		t.Fatalf("notification for syscall %d, want openat", n.Nr)
	}
	if err := c.L.Continue(n.ID); err != nil {
		t.Fatalf("Continue: %v", err)
	}
	out := c.output(t)
	if strings.TrimSpace(out) != "err=none" {
		t.Errorf("the continued open: child printed %q, want err=none", out)
	}
	if err := c.L.Receive(&n); err != io.EOF {
		t.Errorf("Receive after the child exited = %v, want io.EOF", err)
	}
}

// sigPending reports whether sig is pending for thread tid of pid.
func sigPending(t *testing.T, pid, tid int, sig unix.Signal) bool {
	return threadSigs(t, pid, tid, "SigPnd")&(1<<(uint(sig)-1)) != 0
}

// threadSigs is a signal set of thread tid of pid from its status file:
// field SigPnd (pending) or SigBlk (blocked).
func threadSigs(t *testing.T, pid, tid int, field string) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
	if err != nil {
		t.Fatalf("reading thread status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("parsing %q: %v", line, err)
			}
			return mask
		}
	}
	t.Fatalf("no %s line", field)
	return 0
}

// TestKernelWaitKillable: with WAIT_KILLABLE_RECV a non-fatal signal sent
// to the thread after RECV stays pending and the syscall survives it.
func TestKernelWaitKillable(t *testing.T) {
	c := startFilteredChild(t, "waitkill", "")
	if !c.Used.WaitKillable {
		kerneltest.Skipf(t, "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19+)")
	}
	n := receiveOrFail(t, c.L)
	pid := c.Cmd.Process.Pid
	if err := unix.Tgkill(pid, int(n.Pid), unix.SIGUSR1); err != nil {
		t.Fatalf("tgkill: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !sigPending(t, pid, int(n.Pid), unix.SIGUSR1) {
		if time.Now().After(deadline) {
			t.Fatal("SIGUSR1 was not left pending: the signal interrupted the notified syscall")
		}
		time.Sleep(time.Millisecond)
	}
	if err := c.L.IDValid(n.ID); err != nil {
		t.Fatalf("IDValid with a signal pending: %v", err)
	}
	if err := c.L.Continue(n.ID); err != nil {
		t.Fatalf("Continue: %v", err)
	}
	out, _ := c.Wait()
	if strings.TrimSpace(out) != "fd-ok=true err=none sigusr1=yes" {
		t.Errorf("child output %q", out)
	}
}

// TestKernelWithoutWaitKillable is the control: without the flag the same
// signal aborts the notification and the restarted syscall is notified
// again, which is what Install's flag prevents.
func TestKernelWithoutWaitKillable(t *testing.T) {
	c := startFilteredChild(t, "waitkill", "nowaitkill")
	n := receiveOrFail(t, c.L)
	if err := unix.Tgkill(c.Cmd.Process.Pid, int(n.Pid), unix.SIGUSR1); err != nil {
		t.Fatalf("tgkill: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for c.L.IDValid(n.ID) == nil {
		if time.Now().After(deadline) {
			t.Fatal("notification still valid 20s after SIGUSR1 without WAIT_KILLABLE_RECV")
		}
		time.Sleep(time.Millisecond)
	}
	if err := c.L.Continue(n.ID); err != ErrGone {
		t.Fatalf("Continue on the interrupted id = %v, want ErrGone", err)
	}
	again := receiveOrFail(t, c.L)
	if again.Nr != unix.SYS_OPENAT || again.ID == n.ID {
		t.Fatalf("restart: got %v, want a new openat notification", &again)
	}
	if err := c.L.Continue(again.ID); err != nil {
		t.Fatal(err)
	}
	out, _ := c.Wait()
	if !strings.HasPrefix(strings.TrimSpace(out), "fd-ok=true err=none") {
		t.Errorf("child output %q", out)
	}
}

// TestKernelReceivePool serves a multi-threaded child from a pool of
// receivers, then sees every receiver end with io.EOF.
func TestKernelReceivePool(t *testing.T) {
	c := startFilteredChild(t, "threads", "")
	var served atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var n Notif
				err := c.L.Receive(&n)
				if err == ErrGone {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				if err := c.L.Continue(n.ID); err != nil && err != ErrGone {
					errs <- fmt.Errorf("Continue: %w", err)
					return
				}
				if n.Nr == unix.SYS_OPENAT {
					served.Add(1)
				}
			}
		}()
	}
	out := c.output(t)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != io.EOF {
			t.Errorf("receiver ended with %v, want io.EOF", err)
		}
	}
	if strings.TrimSpace(out) != "ok=200" {
		t.Errorf("child output %q, want ok=200", out)
	}
	if got := served.Load(); got < 200 {
		t.Errorf("served %d openat notifications, want at least 200", got)
	}
}

func TestKernelSkipReadOnlyOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ro")
	if err := os.WriteFile(path, []byte("plain read"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startFilteredChild(t, "openat", "skipro", envChildPath+"="+path)
	out := c.output(t)
	if !strings.Contains(out, `data="plain read"`) {
		t.Errorf("read-only open under SkipReadOnlyOpens: child printed %q", out)
	}
}

func TestKernelSetSyncWakeUp(t *testing.T) {
	c := startFilteredChild(t, "exit", "")
	if err := c.L.SetSyncWakeUp(); err != nil {
		if errors.Is(err, ErrNotSupported) {
			kerneltest.Skipf(t, "%v", err)
		}
		t.Fatalf("SetSyncWakeUp: %v", err)
	}
}

// TestKernelAddFDUnderSignals: signals hitting the supervisor thread while
// it waits in ADDFD|SEND must neither fail the call nor complete the
// target's syscall without its fd. (The kernel marks the notification
// answered before it waits; a restarted ioctl then sees EINPROGRESS or
// ENOENT, and the target's open returns 0 with no fd installed.)
func TestKernelAddFDUnderSignals(t *testing.T) {
	if failures, out := addFDUnderSignals(t, addFDMasked); strings.TrimSpace(out) != "bad=0" || failures != 0 {
		t.Errorf("child printed %q; %d AddFD failures", out, failures)
	}
}

// TestKernelAddFDQuietUnderSignals: the same with a held Quiet, as the
// supervisor's receiving role installs fds: the signals stay blocked
// from one AddFDQuiet to the next and are let through only while
// ReceiveQuiet waits. TestKernelAddFDUnblockedFails shows the bombing
// breaks an ADDFD that leaves them unblocked.
func TestKernelAddFDQuietUnderSignals(t *testing.T) {
	failures, out := addFDUnderSignals(t, addFDQuiet)
	if strings.TrimSpace(out) != "bad=0" || failures != 0 {
		t.Errorf("child printed %q; %d AddFD failures", out, failures)
	}
}

// TestKernelAddFDUnblockedFails is the control of the two tests above:
// ADDFD|SEND with the thread's signals unblocked, under the same signals,
// leaves the target without its fd or fails. It is a race; when it does
// not show in three tries the test skips (the tests above then prove
// less on this machine).
func TestKernelAddFDUnblockedFails(t *testing.T) {
	for try := 0; try < 3; try++ {
		failures, out := addFDUnderSignals(t, addFDUnblocked)
		if failures > 0 || strings.TrimSpace(out) != "bad=0" {
			return
		}
	}
	t.Skip("unblocked ADDFD|SEND survived the signals in three tries: the race did not show on this machine")
}

type addFDMode int

const (
	addFDMasked    addFDMode = iota // AddFD: signals blocked around the ioctl
	addFDQuiet                      // ReceiveQuiet and AddFDQuiet with one Quiet
	addFDUnblocked                  // the bare ioctl (the control)
)

// addFDUnderSignals serves a child that opens a file 2000 times, each
// open answered with ADDFD|SEND while another goroutine sends SIGURG to
// the serving thread every few microseconds. It returns the failed AddFDs
// and what the child printed (bad=N: opens that returned no usable fd).
func addFDUnderSignals(t *testing.T, mode addFDMode) (int, string) {
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte("P"), 0o644); err != nil {
		t.Fatal(err)
	}
	const rounds = 2000
	c := startFilteredChild(t, "addfd-loop", "", envChildPath+"="+path, "PERMWRAP_NOTIFY_BENCH_N="+strconv.Itoa(rounds))

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var q Quiet
	defer func() {
		q.Release()
		if blocked := threadSigs(t, os.Getpid(), unix.Gettid(), "SigBlk"); blocked&(1<<(uint(unix.SIGURG)-1)) != 0 {
			t.Errorf("SIGURG still blocked after Release (SigBlk %#x)", blocked)
		}
	}()
	tid := unix.Gettid()
	stop := make(chan struct{})
	var bombed sync.WaitGroup
	bombed.Add(1)
	go func() {
		defer bombed.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// SIGURG: the runtime takes spurious ones as preemption hints.
			unix.Tgkill(os.Getpid(), tid, unix.SIGURG)
			time.Sleep(5 * time.Microsecond)
		}
	}()
	failures := 0
	for {
		var n Notif
		err := c.L.ReceiveQuiet(&n, &q)
		if err == ErrGone {
			continue
		}
		if err != nil {
			break
		}
		if n.Nr != unix.SYS_OPENAT {
			c.L.Continue(n.ID)
			continue
		}
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		switch mode {
		case addFDMasked:
			_, err = c.L.AddFD(n.ID, fd, true)
		case addFDQuiet:
			_, err = c.L.AddFDQuiet(n.ID, fd, true, &q)
			if err == nil && !q.Held() {
				t.Fatal("AddFDQuiet did not hold the Quiet")
			}
		case addFDUnblocked:
			a := seccompNotifAddfd{ID: n.ID, Srcfd: uint32(fd), Flags: unix.SECCOMP_ADDFD_FLAG_SEND, NewfdFlags: unix.O_CLOEXEC}
			_, err = ioctlNotifAddfd(c.L.fd, &a)
		}
		if err != nil {
			failures++
			if failures <= 3 && mode != addFDUnblocked {
				t.Errorf("AddFD under signals: %v", err)
			}
		}
		unix.Close(fd)
	}
	close(stop)
	bombed.Wait()
	return failures, c.output(t)
}

const foreignABISource = `
#include <stdio.h>
#include <string.h>
static char buf[4096]; /* non-PIE .bss: below 4 GiB, reachable from int 0x80 */
int main(int argc, char **argv) {
	long ret;
	strncpy(buf, argv[1], sizeof buf - 1);
	if (argv[2][0] == 'i') {
		/* i386 open(buf, O_RDONLY) */
		__asm__ volatile("int $0x80" : "=a"(ret) : "a"(5L), "b"(buf), "c"(0L) : "memory");
	} else {
		/* x32 openat(AT_FDCWD, buf, O_RDONLY) */
		__asm__ volatile("syscall" : "=a"(ret) : "a"(0x40000000L | 257), "D"(-100L), "S"(buf), "d"(0L) : "rcx", "r11", "memory");
	}
	printf("ret=%ld\n", ret);
	return 0;
}
`

// TestKernelForeignABIKilled: i386 (int 0x80) and x32 syscalls bypass a
// filter that looks only at the number; ours kills the process. The i386
// open is shown to work bare first. On a kernel that refuses i386 syscalls
// (a trial in a child says so) the i386 case is impossible: there is no
// bypass to stop, so it skips even in CI; TestFilterVMDefault still shows
// the program kills arch i386 on any machine. A trial that breaks fails.
func TestKernelForeignABIKilled(t *testing.T) {
	cc := kerneltest.Tool(t, "cc")
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "abi.c"), filepath.Join(dir, "abi")
	if err := os.WriteFile(src, []byte(foreignABISource), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-O0", "-no-pie", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cannot build the test program: %v: %s", err, out)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("t"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, abi := range []string{"i386", "x32"} {
		t.Run(abi, func(t *testing.T) {
			if abi == "i386" {
				if ok, why := kerneltest.I386(t); !ok {
					kerneltest.Impossible(t, why)
				}
			}
			bare, err := exec.Command(bin, target, abi).CombinedOutput()
			if err != nil {
				t.Fatalf("bare run: %v: %s", err, bare)
			}
			t.Logf("bare: %s", bare)
			if abi == "i386" && strings.HasPrefix(string(bare), "ret=-") {
				t.Fatalf("i386 syscalls work (the trial said so) but the bare int 0x80 open failed: %s", bare)
			}
			c := startFilteredChild(t, "exec-env-argv", "", envChildArgv+"="+strings.Join([]string{bin, target, abi}, "\x1f"))
			serveContinueAll(t, c.L)
			out, _ := c.Wait()
			ws, ok := c.Cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ok || !ws.Signaled() || ws.Signal() != unix.SIGSYS {
				t.Errorf("%s syscall under the filter: exit %v, output %q; want killed by SIGSYS (bare: %q)", abi, c.Cmd.ProcessState, out, bare)
			}
		})
	}
}

// TestKernelClosePendingFailsClosed: a call received but never answered
// fails with ENOSYS when the listener closes (the supervisor gave up), it
// is not run.
func TestKernelClosePendingFailsClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "never")
	c := startFilteredChild(t, "mkdir", "", envChildPath+"="+path)
	n := receiveOrFail(t, c.L)
	if n.Nr != unix.SYS_MKDIRAT && n.Nr != unix.SYS_MKDIR {
		t.Fatalf("got %v, want mkdir", &n)
	}
	if err := c.L.Close(); err != nil {
		t.Fatal(err)
	}
	out := c.output(t)
	if strings.TrimSpace(out) != "err=ENOSYS" {
		t.Errorf("pending mkdir after Close: child printed %q, want err=ENOSYS", out)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the pending mkdir ran after Close (stat: %v)", err)
	}
}
