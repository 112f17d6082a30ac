package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// Decider answers asks: the authority chain ending in its terminal.
type Decider interface {
	Resolve(ctx context.Context, r authority.Request) authority.Decision
}

// Logger is the review log (authority.Log satisfies it).
type Logger interface {
	Decided(r authority.Request, asked bool, d authority.Decision)
	Asked(r authority.Request)
}

// workers is how many goroutines receive notifications. Each blocks in
// RECV on its own OS thread; more than the CPUs buys nothing, fewer
// serialises parallel builds.
func workers() int { return max(2, min(runtime.NumCPU(), 8)) }

type supervisor struct {
	cfg     Config
	l       *notify.Listener
	mainPid int
	ctx     context.Context
	cancel  context.CancelFunc
	notices *noticer
	execs   execVerifier
	// waitKillable: the filter has WAIT_KILLABLE_RECV, so a target waiting
	// for its answer cannot be interrupted (see installFD).
	waitKillable bool
	scripts      scriptApprovals
	// troubleSaid: a failed receive was reported (once per run).
	troubleSaid atomic.Bool

	asks sync.WaitGroup
}

func newSupervisor(cfg Config, l *notify.Listener, mainPid int) *supervisor {
	ctx, cancel := context.WithCancel(context.Background())
	s := &supervisor{cfg: cfg, l: l, mainPid: mainPid, ctx: ctx, cancel: cancel}
	s.notices = newNoticer(cfg.Notices)
	s.execs.init(s)
	return s
}

// serve runs the receiving pool until the filter has no users left.
func (s *supervisor) serve() {
	var wg sync.WaitGroup
	for i := 0; i < workers(); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.worker()
		}()
	}
	wg.Wait()
}

func (s *supervisor) worker() {
	// Not locked to a thread: RECV blocks in the kernel like any syscall,
	// and a locked goroutine costs a thread hand-off at every wake-up.
	receiveLoop(s.l, s.handle, s.receiveTrouble, time.Sleep)
}

// receiver is the listener as the receiving loop sees it.
type receiver interface {
	Receive(n *notify.Notif) error
}

// Backoff after a failed receive: short enough that a passing shortage
// (a file limit, memory) costs the sandbox little, long enough that a
// persistent one does not spin.
const (
	receiveBackoffMin = time.Millisecond
	receiveBackoffMax = time.Second
)

// receiveLoop receives and handles notifications until the listener is
// closed (Close) or has no targets left (POLLHUP, io.EOF). Any other
// error — EINVAL, ENOMEM, EMFILE from poll or RECV when the tree starves
// the supervisor of a resource — is transient: the worker reports it and
// tries again after a backoff, because a worker that gave up would leave
// the sandbox's calls blocked with nobody to answer them.
func receiveLoop(l receiver, handle func(*notify.Notif), trouble func(error), sleep func(time.Duration)) {
	var n notify.Notif
	backoff := receiveBackoffMin
	for {
		err := l.Receive(&n)
		switch {
		case err == nil:
			backoff = receiveBackoffMin
			handle(&n)
		case errors.Is(err, notify.ErrGone):
			// The target was interrupted between poll and receive.
		case errors.Is(err, io.EOF), errors.Is(err, notify.ErrClosed):
			return
		default:
			trouble(err)
			sleep(backoff)
			backoff = min(2*backoff, receiveBackoffMax)
		}
	}
}

// receiveTrouble tells the person, once per run, that receiving failed
// and is being retried.
func (s *supervisor) receiveTrouble(err error) {
	if s.troubleSaid.CompareAndSwap(false, true) {
		s.notices.line(fmt.Sprintf("permwrap: receiving a notification failed (%v); retrying", err))
	}
}

// finish waits for pending asks to end and records the session's rules.
func (s *supervisor) finish() {
	s.cancel()
	s.asks.Wait()
	s.notices.flush()
	if l, ok := s.cfg.Log.(*authority.Log); ok && l != nil {
		if rules := s.cfg.Policy.SessionRules(); len(rules) > 0 {
			l.SessionRules(rules)
		}
	}
}

// request is one notification on its way through the supervisor: its id,
// the calling thread and the decoded call.
type request struct {
	id   uint64
	tid  int
	th   *pin.Thread // the calling thread as decoding looked it up, or nil
	call call
}

func (r *request) close() {
	r.call.close()
	r.th.Release()
	r.th = nil
}

// handle decides one notification and answers it (or hands an ask off):
// decode (the row's decoder reads every argument once), check the
// notification is still valid, judge (pure), then perform or refuse.
func (s *supervisor) handle(n *notify.Notif) {
	// The thread is in a new call: a chdir of its own has run.
	pin.CallSeen(int(n.Pid), n.ID)
	// A process that just exec'd is verified before anything it asks for.
	if !s.execs.check(n) {
		return
	}
	row := rows[n.Nr]
	if row == nil || row.decode == nil {
		s.fail(n, row, &refusal{errno: unix.ENOSYS, why: "a syscall permwrap does not watch"})
		return
	}
	d := decoder{n: n, tid: int(n.Pid)}
	c, err := row.decode(&d)
	if err != nil {
		d.release()
		s.fail(n, row, err)
		return
	}
	if c, ok := c.(continued); ok {
		// Decided without reading any argument from memory (answer.go).
		d.release()
		c.perform(s, n.ID)
		return
	}
	r := &request{id: n.ID, tid: int(n.Pid), th: d.takeThread(), call: c}
	// Everything read from /proc and the target's memory is trusted only
	// if the target is still the one that made this call.
	if err := s.l.IDValid(n.ID); err != nil {
		r.close()
		return
	}
	v := c.judge(s.cfg.Policy)
	// Audit mode (--audit), the composition's last stage: an ask or deny
	// of the composed answer is let through and logged as would_*.
	v.result = s.cfg.Policy.Audit(v.result)
	switch v.result.Action {
	case engine.Allow:
		// Answered first, recorded after: the target runs on while its
		// record is gathered (the log is written asynchronously either
		// way, so this loses nothing a crash would not).
		c.perform(s, r.id)
		s.record(r, v, false, authority.FromRule(v.result.Rule))
		r.close()
	case engine.Ask:
		s.asks.Add(1)
		go func() {
			defer s.asks.Done()
			defer r.close()
			s.ask(r, v)
		}()
	default:
		d := authority.FromRule(v.result.Rule)
		if v.result.Action != engine.Deny || v.result.Rule.Action != engine.Deny {
			d = authority.Denied(authority.ByError{Reason: "undecidable request"}, "permwrap could not decide this request")
		}
		s.deny(r, v, false, d)
		r.close()
	}
}

// ask takes a request whose answer is ask to the decider.
func (s *supervisor) ask(r *request, v verdict) {
	req := s.authorityRequest(r, v)
	if s.cfg.Log != nil {
		s.cfg.Log.Asked(req)
	}
	var d authority.Decision
	if v.exec != nil && len(v.exec.Analysis.Units) > 0 && !v.result.HumanOnly &&
		s.scripts.covers(s.tgidOf(r.tid), v.exec.Analysis.Units[0].Line) {
		// A unit of a script a person already allowed for this process tree.
		d = authority.Allowed(authority.ByUser{Via: "script approval"})
	} else if s.cfg.Decider == nil {
		d = authority.Denied(authority.ByUnavailable{Reason: "confirmation unavailable"}, "confirmation unavailable")
	} else {
		d = s.cfg.Decider.Resolve(s.ctx, req)
	}
	if p, ok := d.SessionRule(); ok {
		if _, err := s.cfg.Policy.AddSessionRule(p.Surface, p.Pattern); err != nil {
			fmt.Fprintf(s.cfg.Stderr, "permwrap: could not add session rule %s: %v\n", p, err)
		}
	}
	if s.cfg.Log != nil {
		s.cfg.Log.Decided(req, true, d)
	}
	if d.Action() == engine.Allow && v.exec != nil {
		if _, ok := d.DecidedBy().(authority.ByUser); ok {
			s.scripts.approve(s.tgidOf(r.tid), v.exec)
		}
	}
	if d.Action() != engine.Allow {
		s.refuse(r, v, d, req.ID)
		return
	}
	// The target may have died while a person thought about it.
	if err := s.l.IDValid(r.id); err != nil {
		return
	}
	r.call.perform(s, r.id)
}

// deny refuses a request with EACCES, logs it and tells the person (and
// the agent, see notice.go).
func (s *supervisor) deny(r *request, v verdict, asked bool, d authority.Decision) {
	id := s.record(r, v, asked, d)
	s.refuse(r, v, d, id)
}

// record writes the review-log record of a decision made without asking
// and returns the request id it was written under ("" when not written).
func (s *supervisor) record(r *request, v verdict, asked bool, d authority.Decision) authority.RequestID {
	if s.cfg.Log == nil {
		return ""
	}
	if l, ok := s.cfg.Log.(*authority.Log); ok && !l.Wants(authority.OutcomeEvent(asked, d), v.result.Check.Surface) {
		return "" // not written: do not gather it
	}
	req := s.authorityRequest(r, v)
	s.cfg.Log.Decided(req, asked, d)
	return req.ID
}

// authorityRequest describes a request for the chain, the prompt and the
// log. The request id is minted here, where the request is created.
func (s *supervisor) authorityRequest(r *request, v verdict) authority.Request {
	check := v.result.Check
	if check.Surface == engine.SurfaceInvalid {
		check = engine.Check{Surface: engine.SurfacePath, Value: v.value}
	}
	req := authority.NewRequest(check)
	req.Access = v.access
	req.Process = processInfo(r.th, r.tid, v.result.Action != engine.Allow)
	req.Agent = s.cfg.Argv
	req.Node = s.nodeOf(r.tid)
	req.Rule = v.result.Rule
	req.HumanOnly = v.result.HumanOnly
	if v.exec != nil {
		for _, u := range v.exec.Units {
			if len(u.Unit.Via) > 0 {
				req.Runs = append(req.Runs, u.Unit.Line)
			}
		}
		if len(v.exec.Analysis.Units) > 1 {
			for _, u := range v.exec.Analysis.Units[1:] {
				req.Units = append(req.Units, u.Line)
			}
		}
		req.Suggested = authority.SessionPattern{Surface: engine.SurfaceBash, Pattern: engine.SuggestBashPattern(v.argv)}
	} else if check.Surface.IsPath() && v.result.Action == engine.Ask {
		// Only a prompt offers the suggestion; a record of a decision
		// made without asking does not carry it.
		acc := engine.AccessWrite
		if check.Surface == engine.SurfaceRead {
			acc = engine.AccessRead
		}
		req.Suggested = authority.SessionPattern{Surface: check.Surface, Pattern: engine.SuggestPathPattern(acc, check.Value, s.cfg.Policy.Env())}
	}
	return req
}

// tgidOf is the thread group of a thread (the thread itself when unknown).
func (s *supervisor) tgidOf(tid int) int {
	if th, err := pin.LookupThread(tid); err == nil {
		defer th.Release()
		return th.Tgid
	}
	return tid
}

// nodeOf says which permwrap node a thread belongs to: "" for this one.
// Nested wrappers register their subtrees here (the nesting issue); this
// is the one place that question is answered.
func (s *supervisor) nodeOf(tid int) string { return "" }

// processInfo reads who made a request, for people and the log. It is
// informational only: nothing here is used to decide. Allows (the hot
// path) get the executable only; asks and denials get the whole picture.
func processInfo(th *pin.Thread, tid int, full bool) authority.Process {
	p := authority.Process{PID: tid}
	if th == nil {
		var err error
		if th, err = pin.LookupThread(tid); err != nil {
			return p
		}
		defer th.Release()
	}
	// Cached per thread, forgotten when the process execs.
	p.Exe = th.Exe()
	if !full {
		return p
	}
	if th.Tgid != tid {
		p.PID, p.TID = th.Tgid, tid // the process, and the thread that asked
	}
	base := "/proc/" + strconv.Itoa(tid)
	if b, err := os.ReadFile(base + "/comm"); err == nil {
		p.Comm = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(base + "/cmdline"); err == nil {
		b = []byte(strings.TrimRight(string(b), "\x00"))
		if len(b) > 0 {
			p.Cmdline = strings.Split(string(b), "\x00")
		}
	}
	return p
}
