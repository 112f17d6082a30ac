package pin

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cachedCwd reports whether thread tid has a cached cwd now.
func cachedCwd(tid int) bool {
	threads.mu.Lock()
	defer threads.mu.Unlock()
	e := threads.m[tid]
	return e != nil && e.cwd != nil
}

func inFlight(tid int) bool {
	threads.mu.Lock()
	defer threads.mu.Unlock()
	_, ok := threads.chdirs[tid]
	return ok
}

func lookupCwd(t *testing.T, tid int) {
	t.Helper()
	th, err := LookupThread(tid)
	if err != nil {
		t.Fatal(err)
	}
	defer th.Release()
	_, done, err := th.cwd()
	if err != nil {
		t.Fatal(err)
	}
	done()
}

// The cwd cache's protocol (cwd.go): an announced change drops the cache
// and keeps it off until the changing thread is seen in a later call;
// a notification older than the change does not count; a read that
// began while a change was in flight is never stored, even if the change
// has left the set by the time the read ends.
func TestCwdCacheProtocol(t *testing.T) {
	tid := unix.Gettid()
	other := os.Getpid() + 1_000_000 // a tid that is not ours; it need not exist
	lookupCwd(t, tid)
	if !cachedCwd(tid) {
		t.Fatal("a quiet lookup did not cache the cwd")
	}

	var id = uint64(1<<64 - 2) // ids compare modulo 2^64
	CwdChanging(other, id)
	if cachedCwd(tid) {
		t.Fatal("a change did not drop the cache")
	}
	lookupCwd(t, tid)
	if cachedCwd(tid) {
		t.Fatal("a lookup cached the cwd while a change was in flight")
	}
	// A notification of the changing thread made before the change (a
	// withdrawn one, handled late) proves nothing.
	CallSeen(other, id-1)
	if !inFlight(other) {
		t.Fatal("an older notification took the thread out of flight")
	}
	CallSeen(other, id) // the change's own notification
	if !inFlight(other) {
		t.Fatal("the change's own notification took the thread out of flight")
	}

	// A read that began in flight and ended quiet is not stored: run the
	// read's two halves around the change leaving the set.
	c := threads
	c.mu.Lock()
	start := c.cwdReadStartLocked()
	c.mu.Unlock()
	CallSeen(other, id+3) // wraps past 2^64: later
	if inFlight(other) {
		t.Fatal("a later notification did not take the thread out of flight")
	}
	c.mu.Lock()
	storable := c.cwdStorableLocked(start)
	c.mu.Unlock()
	if storable {
		t.Fatal("a read that began with a change in flight would be stored")
	}

	lookupCwd(t, tid)
	if !cachedCwd(tid) {
		t.Fatal("a quiet lookup after the change did not cache the cwd")
	}
}

// A thread in flight leaves the set when /proc/TID/syscall shows it in
// another call, never while it is blocked in a call that changes the cwd
// (unshare(CLONE_NEWNS) included: announced, then waiting to be continued).
func TestCwdInOtherSyscall(t *testing.T) {
	saved := cwdCalls.Load()
	t.Cleanup(func() { cwdCalls.Store(saved) })
	cwdCalls.Store(nil)
	if !changesCwd(unix.SYS_GETPID) {
		t.Error("before the table names the cwd calls, every call must count as one")
	}
	SetCwdCalls([]int{unix.SYS_CHDIR, unix.SYS_FCHDIR, unix.SYS_UNSHARE}, false)
	if changesCwd(unix.SYS_GETPID) {
		t.Error("getpid treated as a cwd change")
	}
	for _, nr := range []int{unix.SYS_CHDIR, unix.SYS_FCHDIR, unix.SYS_UNSHARE} {
		if !changesCwd(nr) {
			t.Errorf("syscall %d not treated as a cwd change", nr)
		}
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[1])
	tids := make(chan int)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- unix.Gettid()
		var b [1]byte
		unix.Read(p[0], b[:]) // blocks until written
		unix.Close(p[0])
		close(done)
	}()
	tid := <-tids
	deadline := time.Now().Add(5 * time.Second)
	for !inOtherSyscall(tid) {
		if time.Now().After(deadline) {
			t.Fatal("a thread blocked in read(2) is not seen in another syscall")
		}
		time.Sleep(time.Millisecond)
	}
	unix.Write(p[1], []byte{0})
	<-done
}

// cachedUmask reports whether thread tid has a cached umask now.
func cachedUmask(tid int) bool {
	threads.mu.Lock()
	defer threads.mu.Unlock()
	e := threads.m[tid]
	return e != nil && e.umask != noUmask
}

func lookupUmask(t *testing.T, tid int) uint32 {
	t.Helper()
	th, err := LookupThread(tid)
	if err != nil {
		t.Fatal(err)
	}
	defer th.Release()
	m, err := th.Umask()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The umask is kept by the cwd cache's protocol, and only while the
// table announces umask(2) (SetCwdCalls): a cached umask is served until
// a change is announced, then read afresh, and not stored while the
// change is in flight. Here the "change" is this process's own umask,
// set between the lookups (as the thread that called umask would have).
func TestUmaskCacheProtocol(t *testing.T) {
	saved := cwdCalls.Load()
	t.Cleanup(func() { cwdCalls.Store(saved) })
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	old := unix.Umask(0o022)
	defer unix.Umask(old)

	// Without umask among the announced calls, nothing is cached.
	SetCwdCalls([]int{unix.SYS_CHDIR, unix.SYS_FCHDIR, unix.SYS_UNSHARE}, false)
	if m := lookupUmask(t, tid); m != 0o022 || cachedUmask(tid) {
		t.Fatalf("umask %o, cached %v: a umask was cached while umask(2) is not announced", m, cachedUmask(tid))
	}
	unix.Umask(0o027)
	if m := lookupUmask(t, tid); m != 0o027 {
		t.Fatalf("umask %o after an unannounced change, want 027", m)
	}

	SetCwdCalls([]int{unix.SYS_CHDIR, unix.SYS_FCHDIR, unix.SYS_UNSHARE, unix.SYS_UMASK}, true)
	if m := lookupUmask(t, tid); m != 0o027 || !cachedUmask(tid) {
		t.Fatalf("umask %o, cached %v: a quiet lookup did not cache the umask", m, cachedUmask(tid))
	}
	// Announced (a thread sharing the umask waits in umask(2)), then
	// changed (the call continued): the cache is dropped and not refilled
	// while that thread is in flight.
	other := os.Getpid() + 1_000_000 // a tid that is not ours; it need not exist
	id := uint64(1000)
	CwdChanging(other, id)
	if cachedUmask(tid) {
		t.Fatal("an announced change did not drop the cached umask")
	}
	unix.Umask(0o077)
	if m := lookupUmask(t, tid); m != 0o077 || cachedUmask(tid) {
		t.Fatalf("umask %o, cached %v: want 077 read afresh and not stored in flight", m, cachedUmask(tid))
	}
	CallSeen(other, id+1)
	if m := lookupUmask(t, tid); m != 0o077 || !cachedUmask(tid) {
		t.Fatalf("umask %o, cached %v: the lookup after the change did not cache it", m, cachedUmask(tid))
	}
}

func TestUmaskField(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint32
		ok   bool
	}{
		{"Name:\tgit\nUmask:\t0022\nState:\tS\n", 0o22, true},
		{"Name:\tx\nUmask:\t0000\n", 0, true},
		{"Name:\tx\nUmask:\t0777\n", 0o777, true},
		{"Name:\tx\nUmask:\t0022", 0, false},           // cut before its end
		{"Name:\tx\nUmask:\t1777\n", 0, false},         // more than a umask
		{"Name:\tx\nUmask:\t0028\n", 0, false},         // not octal
		{"Name:\tx\nUmask:\t\n", 0, false},             // empty
		{"Name:\tx\nUmask:\t000022\n", 0, false},       // too long
		{"Name:\tUmask:\t0777\nState:\tS\n", 0, false}, // a name is no line
	} {
		got, ok := umaskField([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("umaskField(%q) = %o, %v; want %o, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func FuzzUmaskField(f *testing.F) {
	f.Add([]byte("Name:\tgit\nUmask:\t0022\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, ok := umaskField(b); ok && m > 0o777 {
			t.Fatalf("umaskField(%q) = %o", b, m)
		}
	})
}
