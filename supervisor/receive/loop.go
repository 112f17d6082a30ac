package receive

import (
	"errors"
	"io"
	"time"

	"github.com/permwrap/permwrap/notify"
)

// Receiver is the listener as the receiving loop sees it
// (*notify.Listener satisfies it).
type Receiver interface {
	ReceiveQuiet(n *notify.Notif, q *notify.Quiet) error
}

// Backoff after a failed receive: short enough that a passing shortage
// (a file limit, memory) costs the sandbox little, long enough that a
// persistent one does not spin.
const (
	receiveBackoffMin = time.Millisecond
	receiveBackoffMax = time.Second
)

// Loop receives and handles notifications until the listener is closed
// (Close) or has no targets left (POLLHUP, io.EOF), or handle says to stop
// (returns false: its worker is surplus; then Loop returns at once). Any
// other error — EINVAL, ENOMEM, EMFILE from poll or RECV when the tree
// starves the supervisor of a resource — is transient: the worker reports
// it (trouble) and tries again after a backoff, because a worker that gave
// up would leave the sandbox's calls blocked with nobody to answer them.
//
// r is the receiving role the worker takes turns at, or nil to receive
// without one. The role's holder hands handle a Quiet (notify.Quiet): an
// emulated open it answers inline holds its thread with signals blocked
// until the role is handed on, so the next one needs no signal mask of
// its own. Every other worker, and the holder once it hands the role on,
// gets nil.
//
// hold says whether the role's holder keeps the role while it handles a
// call of the thread it served last (the supervisor's: every call but an
// exec, and an exec's verification stop while the exec awaits
// verification).
func Loop(l Receiver, r *Role, hold func(*notify.Notif) bool, handle func(*notify.Notif, *notify.Quiet) bool, trouble func(error)) {
	loop(l, r, hold, handle, trouble, time.Sleep)
}

// loop is Loop, sleeping with sleep (the tests count the backoff).
func loop(l Receiver, r *Role, hold func(*notify.Notif) bool, handle func(*notify.Notif, *notify.Quiet) bool, trouble func(error), sleep func(time.Duration)) {
	var n notify.Notif
	var q notify.Quiet
	backoff := receiveBackoffMin
	held := false
	release := func() {
		// Unblocked and unlocked before waiting for the role again.
		q.Release()
		r.release()
		held = false
	}
	defer func() {
		if held {
			release()
		}
	}()
	for {
		if r != nil && !held {
			r.acquire()
			held = true
		}
		err := l.ReceiveQuiet(&n, &q)
		switch {
		case err == nil:
			backoff = receiveBackoffMin
			if held && (!r.serial(n.Pid) || !hold(&n)) {
				// Another worker takes the next notification (one
				// may come from another target meanwhile, or this
				// call may take long). One that waits already is not
				// looked for: that poll cost 3–5% on a serial target,
				// and the holder receives it next, after this call,
				// and hands the role on then (not serial); a call that
				// lasts has the monitor start a worker.
				release()
			}
			var hq *notify.Quiet
			if held {
				// Handled by the holder: nobody receives meanwhile
				// (the monitor starts an extra worker if it lasts).
				r.inline.Store(true)
				hq = &q
			}
			more := handle(&n, hq)
			if held {
				r.inline.Store(false)
			}
			if !more {
				return
			}
		case errors.Is(err, notify.ErrGone):
			// The target was interrupted between poll and receive.
		case errors.Is(err, io.EOF), errors.Is(err, notify.ErrClosed):
			return
		default:
			if held {
				release()
			}
			trouble(err)
			sleep(backoff)
			backoff = min(2*backoff, receiveBackoffMax)
		}
	}
}
