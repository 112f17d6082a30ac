package receive

import (
	"sync"
	"sync/atomic"
)

// Role is the receiving role of a pool of workers: the worker holding it
// receives the next notification. A worker keeps the role while it
// handles the call it received and receives again when done, so a target
// that makes one call at a time is served by one goroutine on one OS
// thread, with no other thread woken per call. Pool uses it, and so does
// the round-trip benchmark tool (internal/roundtrip) (docs/kernel.md,
// "The receiver: the pool and the receiving role").
//
// A worker gives the role up before handling when another worker may be
// needed meanwhile: the call is from another thread than the one before
// it (serial), or the caller's hold says so (an exec, the exec's
// verification stop).
//
// The role only decides who polls; notify.Listener.Receive keeps
// receivers from polling at once on its own. The zero Role is free. A nil
// *Role is no role: every method does nothing, and Loop hands the poll on
// at every call.
type Role struct {
	// token is the role: a channel with one slot, full while a worker
	// holds it. Not a sync.Mutex: the workers that wait for the role wait
	// far longer than a millisecond, which keeps a Mutex in starvation
	// mode, where every Unlock hands the releasing goroutine's thread to
	// the woken waiter — and the releaser, about to handle an exec, waits
	// for another thread to be woken to run it
	// (docs/history/kernel-performance.md, "The seventh round"). A
	// channel readies the waiter and lets the releaser go on where it
	// runs.
	once  sync.Once
	token chan struct{}
	// lastTid is the thread of the notification received last.
	lastTid atomic.Uint32
	// inline: the holder is handling a call, so nobody receives until
	// it is done (the pool's monitor watches it).
	inline atomic.Bool
}

func (r *Role) slot() chan struct{} {
	r.once.Do(func() { r.token = make(chan struct{}, 1) })
	return r.token
}

// acquire waits for the role.
func (r *Role) acquire() {
	if r != nil {
		r.slot() <- struct{}{}
	}
}

// tryAcquire takes the role if nobody holds it.
func (r *Role) tryAcquire() bool {
	if r == nil {
		return true
	}
	select {
	case r.slot() <- struct{}{}:
		return true
	default:
		return false
	}
}

// release gives the role up; only its holder calls it.
func (r *Role) release() {
	if r != nil {
		<-r.slot()
	}
}

// serial reports whether tid's notification follows one of the same
// thread: the target runs serially, and handling inline costs nobody a
// wait. A notification of another thread than the last one says two
// targets may be calling at once (a parent and its child, find and cat,
// make -j): the role is passed on before handling.
func (r *Role) serial(tid uint32) bool {
	return r.lastTid.Swap(tid) == tid
}
