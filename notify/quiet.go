package notify

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A Quiet keeps a receiving goroutine on its OS thread with the thread's
// asynchronous signals blocked from one AddFD to the next, so AddFD need
// not block and unblock them around every ioctl.
//
// AddFD answers with SECCOMP_ADDFD_FLAG_SEND, and a signal during its wait
// would leave the target with an empty result (AddFD's comment), so the
// ioctl must run with every blockable signal blocked. Blocking and
// restoring them costs two syscalls per emulated open: 10% of the open
// loop's time (docs/history/kernel-performance.md, "The sixth round"). A goroutine that
// receives again right after (the holder of the supervisor's receiving
// role, serving one target calling serially) keeps them blocked instead,
// and unblocks them only while it waits: Receive given a held Quiet polls
// with ppoll's signal mask, which the kernel swaps in for the wait alone,
// so the runtime's preemption and the garbage collector still interrupt
// the wait as they interrupt any blind wait.
//
// Between waits the thread's Go code is not preempted asynchronously:
// it stops for the garbage collector at its next function call, as all
// Go code did before Go 1.14. The synchronous fault signals (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGTRAP) stay unblocked, so a fault is still a
// Go panic, not a kill. The runtime's CPU profiler signals the thread, so
// while one runs (SetProfiling) Hold does nothing and AddFD blocks around
// each ioctl as before.
//
// A Quiet belongs to one goroutine: Hold locks it to its thread until
// Release. The zero value is ready (not held).
type Quiet struct {
	held bool
	old  unix.Sigset_t // the thread's mask before Hold: the one a wait uses
}

// profiling: a CPU profile is being taken (SetProfiling).
var profiling atomic.Bool

// SetProfiling says a CPU profile is (or is no longer) being taken: Quiet
// then stays unheld, so the profiler's signals reach every thread.
func SetProfiling(on bool) { profiling.Store(on) }

// allSignals is every signal (the kernel never blocks SIGKILL and
// SIGSTOP, whatever the mask says): what AddFD blocks for one ioctl.
var allSignals = func() unix.Sigset_t {
	var s unix.Sigset_t
	for i := range s.Val {
		s.Val[i] = ^uint64(0)
	}
	return s
}()

// quietSet is every signal but the synchronous fault signals: what a held
// Quiet blocks between waits.
var quietSet = func() unix.Sigset_t {
	s := allSignals
	for _, sig := range []unix.Signal{unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP} {
		s.Val[(sig-1)/64] &^= 1 << ((uint(sig) - 1) % 64)
	}
	return s
}()

// Held reports whether the goroutine holds its thread quiet.
func (q *Quiet) Held() bool { return q != nil && q.held }

// Hold locks the calling goroutine to its thread and blocks the thread's
// asynchronous signals, unless already held or a profile is being taken
// (then it does nothing: Held stays false).
func (q *Quiet) Hold() error {
	if q == nil || q.held || profiling.Load() {
		return nil
	}
	return q.block(&quietSet)
}

// block locks the calling goroutine to its thread and blocks set there;
// Release undoes it.
func (q *Quiet) block(set *unix.Sigset_t) error {
	runtime.LockOSThread()
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, set, &q.old); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("notify: blocking signals: %w", err)
	}
	q.held = true
	return nil
}

// Release restores the thread's signal mask and unlocks the goroutine
// from it. Call it on the goroutine that held it before that goroutine
// waits for anything but a notification (the supervisor's pool: before it
// hands the receiving role on).
func (q *Quiet) Release() {
	if !q.Held() {
		return
	}
	// The mask cannot fail to be restored (EINVAL only for a bad how).
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &q.old, nil)
	q.held = false
	runtime.UnlockOSThread()
}

// waitMask is the mask a wait swaps in: the thread's own mask from before
// Hold, or nil (keep the current one) when not held.
func (q *Quiet) waitMask() *unix.Sigset_t {
	if !q.Held() {
		return nil
	}
	return &q.old
}
