package receive

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRoleReleaseKeepsTheThread: giving the role up readies a waiting
// worker but never hands it the releaser's thread. With one P, the
// releaser must still run when release returns, before any waiter has
// the role: it goes on to handle the call it received (an exec) at once.
// A sync.Mutex fails this once its waiters have waited over a millisecond
// (starvation mode: Unlock hands off), which is how workers wait for the
// role.
func TestRoleReleaseKeepsTheThread(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var r Role
	r.acquire()
	var taken atomic.Int32
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r.acquire()
				taken.Add(1)
				select {
				case <-stop:
					r.release()
					return
				default:
				}
				// Hold it a while, as a holder serving a serial target.
				time.Sleep(2 * time.Millisecond)
				r.release()
			}
		}()
	}
	handOffs := 0
	for range 20 {
		time.Sleep(3 * time.Millisecond) // the waiters wait over 1 ms
		before := taken.Load()
		r.release()
		if taken.Load() != before {
			handOffs++
		}
		r.acquire()
	}
	close(stop)
	r.release()
	wg.Wait()
	if handOffs > 0 {
		t.Errorf("release ran a waiter before returning %d times in 20", handOffs)
	}
}
