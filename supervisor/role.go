package supervisor

import (
	"sync"
	"sync/atomic"
	"time"
)

// role is the receiving role of a pool of workers: the worker holding it
// receives the next notification. A worker keeps the role while it
// handles the call it received and receives again when done, so a
// target that makes one call at a time (a shell, git, a compiler) is
// served by one goroutine on one OS thread, with no other thread woken
// per call.
//
// Why: the earlier pool handed the poll on to the next worker as soon as
// a notification was received. Waking that worker wakes an OS thread (a
// futex, the runtime's spinning threads looking for work), on every
// call; on a 2-vCPU machine running git status that hand-off cost as
// much as the kernel's own round trip (docs/kernel.md, "The receiver").
//
// A worker gives the role up when another worker is needed:
//   - another notification is already waiting when one is received
//     (parallel targets: a make -j, threads), so the two are handled at
//     once;
//   - the call is one that may take long (release before the wait);
//   - it has held the role, busy with one call, for longer than stuckAfter
//     and a notification waits: the pool's monitor takes the role away
//     from it (steal), as a safety net for a wait nobody foresaw.
//
// The role only decides who polls; Listener.Receive keeps receivers
// from polling at once on its own, so a worker that lost the role
// without noticing yet costs a wake-up, never a wrong answer.
type role struct {
	mu sync.Mutex
	// holder is the id of the worker holding mu, 0 when it was given up
	// or taken away; only the one who swaps it from an id to 0 unlocks.
	holder atomic.Uint64
	// busySince is when the holder began handling its current call (unix
	// nanoseconds), 0 while it receives.
	busySince atomic.Int64
	ids       atomic.Uint64
}

// stuckAfter: a holder busy this long with one call while a call waits
// loses the role (checked by the pool's monitor, every monitorTick).
const stuckAfter = monitorTick

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
	r.busySince.Store(0)
	r.holder.Store(id)
}

// release gives the role up; false when id no longer held it.
func (r *role) release(id uint64) bool {
	if r == nil || !r.holder.CompareAndSwap(id, 0) {
		return false
	}
	r.busySince.Store(0)
	r.mu.Unlock()
	return true
}

// busy marks the holder as handling a call.
func (r *role) busy(id uint64) {
	if r != nil && r.holder.Load() == id {
		r.busySince.Store(time.Now().UnixNano())
	}
}

// done marks the end of a call; it reports whether id still holds the
// role.
func (r *role) done(id uint64) bool {
	if r == nil || r.holder.Load() != id {
		return false
	}
	r.busySince.Store(0)
	return true
}

// steal takes the role from a holder busy with one call for longer than
// limit; it reports whether it did.
func (r *role) steal(now time.Time, limit time.Duration) bool {
	if r == nil {
		return false
	}
	since := r.busySince.Load()
	if since == 0 || now.Sub(time.Unix(0, since)) < limit {
		return false
	}
	h := r.holder.Load()
	if h == 0 || !r.holder.CompareAndSwap(h, 0) {
		return false
	}
	r.busySince.Store(0)
	r.mu.Unlock()
	return true
}
