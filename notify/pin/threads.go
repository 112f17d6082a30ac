package pin

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The thread cache: what the supervisor learns about a target thread
// once and may reuse, and nothing it could not check on every use.
//
// An entry holds the thread's pidfd (PIDFD_THREAD) and an O_PATH fd of
// its /proc/TID directory. Every Lookup asks the kernel through the pidfd
// for the thread's credentials and thread group (PIDFD_GET_INFO, one
// ioctl): a pidfd names one struct pid, so the answer is about that very
// thread, and a thread that exited fails it (ESRCH) — its tid may since
// belong to another thread, so the entry is dropped and a new one made.
// Credentials are never cached: only the thread itself can change them,
// and it is blocked in the notified call while the supervisor reads them.
// /proc/TID opened once saves the two procfs lookups of "/proc" and the
// tid on every later /proc/TID/... open; it is bound to the same struct
// pid, so a reused tid never reaches another thread's files through it.
//
// What an entry does cache, and what invalidates it:
//   - root: whether the thread's root is the supervisor's own "/",
//     checked at its first lookup. A confined thread cannot chroot,
//     pivot_root or setns (the filter refuses them); only
//     unshare(CLONE_NEWNS) moves it to a copy of the mount tree, and the
//     supervisor is told of that unshare (RootChanged) while the thread
//     waits in it, so the next lookup checks again.
//   - exe: the executable's path, for the review log only (never for a
//     decision), forgotten for the whole thread group when any of its
//     threads execs (ExecChanged).
//
// The cache is bounded; past maxThreads entries the ones whose threads
// exited are closed (one poll of their pidfds), and if none have, the
// least recently used half.

// maxThreads bounds the cache (each entry holds two fds).
var maxThreads = 1024

// Thread is a validated view of one target thread. Release it when done.
type Thread struct {
	TID  int
	Tgid int
	// Cred is the thread's filesystem identity, as read now (nil: the
	// supervisor's own).
	Cred *Cred

	e *threadEntry
}

// Pidfd is the thread's pidfd (PIDFD_THREAD), valid until Release.
func (t *Thread) Pidfd() int { return t.e.pidfd }

// Release gives the entry back to the cache.
func (t *Thread) Release() {
	if t != nil && t.e != nil {
		threads.put(t.e)
		t.e = nil
	}
}

type threadEntry struct {
	tid     int
	pidfd   int
	procDir int // O_PATH /proc/TID

	// guarded by threadCache.mu
	refs    int
	dropped bool
	used    uint64
	root    rootState
	exe     string // "" unknown
	exeTgid int    // the group exe was read for: its key in threadCache.exes
	cwd     *cwdFd // see cwd.go
	umask   uint32 // see cwd.go; noUmask when not cached
}

type rootState uint8

const (
	rootUnknown rootState = iota
	rootOurs
	rootOther
)

type threadCache struct {
	mu    sync.Mutex
	m     map[int]*threadEntry
	clock uint64
	// exeGen changes whenever an exe is forgotten, so a reader that began
	// before cannot store what it read.
	exeGen atomic.Uint64
	// exes indexes the entries holding an exe by the group it was read
	// for, so ExecChanged forgets a group's without a look at every
	// entry (the cache is full of exited processes' entries on a workload
	// that spawns: that scan was 5% of the supervisor's CPU).
	exes map[int][]*threadEntry

	// The cwd protocol (cwd.go).
	cwdGen   uint64
	chdirs   map[int]chdirInFlight
	inFlight atomic.Int32
}

var threads = &threadCache{m: map[int]*threadEntry{}, chdirs: map[int]chdirInFlight{}, exes: map[int][]*threadEntry{}}

// LookupThread returns thread tid, validated now: its pidfd answered, so
// Tgid and Cred are the live thread's. A thread that is gone is ESRCH.
func LookupThread(tid int) (*Thread, error) {
	if tid <= 0 {
		return nil, fmt.Errorf("pin: invalid tid %d: %w", tid, unix.ESRCH)
	}
	for try := 0; try < 2; try++ {
		e, err := threads.get(tid)
		if err != nil {
			return nil, err
		}
		info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_CREDS}
		err = unix.IoctlPidfdInfo(e.pidfd, &info)
		if err == nil && info.Mask&unix.PIDFD_INFO_CREDS != 0 && info.Tgid != 0 {
			t := &Thread{TID: tid, Tgid: int(info.Tgid), e: e}
			self := selfCred()
			if info.Fsuid != self.uid || info.Fsgid != self.gid {
				// Groups are not in PIDFD_GET_INFO: read them.
				st, err := readStatusAt(e.procDir, tid)
				if err != nil {
					threads.put(e)
					return nil, err
				}
				st.same = st.cred.UID == self.uid && st.cred.GID == self.gid && sameGroups(st.cred.Groups, self.groups)
				t.Cred = st.credp()
			}
			return t, nil
		}
		// The entry's thread is gone (its tid may be someone else's
		// now): forget it and look again once.
		threads.drop(e)
		threads.put(e)
		if err != nil && err != unix.ESRCH {
			return nil, fmt.Errorf("pin: PIDFD_GET_INFO of thread %d: %w", tid, err)
		}
	}
	return nil, fmt.Errorf("pin: thread %d is gone: %w", tid, unix.ESRCH)
}

func (c *threadCache) get(tid int) (*threadEntry, error) {
	c.mu.Lock()
	if e := c.m[tid]; e != nil {
		e.refs++
		c.clock++
		e.used = c.clock
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()
	e, err := openThread(tid)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[tid]; old != nil {
		// Another goroutine made one meanwhile (the same thread, or a
		// dead one LookupThread will drop): keep the cached one.
		closeEntry(e)
		old.refs++
		return old, nil
	}
	if len(c.m) >= maxThreads {
		c.sweepLocked()
	}
	c.clock++
	e.used, e.refs = c.clock, 1
	c.m[tid] = e
	return e, nil
}

func openThread(tid int) (*threadEntry, error) {
	pidfd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if err != nil {
		if err == unix.ESRCH || err == unix.ENOENT {
			return nil, fmt.Errorf("pin: thread %d is gone: %w", tid, unix.ESRCH)
		}
		return nil, fmt.Errorf("pin: pidfd_open(%d): %w", tid, err)
	}
	dir, err := unix.Open("/proc/"+strconv.Itoa(tid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(pidfd)
		if err == unix.ENOENT {
			return nil, fmt.Errorf("pin: thread %d is gone: %w", tid, unix.ESRCH)
		}
		return nil, fmt.Errorf("pin: open /proc/%d: %w", tid, err)
	}
	return &threadEntry{tid: tid, pidfd: pidfd, procDir: dir, umask: noUmask}, nil
}

func closeEntry(e *threadEntry) {
	unix.Close(e.pidfd)
	unix.Close(e.procDir)
}

func (c *threadCache) put(e *threadEntry) {
	c.mu.Lock()
	e.refs--
	done := e.refs == 0 && e.dropped
	c.mu.Unlock()
	if done {
		closeEntry(e)
	}
}

// drop removes e from the map; its fds close with the last reference.
func (c *threadCache) drop(e *threadEntry) {
	c.mu.Lock()
	c.dropLocked(e)
	c.mu.Unlock()
}

func (c *threadCache) dropLocked(e *threadEntry) {
	if c.m[e.tid] == e {
		delete(c.m, e.tid)
	}
	if !e.dropped {
		e.dropped = true
		c.forgetExeLocked(e)
		c.dropCwdLocked(e)
		if e.refs == 0 {
			closeEntry(e)
		}
	}
}

// sweepLocked frees room: entries of exited threads (a pidfd polls
// readable once its thread has exited), else the least recently used half.
func (c *threadCache) sweepLocked() {
	es := make([]*threadEntry, 0, len(c.m))
	fds := make([]unix.PollFd, 0, len(c.m))
	for _, e := range c.m {
		es = append(es, e)
		fds = append(fds, unix.PollFd{Fd: int32(e.pidfd), Events: unix.POLLIN})
	}
	n, err := unix.Poll(fds, 0)
	freed := 0
	if err == nil && n > 0 {
		for i, f := range fds {
			if f.Revents != 0 {
				c.dropLocked(es[i])
				freed++
			}
		}
	}
	if freed > 0 && len(c.m) < maxThreads*3/4 {
		return
	}
	// Everyone is alive: forget the least recently used half (they are
	// made again on their next notification).
	var cut uint64
	{
		us := make([]uint64, 0, len(c.m))
		for _, e := range c.m {
			us = append(us, e.used)
		}
		cut = median(us)
	}
	for _, e := range c.m {
		if e.used <= cut {
			c.dropLocked(e)
		}
	}
}

func median(us []uint64) uint64 {
	// Quickselect is overkill for 1024 entries: sort a copy.
	s := append([]uint64(nil), us...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

// rootIsOurs reports whether the thread's root is the supervisor's own
// "/" (checked once per thread; see RootChanged).
func (t *Thread) rootIsOurs() bool {
	threads.mu.Lock()
	r := t.e.root
	threads.mu.Unlock()
	if r != rootUnknown {
		return r == rootOurs
	}
	r = rootOther
	if own, err := ownRoot(); err == nil {
		var sx unix.Statx_t
		if unix.Statx(t.e.procDir, "root", 0, unix.STATX_INO|unix.STATX_MNT_ID, &sx) == nil &&
			(mntIno{mnt: sx.Mnt_id, ino: sx.Ino}) == own {
			r = rootOurs
		}
	}
	threads.mu.Lock()
	t.e.root = r
	threads.mu.Unlock()
	return r == rootOurs
}

// openProc opens /proc/TID/<name> through the cached directory, as
// openProcLink does by path.
func (t *Thread) openProc(name string, extra int) (int, error) {
	for {
		fd, err := unix.Openat(t.e.procDir, name, unix.O_PATH|unix.O_CLOEXEC|extra, 0)
		if err == unix.EINTR {
			continue
		}
		if err == nil {
			return fd, nil
		}
		if err == unix.ENOENT {
			var st unix.Stat_t
			if unix.Fstatat(t.e.procDir, "stat", &st, 0) != nil {
				return -1, fmt.Errorf("pin: thread %d is gone: %w", t.TID, unix.ESRCH)
			}
			if name != "cwd" && name != "root" {
				return -1, unix.EBADF
			}
		}
		return -1, fmt.Errorf("pin: open /proc/%d/%s: %w", t.TID, name, err)
	}
}

// RootChanged tells the cache that thread tid is in unshare(2), which
// may give it a copy of the mount tree as its root: the thread's root is
// checked again at its next lookup. Call it before the call is
// continued. (Only the thread's own notifications look its root up, and
// the thread is blocked in unshare until then, so no check can begin
// before and finish after the change.)
func RootChanged(tid int) {
	threads.mu.Lock()
	if e := threads.m[tid]; e != nil {
		e.root = rootUnknown
	}
	threads.mu.Unlock()
}

// ExecChanged forgets the cached executable of every thread of process
// tgid (it exec'd, or is about to).
func ExecChanged(tgid int) {
	threads.exeGen.Add(1)
	threads.mu.Lock()
	for _, e := range threads.exes[tgid] {
		e.exe = ""
	}
	delete(threads.exes, tgid)
	threads.mu.Unlock()
}

// setExeLocked caches exe for e, read for group tgid.
func (c *threadCache) setExeLocked(e *threadEntry, tgid int, exe string) {
	c.forgetExeLocked(e)
	if e.dropped {
		return
	}
	e.exe, e.exeTgid = exe, tgid
	c.exes[tgid] = append(c.exes[tgid], e)
}

// forgetExeLocked forgets e's exe and takes e out of the index.
func (c *threadCache) forgetExeLocked(e *threadEntry) {
	if e.exe == "" {
		return
	}
	es := c.exes[e.exeTgid]
	for i, x := range es {
		if x == e {
			es[i] = es[len(es)-1]
			es[len(es)-1] = nil
			es = es[:len(es)-1]
			break
		}
	}
	if len(es) == 0 {
		delete(c.exes, e.exeTgid)
	} else {
		c.exes[e.exeTgid] = es
	}
	e.exe = ""
}

// Exe is the thread's executable path, for people and the review log
// only: it may be a moment stale around an exec. "" when unreadable.
func (t *Thread) Exe() string {
	threads.mu.Lock()
	exe := t.e.exe
	threads.mu.Unlock()
	if exe != "" {
		return exe
	}
	gen := threads.exeGen.Load()
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(t.e.procDir, "exe", buf)
	if err != nil {
		return ""
	}
	exe = string(buf[:n])
	threads.mu.Lock()
	if threads.exeGen.Load() == gen {
		threads.setExeLocked(t.e, t.Tgid, exe)
	}
	threads.mu.Unlock()
	return exe
}

// readStatusAt is readStatus through an open /proc/TID directory.
func readStatusAt(dir, tid int) (*procStatus, error) {
	fd, err := unix.Openat(dir, "status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ESRCH {
			err = unix.ESRCH
		}
		return nil, fmt.Errorf("pin: read status of thread %d: %w", tid, err)
	}
	defer unix.Close(fd)
	return readStatusFd(fd, tid)
}

// Cwd is the path of the thread's working directory, read now, for
// messages and for relative paths in scripts; "" when unreadable.
func (t *Thread) Cwd() string {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(t.e.procDir, "cwd", buf)
	if err != nil {
		return ""
	}
	return string(buf[:n])
}

// readUmaskAt reads the umask of thread tid from its /proc/TID/status
// through the open /proc/TID directory dir. Only the start of the file
// is read: "Umask:" is its second line, after "Name:" (the kernel makes
// the whole file at the first read either way); a name too long for the
// buffer falls back to reading it all.
func readUmaskAt(dir, tid int) (uint32, error) {
	fd, err := unix.Openat(dir, "status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ESRCH {
			err = unix.ESRCH
		}
		return 0, fmt.Errorf("pin: read status of thread %d: %w", tid, err)
	}
	var buf [256]byte
	n, err := unix.Read(fd, buf[:])
	for err == unix.EINTR {
		n, err = unix.Read(fd, buf[:])
	}
	unix.Close(fd)
	if err != nil {
		return 0, fmt.Errorf("pin: read status of thread %d: %w", tid, err)
	}
	if m, ok := umaskField(buf[:n]); ok {
		return m, nil
	}
	st, err := readStatusAt(dir, tid)
	if err != nil {
		return 0, err
	}
	return st.umask, nil
}

// umaskField finds the "Umask:" line of a /proc/TID/status text (or its
// start) and parses its octal value; false when the line is not whole in
// b or not a umask.
func umaskField(b []byte) (uint32, bool) {
	const key = "\nUmask:"
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := b[i+len(key):]
	end := bytes.IndexByte(rest, '\n')
	if end < 0 {
		return 0, false
	}
	v := bytes.TrimSpace(rest[:end])
	if len(v) == 0 || len(v) > 4 {
		return 0, false
	}
	var m uint32
	for _, c := range v {
		if c < '0' || c > '7' {
			return 0, false
		}
		m = m<<3 | uint32(c-'0')
	}
	if m > 0o777 {
		return 0, false
	}
	return m, true
}
