package pin

import (
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The cwd cache: an O_PATH fd of each thread's working directory, kept
// between its notifications so a relative open needs no
// /proc/TID/cwd lookup; and its umask, kept so a creating call needs no
// read of /proc/TID/status (Thread.Umask). Both live in the thread's
// fs_struct, and the same protocol keeps both.
//
// A thread's cwd changes only by chdir or fchdir — its own, or those of
// any thread sharing its fs_struct (its process's other threads, or a
// process cloned with CLONE_FS) —, by unshare(CLONE_NEWNS) (the copy of
// the cwd in the new mount tree; notified, announced like a chdir) and
// by setns, chroot and pivot_root, which the filter refuses. Its umask
// changes only by umask(2), its own or that of a thread sharing its
// fs_struct (a thread cloned without CLONE_FS starts with a copy, under
// a new tid and so a new cache entry). The supervisor is told of every
// chdir, fchdir and umask (CwdChanging) before it continues them, and the
// protocol below keeps any cached or half-read cwd or umask from being
// used across one:
//
//   - CwdChanging(tid, id), called while the thread waits in the call
//     (notification id), drops every cached cwd, advances the generation,
//     and records the thread as "in flight": its call has not run yet, and
//     no one can know when it has, except by seeing the thread again.
//   - While any thread is in flight, no cwd is cached or used from the
//     cache: each lookup opens /proc/TID/cwd afresh, as without a cache.
//   - A thread leaves the in-flight set at its next notification
//     (CallSeen, called for every notification before it is decoded) —
//     one the kernel made after the chdir's: notification ids of one
//     listener increase by one per notification, and a notification of
//     the thread received late (made before the chdir, withdrawn when a
//     signal interrupted its call, and only now handled) proves nothing —, or
//     when /proc/TID/syscall shows it blocked in another syscall: either
//     way it is in a later syscall, so its chdir has run. A thread that
//     exited leaves it too (its pidfd polls readable).
//   - A cwd read from /proc is stored only if nothing was in flight when
//     the read began, nothing is in flight after it, and the generation
//     did not change in between: then no chdir can have run during the
//     read (one that ran must have been announced before it was
//     continued, and was either still in flight at the start or announced
//     during the read). A read that raced a chdir is used once — for a
//     call that was concurrent with the chdir, either order is one the
//     kernel could have chosen — and never stored.
//
// A cached fd is reference-counted: dropping it while a resolution uses
// it closes it only after that resolution ends, so its number is never
// reused under an openat2.

type cwdFd struct {
	fd   int
	refs int // guarded by threadCache.mu; the cache's own reference is one
}

// chdirInFlight is a thread whose chdir or fchdir was notified and not yet
// known to have run.
type chdirInFlight struct {
	pidfd int    // to notice the thread's exit; -1 if none could be had
	id    uint64 // the chdir's notification id
}

// CwdChanging tells the cache that thread tid is in chdir, fchdir or
// another call that changes its cwd (unshare(CLONE_NEWNS)), not yet
// continued; id is the call's notification id. See the protocol above.
func CwdChanging(tid int, id uint64) {
	// The pidfd only lets an exited thread leave the set; without one
	// (out of fds) the thread leaves it at its next notification, or never,
	// which only costs the cache.
	pidfd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if err != nil {
		pidfd = -1
	}
	c := threads
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.chdirs[tid]; ok && old.pidfd >= 0 {
		unix.Close(old.pidfd)
	}
	c.chdirs[tid] = chdirInFlight{pidfd: pidfd, id: id}
	c.inFlight.Store(int32(len(c.chdirs)))
	c.cwdGen++
	for _, e := range c.m {
		c.dropCwdLocked(e)
	}
}

// CallSeen tells the cache that thread tid made the notified call id: a
// chdir of its own that was in flight, notified before id, has run.
func CallSeen(tid int, id uint64) {
	c := threads
	if c.inFlight.Load() == 0 {
		return
	}
	c.mu.Lock()
	// Ids increase by one per notification (from a random start: compared
	// modulo 2^64).
	if f, ok := c.chdirs[tid]; ok && int64(id-f.id) > 0 {
		if f.pidfd >= 0 {
			unix.Close(f.pidfd)
		}
		delete(c.chdirs, tid)
	}
	c.inFlight.Store(int32(len(c.chdirs)))
	c.mu.Unlock()
}

// reapChdirsLocked removes in-flight threads whose chdir has run: those
// that exited (their pidfd polls readable), and those now in another
// syscall (/proc/TID/syscall names it: calls of one thread are
// sequential, so the chdir before it has returned). A thread that is
// running, or in chdir, fchdir or unshare (again or still), stays.
func (c *threadCache) reapChdirsLocked() {
	if len(c.chdirs) == 0 {
		return
	}
	tids := make([]int, 0, len(c.chdirs))
	fds := make([]unix.PollFd, 0, len(c.chdirs))
	for tid, f := range c.chdirs {
		tids = append(tids, tid)
		fds = append(fds, unix.PollFd{Fd: int32(f.pidfd), Events: unix.POLLIN})
	}
	// poll ignores the negative fds of untracked threads.
	_, err := unix.Poll(fds, 0)
	for i, f := range fds {
		switch {
		case err == nil && f.Fd >= 0 && f.Revents != 0:
		case inOtherSyscall(tids[i]):
		default:
			continue
		}
		if f.Fd >= 0 {
			unix.Close(int(f.Fd))
		}
		delete(c.chdirs, tids[i])
	}
	c.inFlight.Store(int32(len(c.chdirs)))
}

// inOtherSyscall reports that thread tid is blocked in a syscall other
// than chdir, fchdir or unshare.
func inOtherSyscall(tid int) bool {
	fd, err := unix.Open("/proc/"+strconv.Itoa(tid)+"/syscall", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var buf [32]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil || n == 0 {
		return false
	}
	f := strings.Fields(string(buf[:n]))
	if len(f) == 0 {
		return false
	}
	nr, err := strconv.Atoi(f[0]) // "running" while on a CPU
	return err == nil && nr >= 0 && !changesCwd(nr)
}

// cwdCalls are the syscalls whose notifications announce a change of the
// cwd (CwdChanging). The supervisor's syscall table names them
// (SetCwdCalls); until it has, every syscall counts as one, which only
// costs the cache (a thread in flight then leaves it at its next
// notification or its exit, never by /proc/TID/syscall).
var cwdCalls atomic.Pointer[[]int]

// SetCwdCalls tells the cache which syscalls change a thread's cwd: those
// whose notifications are announced with CwdChanging.
//
// umask says whether umask(2) is among them: the table names syscall
// numbers, this package does not (supervisor's TestNoSyscallOutsideTheTable).
func SetCwdCalls(nrs []int, umask bool) {
	c := slices.Clone(nrs)
	umaskCall.Store(umask)
	cwdCalls.Store(&c)
}

// umaskCall: umask(2) is one of the announced calls (SetCwdCalls).
var umaskCall atomic.Bool

// changesCwd reports whether syscall nr is one announced by CwdChanging:
// a thread seen blocked in it may not have made its change yet.
func changesCwd(nr int) bool {
	p := cwdCalls.Load()
	return p == nil || slices.Contains(*p, nr)
}

// dropCwdLocked forgets e's cached cwd and umask.
func (c *threadCache) dropCwdLocked(e *threadEntry) {
	if e.cwd != nil {
		c.unrefCwdLocked(e.cwd)
		e.cwd = nil
	}
	e.umask = noUmask
}

func (c *threadCache) unrefCwdLocked(w *cwdFd) {
	w.refs--
	if w.refs == 0 {
		unix.Close(w.fd)
	}
}

// cwd returns an fd of the thread's working directory and a function to
// call when done with it.
func (t *Thread) cwd() (int, func(), error) {
	c := threads
	c.mu.Lock()
	c.reapChdirsLocked()
	if len(c.chdirs) == 0 && t.e.cwd != nil {
		w := t.e.cwd
		w.refs++
		c.mu.Unlock()
		return w.fd, func() { c.mu.Lock(); c.unrefCwdLocked(w); c.mu.Unlock() }, nil
	}
	start := c.cwdReadStartLocked()
	c.mu.Unlock()
	fd, err := t.openProc("cwd", 0)
	if err != nil {
		return -1, nil, err
	}
	w := &cwdFd{fd: fd, refs: 1}
	c.mu.Lock()
	if c.cwdStorableLocked(start) && !t.e.dropped {
		c.dropCwdLocked(t.e)
		w.refs++ // the cache's reference
		t.e.cwd = w
	}
	c.mu.Unlock()
	return fd, func() { c.mu.Lock(); c.unrefCwdLocked(w); c.mu.Unlock() }, nil
}

// cwdRead is the state of the protocol when a read of /proc/TID/cwd began.
type cwdRead struct {
	gen   uint64
	quiet bool // nothing was in flight
}

func (c *threadCache) cwdReadStartLocked() cwdRead {
	return cwdRead{gen: c.cwdGen, quiet: len(c.chdirs) == 0}
}

// cwdStorableLocked reports whether what a read that began at start
// found may be cached. Without start.quiet, a chdir continued before the
// read began could run during it and leave the set before now: the read
// would be the old cwd, stored as current.
func (c *threadCache) cwdStorableLocked(start cwdRead) bool {
	return start.quiet && c.cwdGen == start.gen && len(c.chdirs) == 0
}

// noUmask marks a thread entry without a cached umask.
const noUmask = ^uint32(0)

// Umask is the thread's umask: cached between its notifications under
// the protocol above, when the table announces umask(2) like a chdir
// (SetCwdCalls names it), else read now from /proc/TID/status.
func (t *Thread) Umask() (uint32, error) {
	c := threads
	if !umaskAnnounced() {
		return readUmaskAt(t.e.procDir, t.TID)
	}
	c.mu.Lock()
	c.reapChdirsLocked()
	if len(c.chdirs) == 0 && t.e.umask != noUmask {
		m := t.e.umask
		c.mu.Unlock()
		return m, nil
	}
	start := c.cwdReadStartLocked()
	c.mu.Unlock()
	m, err := readUmaskAt(t.e.procDir, t.TID)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	if c.cwdStorableLocked(start) && !t.e.dropped {
		t.e.umask = m
	}
	c.mu.Unlock()
	return m, nil
}

// umaskAnnounced reports whether the table has named the calls it
// announces (SetCwdCalls) and umask(2) is one of them: until then
// changesCwd counts every call, which says nothing about umask.
func umaskAnnounced() bool {
	return cwdCalls.Load() != nil && umaskCall.Load()
}
