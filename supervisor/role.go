package supervisor

import (
	"sync"
	"sync/atomic"
)

// role is the receiving role of a pool of workers: the worker holding it
// receives the next notification. A worker keeps the role while it
// handles the call it received and receives again when done, so a target
// that makes one call at a time is served by one goroutine on one OS
// thread, with no other thread woken per call. permwrap's pool (loop.go)
// and the floor's (floor.go) use it (docs/kernel.md, "The receiver" and
// "The fourth round").
//
// A worker gives the role up before handling when another worker may be
// needed meanwhile: the call is from another thread than the one before
// it (serial), or it is an exec or the exec's verification stop
// (keepsRole).
//
// The role only decides who polls; Listener.Receive keeps receivers from
// polling at once on its own. A nil *role is no role: every method does
// nothing, and receiveLoop hands the poll on at every call.
type role struct {
	// token is the role: a channel with one slot, full while a worker
	// holds it. Not a sync.Mutex: the workers that wait for the role wait
	// far longer than a millisecond, which keeps a Mutex in starvation
	// mode, where every Unlock hands the releasing goroutine's thread to
	// the woken waiter — and the releaser, about to handle an exec, waits
	// for another thread to be woken to run it (docs/kernel.md, "The
	// seventh round"). A channel readies the waiter and lets the releaser
	// go on where it runs.
	once  sync.Once
	token chan struct{}
	// lastTid is the thread of the notification received last.
	lastTid atomic.Uint32
	// inline: the holder is handling a call, so nobody receives until
	// it is done (the pool's monitor watches it).
	inline atomic.Bool
}

func (r *role) slot() chan struct{} {
	r.once.Do(func() { r.token = make(chan struct{}, 1) })
	return r.token
}

// acquire waits for the role.
func (r *role) acquire() {
	if r != nil {
		r.slot() <- struct{}{}
	}
}

// tryAcquire takes the role if nobody holds it.
func (r *role) tryAcquire() bool {
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
func (r *role) release() {
	if r != nil {
		<-r.slot()
	}
}

// serial reports whether tid's notification follows one of the same
// thread: the target runs serially, and handling inline costs nobody a
// wait. A notification of another thread than the last one says two
// targets may be calling at once (a parent and its child, find and cat,
// make -j): the role is passed on before handling.
func (r *role) serial(tid uint32) bool {
	return r.lastTid.Swap(tid) == tid
}
