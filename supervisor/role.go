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
// (holdFor).
//
// The role only decides who polls; Listener.Receive keeps receivers from
// polling at once on its own. A nil *role is no role: every method does
// nothing, and receiveLoop hands the poll on at every call.
type role struct {
	mu sync.Mutex
	// lastTid is the thread of the notification received last.
	lastTid atomic.Uint32
	// inline: the holder is handling a call, so nobody receives until
	// it is done (the pool's monitor watches it).
	inline atomic.Bool
}

// acquire waits for the role.
func (r *role) acquire() {
	if r != nil {
		r.mu.Lock()
	}
}

// release gives the role up; only its holder calls it.
func (r *role) release() {
	if r != nil {
		r.mu.Unlock()
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
