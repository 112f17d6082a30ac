package supervisor

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/engine/shell"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// execve cannot be emulated: the kernel must load the new image into the
// calling process. So an allowed exec is continued, and because the
// kernel then reads the path and argv again (a second thread may have
// changed them since the check), the result is verified: the process's
// /proc/PID/exe must be the file the judged image loads (the binary, or
// the last interpreter of its #! chain) and its command line exactly the
// argv the kernel builds from the judged one. A process that fails is
// killed with SIGKILL; so is one whose state cannot be read (a starved
// supervisor, a process that made itself unreadable): an exec that cannot
// be verified is treated as one that failed, never forgotten.
//
// Verification happens at the first of: the process's next notification
// (held until verified) — normally arch_prctl(ARCH_SET_FS), which every
// libc and the Go runtime make before main and before any constructor, so
// argv is checked before the program can rewrite it (mkdir -p does) — or
// a poller that watches /proc right after the continue, for images that
// never make that call. The process is held by a pidfd, so a pid reused by
// another process is never verified or killed in its place. The residual
// window is in docs/security.md.

type pendingExec struct {
	proc    *pin.Process // the exec'ing process, held so its pid cannot be mistaken
	tgid    int
	tid     int         // the thread that called exec
	pre     pin.Running // what the process ran before the exec
	wantExe pin.FileID  // what /proc/PID/exe must become
	wantCmd []byte      // the command line the kernel builds, NUL-terminated strings
	wantEnv []string    // the environment's loader entries judged (engine.LoaderEnv)
	display []string    // the command line shown, for messages (rendered only for one)
	// done: verified, killed or gone; the poller stops and nobody acts
	// on it again.
	done      atomic.Bool
	startedAt time.Time
	// firstLook starts the poller (firstLookAfter the continue) unless
	// the exec is settled first; finish stops it.
	firstLook *time.Timer
	// refs counts who may still use proc (the poller, checkers); guarded
	// by execVerifier.mu. The pidfd is closed when it drops to 0 after
	// done, so a checker never signals a pidfd number reused meanwhile.
	refs int
	// refused: the exec was refused, and continued only so that the
	// program exists when it is told why (notice.go, refuseExec): once
	// the new image is verified, this line goes to its stderr and it is
	// killed before it runs a line of its own.
	refused []byte
	// stopped is closed once stop has told and killed a refused exec's
	// program: whoever else found it refused waits for that before
	// answering its call, or the call would return (arch_prctl refused:
	// the loader's "cannot set up thread-local storage") before the
	// SIGKILL was sent, and the program would run its error path.
	stopped chan struct{}
}

// command is the command line shown in messages about p.
func (p *pendingExec) command() string { return shell.RenderArgv(p.display) }

type execVerifier struct {
	s       *supervisor
	mu      sync.Mutex
	pending map[int]*pendingExec // by the exec'ing thread's id, and by its process's
	count   atomic.Int32
}

func (v *execVerifier) init(s *supervisor) {
	v.s = s
	v.pending = map[int]*pendingExec{}
}

// continueExec lets an allowed exec run and arranges its verification.
// Whatever keeps it from being verified refuses the exec instead. With a
// refusal line, the exec was refused: the new image is verified like any
// other, then told the line and killed at its first stop (refuseExec).
func (s *supervisor) continueExec(id uint64, c *execCall, refused []byte) {
	p := &pendingExec{tid: c.tid, startedAt: time.Now(), display: displayArgv(c.raw, c.path.Path, c.argv), refused: refused}
	if refused != nil {
		p.stopped = make(chan struct{})
	}
	refuse := func(why string, err error) {
		s.respondErr(id, unix.EACCES)
		s.notices.Line("permwrap: refused exec of " + p.command() + ": " + why + ": " + err.Error())
	}
	// The thread's group: the one the decoder's lookup of the thread
	// gave (PIDFD_GET_INFO on the thread cache's pidfd), trusted as
	// everything decoded is once the notification was still valid after
	// it. A thread's group does not change while it waits in this call;
	// a thread that died since (its tid perhaps another thread's now), or
	// was killed by another thread's exec, has lost this notification, so
	// Continue below fails and the pending exec is dropped. Without a
	// lookup (the decoder's failed) it is asked now.
	tgid := c.tgid
	if tgid <= 0 {
		th, err := pin.LookupThread(c.tid)
		if err != nil {
			refuse("its process could not be identified", err)
			return
		}
		tgid = th.Tgid
		th.Release()
	}
	p.tgid = tgid
	// Whatever the thread cache remembers of the old image is stale from
	// now on.
	pin.ExecChanged(tgid)
	var err error
	if p.proc, err = pin.OpenProcess(tgid); err != nil {
		refuse("it could not be held for verification", err)
		return
	}
	// What it runs now, read while its thread waits for this answer: the
	// Continue below succeeding proves the read was about this process
	// and that no other exec came between (pin.Process.RunningHeld).
	run, err := p.proc.RunningHeld()
	if err != nil {
		p.proc.Close()
		refuse("what it runs now could not be read", err)
		return
	}
	p.pre = run
	p.wantExe = c.image.Loaded()
	p.wantEnv = c.loaderEnv
	for _, a := range c.image.KernelArgv(c.filename, c.argv) {
		p.wantCmd = append(append(p.wantCmd, a...), 0)
	}

	// Registered before the continue: the new image's first call may
	// settle p before Continue even returns, and finish must find it and
	// its timer.
	v := &s.execs
	v.add(p, firstLookAfter, func() { v.poll(p) })
	// No copy of a file the tree was given for writing is still open in
	// the supervisor (installFD): the exec cannot meet ETXTBSY for it.
	s.writeCopies.Lock()
	//lint:ignore SA2001 an empty critical section is the point: a barrier
	s.writeCopies.Unlock()
	if err := s.l.Continue(id); err != nil {
		v.finish(p)
	}
}

// add registers p, awaiting verification, and sets its poller (poll) to
// start after the given delay; p.refs counts the poller's reference.
func (v *execVerifier) add(p *pendingExec, after time.Duration, poll func()) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if old := v.pending[p.tgid]; old != nil && old != p {
		// An earlier exec of this process that never showed (it failed):
		// this exec's verification supersedes it.
		v.dropLocked(old)
	}
	// The exec'ing thread becomes the leader: key by the thread that
	// called, and by the group, so the first notification of the new
	// image finds it either way.
	v.pending[p.tid] = p
	v.pending[p.tgid] = p
	v.count.Store(int32(len(v.pending)))
	p.refs = 1 // the poller's
	p.firstLook = time.AfterFunc(after, poll)
}

// acquire looks up the pending exec of thread tid and takes a reference
// to it (nil when there is none).
func (v *execVerifier) acquire(tid int) *pendingExec {
	v.mu.Lock()
	defer v.mu.Unlock()
	p := v.pending[tid]
	if p == nil || p.done.Load() {
		return nil
	}
	p.refs++
	return p
}

// pendingFor reports whether thread tid has an exec awaiting
// verification (one atomic load while none has).
func (v *execVerifier) pendingFor(tid int) bool {
	if v.count.Load() == 0 {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	p := v.pending[tid]
	return p != nil && !p.done.Load()
}

// release drops a reference; the last one after done closes the pidfd.
func (v *execVerifier) release(p *pendingExec) {
	v.mu.Lock()
	defer v.mu.Unlock()
	p.refs--
	if p.refs == 0 && p.done.Load() {
		p.proc.Close()
	}
}

// finish ends p's verification: it is forgotten and its pidfd released.
// A poller not started yet never starts (its reference is dropped here).
func (v *execVerifier) finish(p *pendingExec) {
	p.done.Store(true)
	v.mu.Lock()
	v.dropLocked(p)
	v.mu.Unlock()
	if p.firstLook != nil && p.firstLook.Stop() {
		v.release(p)
	}
}

func (v *execVerifier) dropLocked(p *pendingExec) {
	p.done.Store(true)
	for _, k := range []int{p.tid, p.tgid} {
		if v.pending[k] == p {
			delete(v.pending, k)
		}
	}
	v.count.Store(int32(len(v.pending)))
	if p.refs == 0 {
		p.proc.Close()
	}
}

type execState int

const (
	execUnchanged  execState = iota // not (visibly) exec'd yet, or the exec failed
	execGood                        // runs exactly what was judged
	execBad                         // runs something else
	execGone                        // exited
	execUnreadable                  // alive, but /proc could not be read
)

// state compares what p's process runs with what was judged. returned
// says the exec'ing thread itself has made another call, so its exec is
// over (done or failed).
func (v *execVerifier) state(p *pendingExec, returned bool) (execState, error) {
	run, ok, err := p.proc.Running()
	switch {
	case errors.Is(err, pin.ErrExited):
		return execGone, nil
	case err != nil:
		return execUnreadable, err
	case !ok, len(run.Cmdline) == 0:
		// Still moving, or mid-exec: the new image's exe is set before
		// its argv area (begin_new_exec, then create_elf_tables); a
		// finished exec always has at least one byte (an empty argv[0]).
		return execUnchanged, nil
	}
	isPre := run.Exe == p.pre.Exe && bytes.Equal(run.Cmdline, p.pre.Cmdline)
	if run.Exe == p.wantExe && bytes.Equal(run.Cmdline, p.wantCmd) {
		if isPre && !returned {
			// The judged image is what ran before: the exec may not
			// have happened yet. Only its end tells.
			return execUnchanged, nil
		}
		return v.envState(p, returned)
	}
	if isPre {
		return execUnchanged, nil
	}
	return execBad, nil
}

// envState compares the loader entries of the environment the kernel
// copied for p's new image with the judged ones: the kernel read envp
// again, and another thread may have added an LD_PRELOAD since it was
// judged. /proc/PID/environ serves every read of one open from the memory
// of the image it was opened on, so the entries are one image's.
//
// An empty environment is believed only once the exec is over (returned):
// the kernel publishes the new image's argv area, which state compared,
// before it copies the environment's strings and publishes their end
// (create_elf_tables sets mm->env_end after its loop), so a look between
// the two reads no entries at all, not even the LD_PRELOAD another thread
// added.
func (v *execVerifier) envState(p *pendingExec, returned bool) (execState, error) {
	bp := environBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 256<<10 { // a huge environment's buffer is not kept
			environBufs.Put(bp)
		}
	}()
	b, err := readEnviron(p.tgid, bp)
	if gone, xerr := p.proc.Exited(); xerr == nil && gone {
		// What was read by pid is about this process only if it was
		// still alive afterwards.
		return execGone, nil
	} else if xerr != nil && err == nil {
		err = xerr
	}
	if err != nil {
		return execUnreadable, err
	}
	if len(b) == 0 && !returned {
		return execUnchanged, nil // mid-exec, or an empty environment: its next call tells
	}
	var got []string
	for len(b) > 0 {
		e, rest, _ := bytes.Cut(b, []byte{0})
		if engine.MayBeLoaderEntry(e) {
			got = append(got, string(e))
		}
		b = rest
	}
	if !slices.Equal(engine.LoaderEnv(got), p.wantEnv) {
		return execBad, nil
	}
	return execGood, nil
}

// environBufs holds readEnviron's buffers: an environment of a few
// kilobytes is read in one read() into one of them.
var environBufs = sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}

// readEnviron reads /proc/PID/environ into *bp (grown for a larger
// environment) and returns the bytes read. It is open, read until the end
// (one read() for an environment that fits) and close: os.ReadFile made
// nine syscalls more per exec verified (the poller registration and its
// undoing, an fstat, and reads that start at 512 bytes).
func readEnviron(pid int, bp *[]byte) ([]byte, error) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/environ", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/proc/" + strconv.Itoa(pid) + "/environ", Err: err}
	}
	defer unix.Close(fd)
	b := *bp
	n := 0
	for {
		if n == len(b) {
			b = append(b, make([]byte, len(b))...)
			*bp = b
		}
		m, err := unix.Read(fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: "/proc/" + strconv.Itoa(pid) + "/environ", Err: err}
		}
		if m == 0 {
			return b[:n], nil
		}
		n += m
	}
}

// settle decides p from its state, re-reading once before a kill (a
// process seen mid-change is looked at again). It returns whether the
// process may go on (false: it was killed).
func (v *execVerifier) settle(p *pendingExec, returned bool) bool {
	st, err := v.state(p, returned)
	if st == execBad || st == execUnreadable {
		time.Sleep(200 * time.Microsecond)
		st, err = v.state(p, returned)
	}
	switch st {
	case execGood:
		if p.refused != nil {
			v.stop(p)
			return false
		}
		pin.ExecChanged(p.tgid)
		v.finish(p)
	case execGone:
		pin.ExecChanged(p.tgid)
		v.finish(p)
	case execBad:
		v.fail(p, "what it executed is not what was checked", nil)
		return false
	case execUnreadable:
		v.fail(p, "its exec could not be verified", err)
		return false
	case execUnchanged:
		if returned {
			// The exec'ing thread is making another call and still runs
			// the old image: its exec failed.
			v.finish(p)
		}
	}
	return true
}

// check is called for every notification before it is handled; it
// returns false when the notification's process failed verification (it
// is killed and the notification refused).
func (v *execVerifier) check(n *notify.Notif) bool {
	if v.count.Load() == 0 {
		return true
	}
	tid := int(n.Pid)
	p := v.acquire(tid)
	if p == nil {
		return true
	}
	defer v.release(p)
	if tid != p.tgid {
		// The exec'ing thread's own id: after an exec by a thread that is
		// not the leader, that id is free and may name another process.
		tg, err := pin.Tgid(tid)
		if err != nil {
			// Whose call this is cannot be told; refuse it, keep p.
			v.s.respondErr(n.ID, unix.EACCES)
			return false
		}
		if tg != p.tgid {
			v.mu.Lock()
			if v.pending[tid] == p {
				delete(v.pending, tid)
				v.count.Store(int32(len(v.pending)))
			}
			v.mu.Unlock()
			return true
		}
	}
	if !v.settle(p, tid == p.tid) {
		v.s.respondErr(n.ID, unix.EACCES)
		return false
	}
	return true
}

// poll watches a continued exec until it is verified, killed or gone. It
// starts firstLookAfter the continue, unless the new image's first call
// settled the exec before (then it never starts); from there it looks
// quickly at first, then ever more slowly, but never gives up while the
// process lives — an exec that has not shown yet may still happen (a
// starved thread) and must not run unverified. An exec that failed leaves
// the old image running, which the poller keeps looking at (at most once
// a second) until the process exits or makes its next call.
func (v *execVerifier) poll(p *pendingExec) {
	defer v.release(p)
	delay := 20 * time.Microsecond
	for !p.done.Load() {
		if !v.settle(p, false) || p.done.Load() {
			return
		}
		time.Sleep(delay)
		limit := 10 * time.Millisecond
		if time.Since(p.startedAt) > 5*time.Second {
			limit = time.Second
		}
		delay = min(delay*2, limit)
	}
}

// firstLookAfter is when the poller first looks, unless the exec was
// settled at the new image's first call before. An exec takes hundreds of
// microseconds to replace the image (0.7 ms for /bin/true on the test
// VM), so a poller started at the continue, as before, found nothing
// there: its looks of the first millisecond were one stat each
// ("glances"), and while the supervisor's threads were idle the Go
// runtime's timers put its next look about 1.2 ms after the continue
// anyway. Starting it here saves the goroutine, the thread woken for it
// just as the target starts its exec, and the glance; about half the
// execs of /bin/true (most of a compiler's) still see the poller, at a
// millisecond, where it verifies what their first call would have. The
// cost: an image that never makes a watched call (no libc, no Go runtime)
// runs up to about a millisecond unverified, where a busy supervisor's
// poller could have caught it after a few hundred microseconds
// (docs/security.md, the residual window).
const firstLookAfter = time.Millisecond

// stopWait bounds how long a call of a refused exec's program waits for
// the goroutine stopping it.
const stopWait = 2 * time.Second

// stop ends a refused exec's program before it runs a line of its own:
// its stderr gets the agent's line — a stream the spawner reads now that
// its spawn succeeded — and the process is killed (once). The person's
// line and the review log's record were written when it was refused.
func (v *execVerifier) stop(p *pendingExec) {
	if !p.done.CompareAndSwap(false, true) {
		// Another goroutine is stopping it (the poller, or the program's
		// first call): the kill is sent before this returns, bounded so
		// that a stuck tell cannot hold a call forever.
		select {
		case <-p.stopped:
		case <-time.After(stopWait):
		}
		return
	}
	defer close(p.stopped)
	_ = notify.TellFd(p.tgid, 2, p.refused, v.s.cfg.Stderr)
	err := p.proc.Kill()
	v.finish(p)
	pin.ExecChanged(p.tgid)
	if err != nil {
		v.s.notices.Line("permwrap: killing refused process " + strconv.Itoa(p.tgid) + " (" + p.command() + ") failed: " + err.Error())
	}
}

// fail kills p's process (once) and tells the person and the log.
func (v *execVerifier) fail(p *pendingExec, what string, err error) {
	if !p.done.CompareAndSwap(false, true) {
		return
	}
	kerr := p.proc.Kill()
	v.finish(p)
	s := v.s
	command := p.command()
	msg := "permwrap: killed process " + strconv.Itoa(p.tgid) + ": " + what + " (" + command + ")"
	if err != nil {
		msg += ": " + err.Error()
	}
	if kerr != nil {
		msg += "; killing it failed: " + kerr.Error()
	}
	s.notices.Line(msg)
	if s.cfg.Log != nil {
		req := authority.NewRequest(engine.Check{Surface: engine.SurfaceExec, Value: command})
		req.Access = "exec"
		req.Process = authority.Process{PID: p.tgid}
		req.Node = s.nodeLabel(p.tgid)
		reason := "the executed image, argv or loader environment differs from the checked one"
		if err != nil {
			reason = "the exec could not be verified: " + err.Error()
		}
		s.cfg.Log.Decided(req, false, authority.Denied(authority.ByError{Reason: "exec verification failed"}, reason))
	}
}
