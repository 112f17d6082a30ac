package notify

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

var (
	// ErrGone: the notification no longer exists (the target was killed or
	// a signal aborted the syscall). Nothing was done; the caller moves on
	// to the next notification. It also answers IDValid for a dead id.
	// It wraps unix.ENOENT, the kernel's answer.
	ErrGone = fmt.Errorf("notify: notification no longer valid (target interrupted or gone): %w", unix.ENOENT)
	// ErrClosed: the Listener was closed by its owner. It matches
	// os.ErrClosed, as a closed net.Conn or os.File does.
	ErrClosed = fmt.Errorf("notify: listener closed: %w", os.ErrClosed)
	// ErrNotSupported: the running kernel lacks the feature asked for.
	ErrNotSupported = errors.New("notify: not supported by this kernel")
)

// Notif is one intercepted syscall. Pid is the thread id (in the
// supervisor's pid namespace) of the calling thread, not its process id.
type Notif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

// Listener serves one seccomp listener fd.
//
// Concurrency: any number of goroutines may call Receive and the respond
// methods at once. Receivers take turns: one waits in poll(2) on the fd
// while the others wait on a mutex, so no OS thread sits in a RECV ioctl
// that nothing could wake. A notification received by one goroutine may be
// answered from any goroutine.
//
// Shutdown: when the last task using the filter exits, the kernel reports
// POLLHUP and every Receive returns io.EOF. Close makes every current and
// later Receive return ErrClosed (closing a fd does not wake a poll or a
// blocked ioctl on it, so Close signals an eventfd the pollers also watch);
// the fd itself is closed once no method is still using it, so a fd number
// is never reused under an ioctl. One receiver can still be inside RECV
// (a notification that vanished between poll and receive, rare); it
// returns at the next notification or when the last target exits. Closing the listener makes every pending
// and future watched syscall of the targets fail with ENOSYS: the sandbox
// fails closed.
type Listener struct {
	fd   int
	wake int // eventfd written by Close; -1 if none could be made

	recvMu sync.Mutex // one poller at a time
	eof    bool       // guarded by recvMu: POLLHUP seen
	// blind: Receive waits in a poll the Go scheduler is not told of
	// (SetBlindWait).
	blind atomic.Bool

	mu     sync.Mutex
	refs   int
	closed bool
}

// pollFallbackMs bounds a poll when no eventfd exists, so Close is still
// noticed.
const pollFallbackMs = 200

// NewListener takes ownership of fd.
// IsListener reports whether f is a seccomp listener (the anonymous inode
// SECCOMP_FILTER_FLAG_NEW_LISTENER returns), before a supervisor adopts an
// fd another process said was one.
func IsListener(f *os.File) bool {
	l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	return err == nil && l == "anon_inode:seccomp notify"
}

func NewListener(fd int) *Listener {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		wake = -1
	}
	return &Listener{fd: fd, wake: wake}
}

func (l *Listener) acquire() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.refs++
	return nil
}

func (l *Listener) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refs--
	if l.closed && l.refs == 0 {
		l.closeFds()
	}
}

func (l *Listener) closeFds() {
	if l.fd >= 0 {
		unix.Close(l.fd)
		l.fd = -1
	}
	if l.wake >= 0 {
		unix.Close(l.wake)
		l.wake = -1
	}
}

// Close stops the listener. It does not wait for receivers to notice.
func (l *Listener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	if l.wake >= 0 {
		var one = [8]byte{1}
		unix.Write(l.wake, one[:])
	}
	if l.refs == 0 {
		l.closeFds()
	}
	return nil
}

func (l *Listener) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Receive blocks until a notification arrives and stores it in n.
// It returns io.EOF once no task uses the filter any more, ErrGone when a
// notification vanished between poll and receive (call again), and
// ErrClosed after Close.
func (l *Listener) Receive(n *Notif) error { return l.ReceiveQuiet(n, nil) }

// ReceiveQuiet is Receive on a goroutine that may hold q: while it is
// held, the wait unblocks the thread's signals for its duration only
// (Quiet).
func (l *Listener) ReceiveQuiet(n *Notif, q *Quiet) error {
	if err := l.acquire(); err != nil {
		return err
	}
	defer l.release()
	l.recvMu.Lock()
	defer l.recvMu.Unlock()

	fds := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLIN}}
	timeout := -1
	if l.wake >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(l.wake), Events: unix.POLLIN})
	} else {
		timeout = pollFallbackMs
	}
	lockFailures := 0
	for {
		if l.isClosed() {
			return ErrClosed
		}
		if l.eof {
			return io.EOF
		}
		for i := range fds {
			fds[i].Revents = 0
		}
		_, err := ppoll(fds, timeout, q.waitMask(), l.blind.Load())
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return fmt.Errorf("notify: poll on listener: %w", err)
		}
		if len(fds) > 1 && fds[1].Revents != 0 {
			return ErrClosed
		}
		re := fds[0].Revents
		switch {
		case re&unix.POLLIN != 0:
			var raw seccompNotif
			err := ioctlNotifRecv(l.fd, &raw)
			switch {
			case err == nil:
				*n = Notif{ID: raw.ID, Pid: raw.Pid, Flags: raw.Flags, Nr: raw.Data.Nr,
					Arch: raw.Data.Arch, IP: raw.Data.IP, Args: raw.Data.Args}
				return nil
			case err == unix.EINTR:
				continue // SIGURG preemption; nothing was taken
			case err == unix.ENOENT:
				if re&unix.POLLHUP != 0 {
					l.eof = true
					return io.EOF
				}
				return ErrGone
			}
			return fmt.Errorf("notify: SECCOMP_IOCTL_NOTIF_RECV: %w", err)
		case re&unix.POLLHUP != 0:
			l.eof = true
			return io.EOF
		case re == unix.POLLERR && lockFailures < maxLockFailures:
			// The kernel's poll of a listener answers POLLERR alone
			// when a signal interrupted its wait for the filter's lock
			// (seccomp_notify_poll: mutex_lock_interruptible): the
			// runtime's preemption signal does that now and then. Poll
			// again; only a listener that keeps answering so is broken.
			lockFailures++
			continue
		case re&(unix.POLLERR|unix.POLLNVAL) != 0:
			return fmt.Errorf("notify: listener fd not pollable (revents %#x)", re)
		}
	}
}

// maxLockFailures bounds the POLLERRs in a row that Receive takes for an
// interrupted lock before it reports the listener broken.
const maxLockFailures = 1000

// SetBlindWait makes Receive wait for a notification in a poll(2) the Go
// scheduler is not told of (a raw syscall): the waiting goroutine keeps
// its P (the runtime's right to run Go code) as if it were computing.
//
// A goroutine that waits in an ordinary syscall leaves its P in a state
// the runtime's monitor (sysmon) takes it back from after 20 µs whenever
// no other P is idle, and a runtime with a P in a syscall keeps sysmon
// polling every 20 µs. A supervisor that waits between calls of a busy
// target pays for that at every call: on the 2-vCPU test VM sysmon took
// a fifth of the supervisor's CPU samples, and taking the P back and
// handing it on woke threads (docs/history/kernel-performance.md, "The fourth round").
//
// The cost is the P: only one goroutine polls at a time (Receive's
// lock), and the program should give the runtime one P more for it
// (GOMAXPROCS), or the rest runs on one P fewer; with GOMAXPROCS 1 nothing
// else runs until a notification comes or the runtime preempts the
// waiter (after 10 ms, with a signal that interrupts the poll; the
// garbage collector stops it the same way). It stays set for the
// listener's life.
func (l *Listener) SetBlindWait() { l.blind.Store(true) }

func (l *Listener) send(r *seccompNotifResp) error {
	if err := l.acquire(); err != nil {
		return err
	}
	defer l.release()
	for {
		err := ioctlNotifSend(l.fd, r)
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue // the response was not delivered
		case unix.ENOENT:
			return ErrGone
		case unix.EINPROGRESS:
			return fmt.Errorf("notify: SECCOMP_IOCTL_NOTIF_SEND: notification %d not received or already answered: %w", r.ID, err)
		}
		return fmt.Errorf("notify: SECCOMP_IOCTL_NOTIF_SEND: %w", err)
	}
}

// Continue lets the syscall run as the target issued it. The kernel reads
// the arguments again afterwards: only continue what Landlock would allow
// anyway, or what was decided without reading target memory.
func (l *Listener) Continue(id uint64) error {
	return l.send(&seccompNotifResp{ID: id, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE})
}

// RespondError fails the syscall with errno, which must not be 0.
func (l *Listener) RespondError(id uint64, errno unix.Errno) error {
	if errno == 0 || errno > 4095 {
		return fmt.Errorf("notify: RespondError with errno %d: not an error (use RespondValue)", uintptr(errno))
	}
	return l.send(&seccompNotifResp{ID: id, Error: -int32(errno)})
}

// RespondValue completes the syscall with val as its return value.
func (l *Listener) RespondValue(id uint64, val int64) error {
	return l.send(&seccompNotifResp{ID: id, Val: val})
}

// AddFD installs a duplicate of the supervisor's srcFd in the target and, in
// the same step, completes the syscall with the new fd number as its result
// (SECCOMP_ADDFD_FLAG_SEND), so an interrupted target can never receive an
// fd it does not know about. It returns the target's fd number. The calling
// thread's signals are blocked while it waits for the target to take the
// fd (microseconds, unless the target is stopped).
func (l *Listener) AddFD(id uint64, srcFd int, cloexec bool) (int, error) {
	return l.addfd(id, srcFd, cloexec, nil)
}

// AddFDQuiet is AddFD on a goroutine with a Quiet: the goroutine holds it
// from here on (Hold), so the ioctl needs no signal mask of its own, and
// the next ReceiveQuiet waits with the thread's signals unblocked. With
// a nil q it is AddFD.
func (l *Listener) AddFDQuiet(id uint64, srcFd int, cloexec bool, q *Quiet) (int, error) {
	return l.addfd(id, srcFd, cloexec, q)
}

func (l *Listener) addfd(id uint64, srcFd int, cloexec bool, q *Quiet) (int, error) {
	if srcFd < 0 {
		return -1, fmt.Errorf("notify: AddFD with invalid source fd %d", srcFd)
	}
	if err := l.acquire(); err != nil {
		return -1, err
	}
	defer l.release()
	a := seccompNotifAddfd{ID: id, Srcfd: uint32(srcFd), Flags: unix.SECCOMP_ADDFD_FLAG_SEND}
	if cloexec {
		a.NewfdFlags = unix.O_CLOEXEC
	}
	// With FLAG_SEND the kernel marks the notification answered before it
	// waits for the target to install the fd. A signal during that wait
	// withdraws the fd but not the answer: the restarted ioctl then fails
	// (EINPROGRESS/ENOENT) and the target's syscall returns 0 with no fd
	// (TestKernelAddFDUnderSignals). So the wait must not be interruptible:
	// block every blockable signal on this thread for the ioctl. The wait
	// still ends if the target dies (the kernel fails it with ESRCH).
	// A held Quiet has them blocked from one call to the next (quiet.go);
	// otherwise (no Quiet, or a CPU profile is being taken) they are
	// blocked for this ioctl alone.
	if err := q.Hold(); err != nil {
		return -1, fmt.Errorf("notify: ADDFD: %w", err)
	}
	if !q.Held() {
		var once Quiet
		if err := once.block(&allSignals); err != nil {
			return -1, fmt.Errorf("notify: ADDFD: %w", err)
		}
		defer once.Release()
	}
	fd, err := ioctlNotifAddfd(l.fd, &a)
	switch err {
	case nil:
		return fd, nil
	case unix.EINTR:
		// Only SIGSTOP can still interrupt; the request was withdrawn
		// but the answer may not have been (see above).
		return -1, fmt.Errorf("notify: SECCOMP_IOCTL_NOTIF_ADDFD interrupted; the target may have seen an empty result: %w", err)
	case unix.ESRCH:
		return -1, ErrGone // the target died before installing the fd
	case unix.ENOENT:
		return -1, ErrGone
	case unix.EINVAL:
		return -1, fmt.Errorf("notify: SECCOMP_IOCTL_NOTIF_ADDFD with FLAG_SEND (Linux 5.14+) refused: %w", err)
	}
	return -1, fmt.Errorf("notify: SECCOMP_IOCTL_NOTIF_ADDFD: %w", err)
}

// IDValid returns nil while the target is still blocked in syscall id, and
// ErrGone otherwise. Check it after reading target memory or opening
// /proc/TID files and before trusting what was read: a dead target's tid
// and stack can be reused.
func (l *Listener) IDValid(id uint64) error {
	if err := l.acquire(); err != nil {
		return err
	}
	defer l.release()
	for {
		err := ioctlNotifIDValid(l.fd, id)
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		case unix.ENOENT:
			return ErrGone
		}
		return fmt.Errorf("notify: SECCOMP_IOCTL_NOTIF_ID_VALID: %w", err)
	}
}

// SetSyncWakeUp asks the kernel to wake the target on the answering CPU
// (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6+). It wins on serial
// workloads and loses on parallel ones (docs/kernel.md, "Cost"). On an
// older kernel the error wraps ErrNotSupported. The flag stays set for the
// listener's life.
func (l *Listener) SetSyncWakeUp() error {
	if err := l.acquire(); err != nil {
		return err
	}
	defer l.release()
	err := ioctlNotifSetFlags(l.fd, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	switch err {
	case nil:
		return nil
	case unix.EINVAL, unix.ENOTTY, unix.EOPNOTSUPP:
		return fmt.Errorf("notify: SECCOMP_IOCTL_NOTIF_SET_FLAGS(SYNC_WAKE_UP) needs Linux 6.6+: %w: %w", ErrNotSupported, err)
	}
	return fmt.Errorf("notify: SECCOMP_IOCTL_NOTIF_SET_FLAGS: %w", err)
}
