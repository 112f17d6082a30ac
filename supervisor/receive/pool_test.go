package receive

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolStarved: the monitor adds a worker when nothing finished for a
// tick and nobody could receive — every worker busy, or the role's holder
// busy with a call while the others wait for the role — and a worker
// beyond the base does not leave while the holder is busy.
func TestPoolStarved(t *testing.T) {
	var p Pool
	p.base = 2
	p.total.Store(3)
	p.idle.Store(2) // two base workers waiting for the role
	if p.starved(5, 5) {
		t.Error("starved with free workers and no call in hand")
	}
	p.role.inline.Store(true)
	if !p.starved(5, 5) {
		t.Error("not starved while the holder is busy and nothing finished")
	}
	if p.starved(6, 5) {
		t.Error("starved though a call finished this tick")
	}
	if p.leave() {
		t.Error("an extra worker left while the holder was busy")
	}
	p.role.inline.Store(false)
	if !p.leave() || p.total.Load() != 2 {
		t.Errorf("the extra worker could not leave once the holder was free (total %d)", p.total.Load())
	}
	p.idle.Store(0)
	if !p.starved(7, 7) {
		t.Error("not starved with every worker busy")
	}
	p.total.Store(maxWorkers)
	if p.starved(7, 7) {
		t.Error("starved beyond maxWorkers")
	}
}

// TestPoolRunEnds: the pool's run returns once its workers have ended,
// with the monitor adding workers at every tick until then (nobody is
// free to receive once the workers are gone, and nothing finishes), and
// no worker started after the count reached zero: with the monitor
// outside the WaitGroup, that Add met the Wait and the supervisor
// panicked as its command exited.
func TestPoolRunEnds(t *testing.T) {
	for i := range 300 {
		p := &Pool{base: 2}
		var started atomic.Int32
		work := func(extra bool) {
			started.Add(1)
			if !extra {
				time.Sleep(200 * time.Microsecond) // receiving, then EOF
			}
			p.idle.Add(-1)
			p.total.Add(-1)
			p.end()
		}
		done := make(chan struct{})
		go func() {
			p.run(20*time.Microsecond, work)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("run %d: the pool did not end", i)
		}
		if p.total.Load() != 0 || p.idle.Load() != 0 {
			t.Fatalf("run %d: %d workers counted, %d idle, after the pool ended (%d started)", i, p.total.Load(), p.idle.Load(), started.Load())
		}
	}
}
