package pin

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// entryOf is the cache's entry for tid (white box).
func entryOf(tid int) *threadEntry {
	threads.mu.Lock()
	defer threads.mu.Unlock()
	return threads.m[tid]
}

// TestThreadCacheStaleEntryNotUsed: an entry whose thread is gone — and
// whose tid another thread may now have — is never used. The reuse is
// staged by giving tid B an entry that holds A's pidfd and /proc
// directory after A exited; B's lookup must report B, not fail or report
// A.
func TestThreadCacheStaleEntryNotUsed(t *testing.T) {
	requireResolveKernel(t)
	dir := t.TempDir()
	a := startSleeper(t, dir, nil)
	b := startSleeper(t, dir, nil)
	ta, err := LookupThread(a.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if ta.Tgid != a.Process.Pid {
		t.Errorf("tgid %d, want %d", ta.Tgid, a.Process.Pid)
	}
	ta.Release()
	stale := entryOf(a.Process.Pid)
	if stale == nil {
		t.Fatal("no cache entry after a lookup")
	}
	a.Process.Kill()
	a.Wait()
	// A is gone: its own lookup says so, and drops the entry.
	if _, err := LookupThread(a.Process.Pid); !strings.Contains(err.Error(), "gone") && Errno(err) != unix.ESRCH {
		t.Errorf("lookup of an exited thread: %v, want ESRCH", err)
	}
	// Stage the reuse: B's tid now maps to A's dead entry.
	deadPidfd, err := unix.Dup(stale.pidfd)
	if err != nil {
		// The stale entry was closed when dropped: make an equivalent one
		// from a thread that exits now.
		c := exec.Command("true")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		deadPidfd, err = unix.PidfdOpen(c.Process.Pid, unix.PIDFD_THREAD)
		c.Wait()
		if err != nil {
			kerneltest.Skipf(t, "pidfd_open: %v", err)
		}
	}
	procDir, err := unix.Open("/proc/self", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	staged := &threadEntry{tid: b.Process.Pid, pidfd: deadPidfd, procDir: procDir, root: rootOurs, exe: "/stale/exe", exeTgid: 424242}
	threads.mu.Lock()
	threads.m[b.Process.Pid] = staged
	threads.mu.Unlock()
	tb, err := LookupThread(b.Process.Pid)
	if err != nil {
		t.Fatalf("lookup after a stale entry: %v", err)
	}
	defer tb.Release()
	if tb.Tgid != b.Process.Pid {
		t.Errorf("tgid %d, want %d (the stale entry was used)", tb.Tgid, b.Process.Pid)
	}
	if exe := tb.Exe(); !strings.HasSuffix(exe, "sleep") {
		t.Errorf("exe %q: the stale entry's executable was used", exe)
	}
	if e := entryOf(b.Process.Pid); e == nil || e == staged {
		t.Error("the stale entry is still cached")
	}
}

// TestThreadCacheRootRechecked: a thread in its own mount namespace is
// not taken to share the supervisor's root, and an entry that said it did
// is checked again after RootChanged (what a notified unshare calls).
func TestThreadCacheRootRechecked(t *testing.T) {
	requireResolveKernel(t)
	if os.Geteuid() != 0 {
		kerneltest.Skipf(t, "needs root for unshare -m")
	}
	unshare := kerneltest.Tool(t, "unshare")
	c := exec.Command(unshare, "-m", "--propagation", "unchanged", "sleep", "60")
	if err := c.Start(); err != nil {
		kerneltest.Skipf(t, "unshare -m: %v", err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	pid := c.Process.Pid
	for range 200 {
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && strings.HasSuffix(exe, "sleep") {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	th, err := LookupThread(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer th.Release()
	if th.rootIsOurs() {
		t.Fatal("a thread in another mount namespace is taken to have the supervisor's root")
	}
	// Stage a stale answer, then the notification of an unshare.
	threads.mu.Lock()
	th.e.root = rootOurs
	threads.mu.Unlock()
	RootChanged(pid)
	if th.rootIsOurs() {
		t.Error("RootChanged did not make the root be checked again")
	}
	// This process shares the supervisor's root.
	me, err := LookupThread(unix.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	defer me.Release()
	if !me.rootIsOurs() {
		t.Error("the supervisor's own root is not recognised")
	}
	// A thread whose root is not ours never takes the fast path.
	r, err := Resolve(pid, unix.AT_FDCWD, "/etc/hostname", FollowLast|ObjectOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Dir == nil {
		t.Error("fast path taken for a thread in another mount namespace")
	}
}

// TestThreadCacheExeForgottenAtExec: the cached executable (for the log)
// is read again after ExecChanged.
func TestThreadCacheExeForgottenAtExec(t *testing.T) {
	requireResolveKernel(t)
	c := startSleeper(t, t.TempDir(), nil)
	th, err := LookupThread(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer th.Release()
	if exe := th.Exe(); !strings.HasSuffix(exe, "sleep") {
		t.Fatalf("exe %q", exe)
	}
	threads.mu.Lock()
	th.e.exe = "/old/image"
	threads.mu.Unlock()
	ExecChanged(c.Process.Pid)
	if exe := th.Exe(); !strings.HasSuffix(exe, "sleep") {
		t.Errorf("exe %q after ExecChanged: the old image's was kept", exe)
	}
}

// TestThreadCacheExeIndex: ExecChanged forgets the executable of its
// own group's entries only, and an entry that leaves the cache leaves the
// index that finds them.
func TestThreadCacheExeIndex(t *testing.T) {
	requireResolveKernel(t)
	dir := t.TempDir()
	a, b := startSleeper(t, dir, nil), startSleeper(t, dir, nil)
	ta, err := LookupThread(a.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer ta.Release()
	tb, err := LookupThread(b.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Release()
	ta.Exe()
	tb.Exe()
	exeOf := func(th *Thread) string {
		threads.mu.Lock()
		defer threads.mu.Unlock()
		return th.e.exe
	}
	if exeOf(ta) == "" || exeOf(tb) == "" {
		t.Fatal("Exe cached nothing")
	}
	ExecChanged(a.Process.Pid)
	if exeOf(ta) != "" {
		t.Error("ExecChanged kept its own group's executable")
	}
	if exeOf(tb) == "" {
		t.Error("ExecChanged forgot another group's executable")
	}
	threads.drop(tb.e)
	threads.mu.Lock()
	left := len(threads.exes[b.Process.Pid])
	threads.mu.Unlock()
	if left != 0 {
		t.Errorf("a dropped entry stayed in the executable index (%d)", left)
	}
}

// TestThreadCacheBounded: past the bound, entries of exited threads are
// closed first, and the cache never grows past it.
func TestThreadCacheBounded(t *testing.T) {
	requireResolveKernel(t)
	old := maxThreads
	maxThreads = 4
	t.Cleanup(func() { maxThreads = old })
	dir := t.TempDir()
	var live []*exec.Cmd
	for range 3 {
		live = append(live, startSleeper(t, dir, nil))
	}
	for _, c := range live {
		th, err := LookupThread(c.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		th.Release()
	}
	d := exec.Command("true")
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	if th, err := LookupThread(d.Process.Pid); err == nil {
		th.Release()
	}
	d.Wait()
	for range 3 {
		c := startSleeper(t, dir, nil)
		th, err := LookupThread(c.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		th.Release()
		threads.mu.Lock()
		n := len(threads.m)
		threads.mu.Unlock()
		if n > maxThreads {
			t.Fatalf("%d entries, bound %d", n, maxThreads)
		}
	}
	if entryOf(d.Process.Pid) != nil {
		t.Error("the exited thread's entry survived a sweep")
	}
}
