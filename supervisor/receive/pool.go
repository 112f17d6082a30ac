package receive

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permwrap/permwrap/notify"
)

// Workers is how many goroutines receive notifications. Each blocks in
// RECV on its own OS thread; more than the CPUs buys nothing, fewer
// serialises parallel builds.
func Workers() int { return max(2, min(runtime.NumCPU(), 8)) }

// BlindWait lets the receiver wait for notifications without the Go
// scheduler being told (notify.Listener.SetBlindWait). The waiter keeps a
// P, so GOMAXPROCS gets one more: the rest of the supervisor — the
// workers, the terminal relay, the log — keeps as many Ps as before, as
// many as it had when the runtime took an ordinary waiter's P back. (With
// one P fewer, the relay read an agent's output a moment later under load
// and a denial notice could land before the line it belongs after:
// TestNoticeInlineForLinePrograms failed 4 runs in 12 with three busy
// loops on the 2-vCPU VM, none with the extra P.) It is set explicitly,
// so the runtime's own adjustment to a changed CPU limit cannot lower it.
func BlindWait(l *notify.Listener) {
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	l.SetBlindWait()
}

// The receiving pool. Workers() goroutines receive at all times. A worker
// busy handling a call that takes long (an open on a hung network file
// system, a slow /proc) must not leave the sandbox without a receiver:
// the monitor starts another worker when none has been free to receive
// and none has finished a call for a tick, up to maxWorkers; workers
// beyond Workers() end once there is another free receiver. (Opens that
// can block indefinitely — FIFOs, character devices, network file
// systems — are not done by a worker at all: the supervisor's
// openCall.perform.)
const (
	maxWorkers  = 256
	monitorTick = 20 * time.Millisecond
)

// Pool is the supervisor's receiving pool. The zero Pool is ready to
// Serve, once.
type Pool struct {
	role    Role // the base workers' receiving role
	base    int32
	total   atomic.Int32
	idle    atomic.Int32  // workers waiting in Receive or for the role
	handled atomic.Uint64 // calls finished, for the monitor
	// wg counts the workers and the monitor; ending is closed (end) once
	// a worker has ended because the listener has no users left or was
	// closed, which ends every worker.
	wg      sync.WaitGroup
	ending  chan struct{}
	endOnce sync.Once
}

// Serve serves l until the filter has no users left or l is closed: it
// waits blind (BlindWait) and runs Workers() base workers, which take
// turns at the receiving role (Loop, with keep as its hold), and the
// monitor, which adds workers that receive without the role. handle
// answers one notification (q: as Loop hands it); trouble hears of every
// failed receive.
func (p *Pool) Serve(l *notify.Listener, keep func(*notify.Notif) bool, handle func(*notify.Notif, *notify.Quiet), trouble func(error)) {
	BlindWait(l)
	p.base = int32(Workers())
	p.run(monitorTick, func(extra bool) { p.work(l, extra, keep, handle, trouble) })
}

// run starts the base workers (work(false)) and the monitor, which adds
// extra ones (work(true)), and returns once all of them have ended. A
// worker that ends for good calls end.
//
// The monitor holds a count of wg of its own for as long as it may start
// a worker, and gives it up only once the pool is ending: a
// sync.WaitGroup's Add while its count is zero must not meet a Wait
// already under way. With the monitor outside the count, the last worker
// ending let Wait return while a monitor tick that found nobody free to
// receive (every worker gone) added one more, and the supervisor
// panicked as its command exited ("WaitGroup is reused before previous
// Wait has returned"; TestPoolRunEnds).
func (p *Pool) run(tick time.Duration, work func(extra bool)) {
	p.ending = make(chan struct{})
	for i := int32(0); i < p.base; i++ {
		p.start(work, false)
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.monitor(tick, work)
	}()
	p.wg.Wait()
}

// end says the pool is ending: its listener has no users left or is
// closed, so every worker will end. The monitor stops adding workers.
func (p *Pool) end() { p.endOnce.Do(func() { close(p.ending) }) }

// start starts a worker: one of the base pool, which takes turns at the
// receiving role, or (extra) one that receives without it.
func (p *Pool) start(work func(extra bool), extra bool) {
	p.total.Add(1)
	p.idle.Add(1)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		work(extra)
	}()
}

// monitor starts an extra worker when, for a whole tick, nothing finished
// and no worker could receive: every worker was busy, or the one holding
// the receiving role was busy with a call while the others waited for the
// role. The extra worker receives without the role, so a call that hangs
// (a lookup on a file system whose server does not answer) never leaves
// the sandbox without a receiver.
// It runs until the pool is ending (end).
func (p *Pool) monitor(tick time.Duration, work func(extra bool)) {
	t := time.NewTicker(tick)
	defer t.Stop()
	last := p.handled.Load()
	for {
		select {
		case <-p.ending:
			return
		case <-t.C:
		}
		now := p.handled.Load()
		if p.starved(now, last) {
			p.start(work, true)
		}
		last = now
	}
}

// work is one worker's body: it receives and handles until the listener
// ends (then every worker ends) or it is surplus (leave).
func (p *Pool) work(l Receiver, extra bool, keep func(*notify.Notif) bool, handle func(*notify.Notif, *notify.Quiet), trouble func(error)) {
	// Not locked to a thread: RECV blocks in the kernel like any syscall,
	// and a locked goroutine costs a thread hand-off at every wake-up.
	surplus := false
	// The base workers take turns at the receiving role (Role): the
	// holder handles a call of the thread it served last itself and
	// receives again, so a target calling serially wakes one thread per
	// call, not two; it passes the role on before handling a call of
	// another thread, and for a call keep says to hand on (an exec and
	// its verification stop). Extra workers (monitor) receive without it.
	r := &p.role
	if extra {
		r = nil
	}
	Loop(l, r, keep, func(n *notify.Notif, q *notify.Quiet) bool {
		p.idle.Add(-1)
		handle(n, q)
		p.handled.Add(1)
		if surplus = p.leave(); surplus {
			return false
		}
		p.idle.Add(1)
		return true
	}, trouble)
	if !surplus {
		// The listener has no users left or is closed: every worker ends.
		p.idle.Add(-1)
		p.total.Add(-1)
		p.end()
	}
}

// starved reports, at a monitor tick, that the pool needs an extra
// worker: nothing finished since the last tick (handled now as then) and
// no worker could receive — all were busy, or the receiving role's
// holder was busy with a call while the others waited for the role.
func (p *Pool) starved(now, last uint64) bool {
	stuck := p.idle.Load() == 0 || p.role.inline.Load()
	return stuck && now == last && p.total.Load() < maxWorkers
}

// leave reports whether a worker that just finished a call may end: the
// pool is above its base size and another worker is free to receive (not
// one waiting for a role whose holder is busy with a call). It takes the
// worker out of the count when so.
func (p *Pool) leave() bool {
	for {
		t := p.total.Load()
		if t <= p.base || p.idle.Load() == 0 || p.role.inline.Load() {
			return false
		}
		if p.total.CompareAndSwap(t, t-1) {
			return true
		}
	}
}
