package receive

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify"
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

// keepButExec is a hold as the supervisor's table gives it: every call
// keeps the role but an exec.
func keepButExec(n *notify.Notif) bool { return n.Nr != unix.SYS_EXECVE }

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
			loop(l, nil, keepButExec,
				func(n *notify.Notif, _ *notify.Quiet) bool { handled = append(handled, n.ID); return true },
				func(err error) { troubles = append(troubles, err) },
				func(d time.Duration) { sleeps = append(sleeps, d) })
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the receiving loop did not end at %v", end)
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
	loop(l, nil, keepButExec, func(*notify.Notif, *notify.Quiet) bool { t.Error("nothing to handle"); return true }, func(error) {}, func(d time.Duration) { last = d })
	if last != receiveBackoffMax {
		t.Errorf("backoff after 40 errors: %v, want the cap %v", last, receiveBackoffMax)
	}
}

// TestReceiveLoopKeepsTheRole: a worker handles a call of the thread it
// served last while still holding the receiving role (no other worker is
// woken for it); it gives the role up before handling a call of another
// thread or one hold hands on (an exec), and takes it back after. A
// notification that already waits makes no difference: the holder
// receives it next. The holder, and only the holder, is handed the loop's
// Quiet; a Quiet held (as an inline AddFD holds it) is released when the
// role is handed on and when the loop ends, so no thread stays locked
// with its signals blocked while its goroutine waits for the role.
func TestReceiveLoopKeepsTheRole(t *testing.T) {
	l := &scriptedListener{
		steps: []any{uint64(1), uint64(2), uint64(3), uint64(4), uint64(5), uint64(6), uint64(7), uint64(8)},
		end:   io.EOF,
		nrs:   map[uint64]int32{4: unix.SYS_EXECVE},
		tids:  map[uint64]uint32{1: 10, 2: 10, 3: 10, 4: 10, 5: 10, 6: 11, 7: 11, 8: 10},
	}
	var r Role
	held := map[uint64]bool{}
	loop(l, &r, keepButExec, func(n *notify.Notif, q *notify.Quiet) bool {
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
