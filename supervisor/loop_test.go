package supervisor

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/supervisor/terminal"
)

// scriptedListener answers Receive from a script: a notification (by its
// id) or an error, then io.EOF or ErrClosed at the end.
type scriptedListener struct {
	steps []any // uint64 id, or error
	end   error
	// nrs: the syscall number of an id (default 0, read).
	nrs  map[uint64]int32
	tids map[uint64]uint32
	// q: the Quiet the loop last received with.
	q *notify.Quiet
}

func (l *scriptedListener) ReceiveQuiet(n *notify.Notif, q *notify.Quiet) error {
	l.q = q
	if len(l.steps) == 0 {
		return l.end
	}
	step := l.steps[0]
	l.steps = l.steps[1:]
	switch v := step.(type) {
	case uint64:
		*n = notify.Notif{ID: v, Nr: l.nrs[v], Pid: l.tids[v]}
		return nil
	case error:
		return v
	}
	panic(fmt.Sprintf("bad step %v", step))
}

// TestReceiveLoopSurvivesTransientErrors: EINVAL, ENOMEM and EMFILE from
// poll or RECV (a tree that starves the supervisor of a resource) must not
// end a worker: it backs off, reports, and goes on serving. Only the end
// of the listener (POLLHUP: io.EOF; Close: ErrClosed) ends it.
func TestReceiveLoopSurvivesTransientErrors(t *testing.T) {
	for _, end := range []error{io.EOF, notify.ErrClosed} {
		l := &scriptedListener{
			steps: []any{
				uint64(1),
				fmt.Errorf("notify: poll on listener: %w", unix.EINVAL),
				fmt.Errorf("notify: poll on listener: %w", unix.ENOMEM),
				fmt.Errorf("notify: SECCOMP_IOCTL_NOTIF_RECV: %w", unix.EMFILE),
				notify.ErrGone,
				uint64(2),
				errors.New("notify: listener fd not pollable (revents 0x20)"),
				uint64(3),
			},
			end: end,
		}
		var handled []uint64
		var troubles []error
		var sleeps []time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			receiveLoop(l, nil, keepsRole,
				func(n *notify.Notif, _ *notify.Quiet) bool { handled = append(handled, n.ID); return true },
				func(err error) { troubles = append(troubles, err) },
				func(d time.Duration) { sleeps = append(sleeps, d) })
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("receiveLoop did not end at %v", end)
		}
		if fmt.Sprint(handled) != "[1 2 3]" {
			t.Errorf("end %v: handled %v, want [1 2 3]", end, handled)
		}
		if len(troubles) != 4 {
			t.Errorf("end %v: %d troubles reported, want 4 (ErrGone is no trouble): %v", end, len(troubles), troubles)
		}
		// Backoff doubles while errors repeat and starts over after a
		// notification.
		want := []time.Duration{receiveBackoffMin, 2 * receiveBackoffMin, 4 * receiveBackoffMin, receiveBackoffMin}
		if fmt.Sprint(sleeps) != fmt.Sprint(want) {
			t.Errorf("end %v: slept %v, want %v", end, sleeps, want)
		}
	}
}

// TestReceiveLoopBackoffIsBounded: a persistent error is retried forever,
// at most once a receiveBackoffMax.
func TestReceiveLoopBackoffIsBounded(t *testing.T) {
	steps := make([]any, 40)
	for i := range steps {
		steps[i] = unix.EINVAL
	}
	l := &scriptedListener{steps: steps, end: io.EOF}
	var last time.Duration
	receiveLoop(l, nil, keepsRole, func(*notify.Notif, *notify.Quiet) bool { t.Error("nothing to handle"); return true }, func(error) {}, func(d time.Duration) { last = d })
	if last != receiveBackoffMax {
		t.Errorf("backoff after 40 errors: %v, want the cap %v", last, receiveBackoffMax)
	}
}

// TestReceiveTroubleSaidOnce: the person hears of a failing receive once
// per run, not once per retry.
func TestReceiveTroubleSaidOnce(t *testing.T) {
	var out fakeWriter
	s := &supervisor{notices: terminal.NewNoticer(&out)}
	for range 5 {
		s.receiveTrouble(unix.EMFILE)
	}
	if out.lines != 1 {
		t.Errorf("%d lines written, want 1", out.lines)
	}
}

type fakeWriter struct{ lines int }

func (w *fakeWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		if c == '\n' {
			w.lines++
		}
	}
	return len(p), nil
}

// TestReceiveLoopKeepsTheRole: a worker handles a call of the thread it
// served last while still holding the receiving role (no other worker is
// woken for it); it gives the role up before handling a call of another
// thread or for an exec, and takes it back after. A notification that
// already waits makes no difference: the holder receives it next. The
// holder, and only the holder, is handed the loop's Quiet; a Quiet held
// (as an inline AddFD holds it) is released when the role is handed on
// and when the loop ends, so no thread stays locked with its signals
// blocked while its goroutine waits for the role.
func TestReceiveLoopKeepsTheRole(t *testing.T) {
	l := &scriptedListener{
		steps: []any{uint64(1), uint64(2), uint64(3), uint64(4), uint64(5), uint64(6), uint64(7), uint64(8)},
		end:   io.EOF,
		nrs:   map[uint64]int32{4: unix.SYS_EXECVE},
		tids:  map[uint64]uint32{1: 10, 2: 10, 3: 10, 4: 10, 5: 10, 6: 11, 7: 11, 8: 10},
	}
	var r role
	held := map[uint64]bool{}
	receiveLoop(l, &r, keepsRole, func(n *notify.Notif, q *notify.Quiet) bool {
		// Held: no one else can take the role now.
		free := r.tryAcquire()
		if free {
			r.release()
		}
		held[n.ID] = !free
		if r.inline.Load() != !free {
			t.Errorf("call %d: inline %v while the role is held %v", n.ID, r.inline.Load(), !free)
		}
		if (q != nil) != !free {
			t.Errorf("call %d: handed a Quiet %v while the role is held %v", n.ID, q != nil, !free)
		}
		if free && l.q.Held() {
			t.Errorf("call %d: the loop's Quiet is still held after the role was handed on", n.ID)
		}
		if q != nil {
			if err := q.Hold(); err != nil {
				t.Fatal(err)
			}
		}
		return true
	}, func(error) {}, func(time.Duration) {})
	if r.inline.Load() {
		t.Errorf("inline still set after the loop ended")
	}
	if l.q.Held() {
		t.Errorf("the loop's Quiet is still held after the loop ended")
	}
	// 1: the first of thread 10 (nothing before it: not serial); 4: an
	// exec; 6 and 8: another thread than the one before.
	want := map[uint64]bool{1: false, 2: true, 3: true, 4: false, 5: true, 6: false, 7: true, 8: false}
	if fmt.Sprint(held) != fmt.Sprint(want) {
		t.Errorf("role held while handling: %v, want %v", held, want)
	}
	if !r.tryAcquire() {
		t.Errorf("the role is still held after the loop ended")
	}
}

// TestPoolStarved: the monitor adds a worker when nothing finished for a
// tick and nobody could receive — every worker busy, or the role's holder
// busy with a call while the others wait for the role — and a worker
// beyond the base does not leave while the holder is busy.
func TestPoolStarved(t *testing.T) {
	var p pool
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

// TestHoldForVerifiedStop: the role's holder keeps the role for an exec's
// verification stop (arch_prctl) once that exec is verified — the stop is
// then a bare CONTINUE — and hands it on while the exec still awaits
// verification, as it does for every exec itself.
func TestHoldForVerifiedStop(t *testing.T) {
	s := &supervisor{}
	s.execs.init(s)
	stop := &notify.Notif{Nr: unix.SYS_ARCH_PRCTL, Pid: 10}
	if !s.keepRole(stop) {
		t.Error("the stop of a process with no exec pending is handed on")
	}
	p := &pendingExec{tid: 10, tgid: 10}
	s.execs.pending[10] = p
	s.execs.count.Store(1)
	if s.keepRole(stop) {
		t.Error("the stop of an exec awaiting verification is held")
	}
	if !s.keepRole(&notify.Notif{Nr: unix.SYS_ARCH_PRCTL, Pid: 11}) {
		t.Error("another thread's stop is handed on because of thread 10's exec")
	}
	p.done.Store(true)
	if !s.keepRole(stop) {
		t.Error("the stop of a verified exec is handed on")
	}
	for _, nr := range []int32{unix.SYS_EXECVE, unix.SYS_EXECVEAT} {
		if s.keepRole(&notify.Notif{Nr: nr, Pid: 10}) {
			t.Errorf("syscall %d: an exec is held", nr)
		}
	}
	if !s.keepRole(&notify.Notif{Nr: unix.SYS_OPENAT, Pid: 10}) {
		t.Error("an open is handed on")
	}
	if floorKeepsRole(&notify.Notif{Nr: unix.SYS_EXECVE}) || !floorKeepsRole(stop) {
		t.Error("the floor hands on its stop, or holds an exec")
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
		p := &pool{base: 2}
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

// TestAsksEnd: asks keep being decided while finish waits for them (it
// waits for the workers for a bounded time only); none is started beside
// its worker once the wait has begun, each of them is resolved, and the
// wait returns. An ask counted after the wait began met it with the count
// at zero: a panic, and under -race a reported race.
func TestAsksEnd(t *testing.T) {
	for i := range 200 {
		var s supervisor
		var resolved atomic.Int32
		var workers sync.WaitGroup
		const each = 50
		for range 4 {
			workers.Go(func() {
				for range each {
					if !s.startAsk(func() { resolved.Add(1) }) {
						resolved.Add(1) // resolved by the worker itself
					}
				}
			})
		}
		time.Sleep(time.Duration(i%5) * 20 * time.Microsecond)
		s.waitAsks()
		if s.startAsk(func() {}) {
			t.Fatal("startAsk started an ask after waitAsks")
		}
		workers.Wait()
		s.asks.Wait()
		if n := resolved.Load(); n != 4*each {
			t.Fatalf("run %d: %d of %d asks resolved", i, n, 4*each)
		}
	}
}
