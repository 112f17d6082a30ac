package supervisor

import (
	"sync"
	"sync/atomic"
)

// role is the receiving role of a pool of workers: the worker holding it
// receives the next notification. A worker keeps the role while it
// handles the call it received and receives again when done, so a target
// that makes one call at a time is served by one goroutine on one OS
// thread, with no other thread woken per call. The floor's pool
// (floor.go) uses it: it is the cheapest receiver of a CONTINUE-only
// supervisor measured here, and so the fair floor (docs/kernel.md, "The
// receiver").
//
// A worker gives the role up before handling when another worker may be
// needed meanwhile: the call is from another thread than the one before
// it (serial), another notification already waits, or it is an exec.
//
// The role only decides who polls; Listener.Receive keeps receivers from
// polling at once on its own.
type role struct {
	mu sync.Mutex
	// holder is the id of the worker holding mu, 0 when it gave it up;
	// only the one who swaps it from an id to 0 unlocks.
	holder atomic.Uint64
	ids    atomic.Uint64
	// lastTid is the thread of the notification received last.
	lastTid atomic.Uint32
}

func (r *role) newID() uint64 {
	if r == nil {
		return 0
	}
	return r.ids.Add(1)
}

// acquire waits for the role.
func (r *role) acquire(id uint64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.holder.Store(id)
}

// release gives the role up; false when id no longer held it.
func (r *role) release(id uint64) bool {
	if r == nil || !r.holder.CompareAndSwap(id, 0) {
		return false
	}
	r.mu.Unlock()
	return true
}

// holds reports whether id holds the role.
func (r *role) holds(id uint64) bool {
	return r != nil && r.holder.Load() == id
}

// serial reports whether tid's notification follows one of the same
// thread: the target runs serially, and handling inline costs nobody a
// wait. A notification of another thread than the last one says two
// targets may be calling at once (a parent and its child, find and cat,
// make -j): the role is passed on before handling.
func (r *role) serial(tid uint32) bool {
	return r.lastTid.Swap(tid) == tid
}
