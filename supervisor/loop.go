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

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
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
	var n notify.Notif
	for {
		err := s.l.Receive(&n)
		switch {
		case err == nil:
			s.handle(&n)
		case errors.Is(err, notify.ErrGone):
			continue
		case errors.Is(err, io.EOF), errors.Is(err, os.ErrClosed), errors.Is(err, unix.EBADF):
			return
		default:
			if s.ctx.Err() != nil {
				return
			}
			fmt.Fprintf(s.cfg.Stderr, "permwrap: receiving a notification: %v\n", err)
			return
		}
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

// handle decides one notification and answers it (or hands an ask off).
func (s *supervisor) handle(n *notify.Notif) {
	// A process that just exec'd is verified before anything it asks for.
	if !s.execs.check(n) {
		return
	}
	if n.Nr == unix.SYS_ARCH_PRCTL {
		// Only a stop for the check above (the filter sends nothing but
		// ARCH_SET_FS, a register value): nothing to decide.
		_ = s.l.Continue(n.ID)
		return
	}
	if s.opathFastPath(n) {
		return
	}
	r, err := s.decode(n)
	if err != nil {
		// The call fails as the kernel would have failed it (ENOENT for a
		// missing directory, EFAULT for a bad pointer, ...); anything that
		// could not be read is refused.
		s.respondErr(n.ID, errnoOf(err))
		return
	}
	// Everything read from /proc and the target's memory is trusted only
	// if the target is still the one that made this call.
	if err := s.l.IDValid(n.ID); err != nil {
		r.close()
		return
	}
	v := s.judge(r)
	switch v.result.Action {
	case engine.Allow:
		s.record(r, v, false, authority.FromRule(v.result.Rule))
		s.perform(r)
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
	if err := s.l.IDValid(r.n.ID); err != nil {
		return
	}
	s.perform(r)
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
	req.Process = processInfo(r.tid, v.result.Action != engine.Allow)
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
		req.Suggested = authority.SessionPattern{Surface: engine.SurfaceBash, Pattern: engine.SuggestBashPattern(displayArgv(r))}
	} else if check.Surface.IsPath() {
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
	if g, err := notify.Tgid(tid); err == nil {
		return g
	}
	return tid
}

// nodeOf says which permwrap node a thread belongs to: "" for this one.
// Nested wrappers register their subtrees here (the nesting issue); this
// is the one place that question is answered.
func (s *supervisor) nodeOf(tid int) string { return "" }

// cwdOf is the thread's working directory, for messages and for relative
// paths in scripts; "" when it cannot be read.
func (s *supervisor) cwdOf(tid int) string {
	p, err := os.Readlink("/proc/" + strconv.Itoa(tid) + "/cwd")
	if err != nil {
		return ""
	}
	return p
}

// processInfo reads who made a request, for people and the log. It is
// informational only: nothing here is used to decide. Allows (the hot
// path) get the executable only; asks and denials get the whole picture.
func processInfo(tid int, full bool) authority.Process {
	p := authority.Process{PID: tid}
	base := "/proc/" + strconv.Itoa(tid)
	if exe, err := os.Readlink(base + "/exe"); err == nil {
		p.Exe = exe
	}
	if !full {
		return p
	}
	if g, err := notify.Tgid(tid); err == nil && g != tid {
		p.PID, p.TID = g, tid // the process, and the thread that asked
	}
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
