package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/engine/shell"
	"github.com/permwrap/permwrap/forwarding"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
	"github.com/permwrap/permwrap/supervisor/terminal"
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
	notices *terminal.Noticer
	execs   execVerifier
	// waitKillable: the filter has WAIT_KILLABLE_RECV, so a target waiting
	// for its answer cannot be interrupted (see installFD).
	waitKillable bool
	scripts      scriptApprovals
	saves        saveApprovals
	// ids recognises known programs by content (exec identity).
	ids *programIDs
	// tree says which processes are the sandbox's (process.go).
	tree *tree
	// troubleSaid: a failed receive was reported (once per run).
	troubleSaid atomic.Bool
	// net is what judging network destinations needs beyond the policy.
	net netState
	// nest is the nesting of inner permwraps (forwarding.go); nil when it
	// could not be set up.
	nest *forwarding.Root

	// asks counts the asks being resolved; once asksClosed (finish), an
	// ask is resolved by the worker that has it, not started beside it
	// (startAsk).
	asks       sync.WaitGroup
	asksMu     sync.Mutex
	asksClosed bool
	pool       pool
	// remote caches, per device, whether a file system is remote
	// (calls.go, openCall.mayBlock).
	remote sync.Map
}

func newSupervisor(cfg Config, l *notify.Listener, mainPid int, notices *terminal.Noticer, ids *programIDs) *supervisor {
	ctx, cancel := context.WithCancel(context.Background())
	s := &supervisor{cfg: cfg, l: l, mainPid: mainPid, ctx: ctx, cancel: cancel}
	s.notices = notices
	if s.notices == nil {
		s.notices = terminal.NewNoticer(cfg.Notices)
	}
	s.execs.init(s)
	s.ids = ids
	s.net.tree = newTreeNames()
	return s
}

// The receiving pool. workers() goroutines receive at all times. A worker
// busy handling a call that takes long (an open on a hung network file
// system, a slow /proc) must not leave the sandbox without a receiver:
// the monitor starts another worker when none has been free to receive
// and none has finished a call for a tick, up to maxWorkers; workers
// beyond workers() end once there is another free receiver. Opens that
// can block indefinitely (FIFOs, character devices, network file
// systems) are not done by a worker at all (calls.go, openCall.perform).
const (
	maxWorkers  = 256
	monitorTick = 20 * time.Millisecond
)

type pool struct {
	role    role // the base workers' receiving role
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

// serve runs the receiving pool until the filter has no users left.
func (s *supervisor) serve() {
	blindWait(s.l)
	s.pool.base = int32(workers())
	s.pool.run(monitorTick, s.worker)
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
func (p *pool) run(tick time.Duration, work func(extra bool)) {
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
func (p *pool) end() { p.endOnce.Do(func() { close(p.ending) }) }

// blindWait lets the receiver wait for notifications without the Go
// scheduler being told (notify.Listener.SetBlindWait). The waiter keeps a
// P, so GOMAXPROCS gets one more: the rest of the supervisor — the
// workers, the terminal relay, the log — keeps as many Ps as before, as
// many as it had when the runtime took an ordinary waiter's P back. (With
// one P fewer, the relay read an agent's output a moment later under load
// and a denial notice could land before the line it belongs after:
// TestNoticeInlineForLinePrograms failed 4 runs in 12 with three busy
// loops on the 2-vCPU VM, none with the extra P.) It is set explicitly,
// so the runtime's own adjustment to a changed CPU limit cannot lower it.
func blindWait(l *notify.Listener) {
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	l.SetBlindWait()
}

// start starts a worker: one of the base pool, which takes turns at the
// receiving role, or (extra) one that receives without it.
func (p *pool) start(work func(extra bool), extra bool) {
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
func (p *pool) monitor(tick time.Duration, work func(extra bool)) {
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

func (s *supervisor) worker(extra bool) {
	// Not locked to a thread: RECV blocks in the kernel like any syscall,
	// and a locked goroutine costs a thread hand-off at every wake-up.
	surplus := false
	// The base workers take turns at the receiving role (role.go): the
	// holder handles a call of the thread it served last itself and
	// receives again, so a target calling serially wakes one thread per
	// call, not two; it passes the role on before handling a call of
	// another thread, and for an exec and its verification stop. Extra
	// workers (monitor) receive without it.
	r := &s.pool.role
	if extra {
		r = nil
	}
	receiveLoop(s.l, r, s.keepRole, func(n *notify.Notif, q *notify.Quiet) bool {
		s.pool.idle.Add(-1)
		s.handle(n, q)
		s.pool.handled.Add(1)
		if surplus = s.pool.leave(); surplus {
			return false
		}
		s.pool.idle.Add(1)
		return true
	}, s.receiveTrouble, time.Sleep)
	if !surplus {
		// The listener has no users left or is closed: every worker ends.
		s.pool.idle.Add(-1)
		s.pool.total.Add(-1)
		s.pool.end()
	}
}

// starved reports, at a monitor tick, that the pool needs an extra
// worker: nothing finished since the last tick (handled now as then) and
// no worker could receive — all were busy, or the receiving role's
// holder was busy with a call while the others waited for the role.
func (p *pool) starved(now, last uint64) bool {
	stuck := p.idle.Load() == 0 || p.role.inline.Load()
	return stuck && now == last && p.total.Load() < maxWorkers
}

// leave reports whether a worker that just finished a call may end: the
// pool is above its base size and another worker is free to receive (not
// one waiting for a role whose holder is busy with a call). It takes the
// worker out of the count when so.
func (p *pool) leave() bool {
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

// receiver is the listener as the receiving loop sees it.
type receiver interface {
	ReceiveQuiet(n *notify.Notif, q *notify.Quiet) error
}

// Backoff after a failed receive: short enough that a passing shortage
// (a file limit, memory) costs the sandbox little, long enough that a
// persistent one does not spin.
const (
	receiveBackoffMin = time.Millisecond
	receiveBackoffMax = time.Second
)

// receiveLoop receives and handles notifications until the listener is
// closed (Close) or has no targets left (POLLHUP, io.EOF), or handle says
// to stop (its worker is surplus; then it returns at once). Any other
// error — EINVAL, ENOMEM, EMFILE from poll or RECV when the tree starves
// the supervisor of a resource — is transient: the worker reports it and
// tries again after a backoff, because a worker that gave up would leave
// the sandbox's calls blocked with nobody to answer them.
//
// The role's holder hands handle a Quiet (notify.Quiet): an emulated open
// it answers inline holds its thread with signals blocked until the role
// is handed on, so the next one needs no signal mask of its own. Every
// other worker, and the holder once it hands the role on, gets nil.
//
// hold says whether the role's holder keeps the role while it handles a
// call of the thread it served last (keepsRole, or the supervisor's
// keepRole that also knows which execs await verification).
func receiveLoop(l receiver, r *role, hold func(*notify.Notif) bool, handle func(*notify.Notif, *notify.Quiet) bool, trouble func(error), sleep func(time.Duration)) {
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

// keepRole is keepsRole (the table's), except that the verification
// stop of a process whose exec is verified already is kept: it is then a
// bare CONTINUE. (A dynamically linked program's loader opens its
// libraries before it sets up TLS, and the first of those opens verifies
// the exec: handing the role on for the stop woke a worker per spawn for
// nothing.)
func (s *supervisor) keepRole(n *notify.Notif) bool {
	if isExecStop(n.Nr) {
		return !s.execs.pendingFor(int(n.Pid))
	}
	return keepsRole(n)
}

// receiveTrouble tells the person, once per run, that receiving failed
// and is being retried.
func (s *supervisor) receiveTrouble(err error) {
	if s.troubleSaid.CompareAndSwap(false, true) {
		s.notices.Line(fmt.Sprintf("permwrap: receiving a notification failed (%v); retrying", err))
	}
}

// finish waits for pending asks to end and records the session's rules.
func (s *supervisor) finish() {
	s.cancel()
	s.waitAsks()
	if s.nest != nil {
		s.nest.Close()
	}
	s.notices.Flush()
	if l, ok := s.cfg.Log.(*authority.Log); ok && l != nil {
		if rules := s.cfg.Policy.SessionRules(); len(rules) > 0 {
			l.SessionRules(rules)
		}
	}
}

// startAsk runs ask in a goroutine of its own, counted in asks, unless
// finish has begun to wait for them: a sync.WaitGroup's Add while its
// count is zero must not meet that Wait (the same rule as pool.run's).
// finish waits for the pool for a bounded time only, so a worker may
// still be deciding when it does.
func (s *supervisor) startAsk(ask func()) bool {
	s.asksMu.Lock()
	defer s.asksMu.Unlock()
	if s.asksClosed {
		return false
	}
	s.asks.Add(1)
	go func() {
		defer s.asks.Done()
		ask()
	}()
	return true
}

// waitAsks waits for the asks being resolved; none starts beside a
// worker after it began (startAsk).
func (s *supervisor) waitAsks() {
	s.asksMu.Lock()
	s.asksClosed = true
	s.asksMu.Unlock()
	s.asks.Wait()
}

// request is one notification on its way through the supervisor: its id,
// the calling thread and the decoded call.
type request struct {
	id   uint64
	tid  int
	th   *pin.Thread // the calling thread as decoding looked it up, or nil
	call call
	// m is the node the calling process belongs to (forwarding.go); nested
	// is false for this permwrap's own processes.
	m      forwarding.Membership
	nested bool
	// quiet: the handling goroutine's Quiet while it handles the
	// request inline in the receiving loop, nil elsewhere (an ask's
	// goroutine): see handle.
	quiet *notify.Quiet
	// exe: the caller's executable, read for the record before an exec
	// was continued ("" : read it when the record is made).
	exe string
}

func (r *request) close() {
	r.call.close()
	r.th.Release()
	r.th = nil
}

// handle decides one notification and answers it (or hands an ask off):
// decode (the row's decoder reads every argument once), check the
// notification is still valid, judge (pure), then perform or refuse.
//
// q is the receiving role's Quiet when the role's holder handles n inline
// (receiveLoop), else nil: an fd installed inline may keep the thread's
// signals blocked (notify.Quiet).
func (s *supervisor) handle(n *notify.Notif, q *notify.Quiet) {
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
	d := decoder{n: n, tid: int(n.Pid), ids: s.ids, tree: s.tree, net: &s.net}
	c, err := row.decode(&d)
	if err != nil {
		d.release()
		s.fail(n, row, err)
		return
	}
	if a, ok := c.(direct); ok {
		// Answered without a decision: a continued call (answer.go), one
		// the kernel settles (kernel.go), an inner permwrap's knock
		// (forwarding.go).
		d.release()
		a.answerDirect(s, n)
		return
	}
	r := &request{id: n.ID, tid: int(n.Pid), th: d.takeThread(), call: c.(call), quiet: q}
	// Which permwrap node the caller is in (one atomic load while no
	// inner permwrap has registered).
	if !s.placeRequest(r) {
		r.close()
		return
	}
	// Everything read from /proc and the target's memory is trusted only
	// if the target is still the one that made this call.
	if err := s.l.IDValid(n.ID); err != nil {
		r.close()
		return
	}
	s.decide(r)
}

// decide is the decision of one request, top to bottom
// (docs/architecture.md, "The life of a decision"). It owns r (closes it
// once answered).
//
//  1. verdictOf: every policy the request answers to judges the call
//     (pure); a content rule has the call look at the file it would hand
//     over (the one step with I/O) and judge again; audit mode per layer.
//  2. Not simply allowed, and the kernel would refuse the call anyway (or
//     it could change nothing): answered as the kernel, without asking.
//  3. Allowed: performed; when what it was decided on changed under it,
//     decided once more (back to 1). Asked: handed off to ask, off the
//     receiving goroutine. Denied: refused.
func (s *supervisor) decide(r *request) {
	for {
		v := s.verdictOf(r)
		if v.result.Action != engine.Allow {
			if ans := r.call.kernelAnswer(); ans.errno != 0 {
				s.answered(r, v, ans)
				r.close()
				return
			}
		}
		switch v.result.Action {
		case engine.Allow:
			if v.through != "" {
				// A save the policy allows: its rename follows (saves.go).
				s.saves.approve(s.tgidOf(r.tid), v.through, v.value, authority.FromRule(v.result.Rule).DecidedBy())
			}
			// Answered first, recorded after: the target runs on while its
			// record is gathered (the log is written asynchronously either
			// way, so this loses nothing a crash would not).
			record := !v.quiet && !s.net.sends.repeat(v)
			if s.perform(r, record) {
				continue // changed under it: decided (and recorded) again
			}
			if record {
				s.record(r, v, false, authority.FromRule(v.result.Rule))
			}
			r.close()
		case engine.Ask:
			r.quiet = nil // the ask's goroutine is not the receiving one
			if !s.startAsk(func() { s.ask(r, v) }) {
				// The supervisor is finishing (its context is cancelled, so
				// the decider answers at once): resolved here.
				s.ask(r, v)
			}
		default:
			d := authority.FromRule(v.result.Rule)
			if v.result.Action != engine.Deny || v.result.Rule.Action != engine.Deny {
				d = authority.Denied(authority.ByError{Reason: "undecidable request"}, "permwrap could not decide this request")
			}
			s.deny(r, v, false, d)
			r.close()
		}
		return
	}
}

// perform carries an allowed request out; record: a record of it will be
// written. It reports true when the call found that what it was decided
// on changed under it (and answered nothing), and the target is still in
// the call: the request must be decided again.
func (s *supervisor) perform(r *request, record bool) (again bool) {
	if _, ok := r.call.(*execCall); ok && record && r.th != nil {
		// Who asked for the exec, for its record: read now, while the
		// caller still runs the image that asked. Once the exec is
		// continued /proc shows the new image (a record gathered after
		// it named /usr/bin/true as what exec'd /usr/bin/true, 24 times
		// in 300 here).
		r.exe = r.th.Exe()
	}
	return r.call.perform(s, r.id, r.quiet) && s.l.IDValid(r.id) == nil
}

// answered fails a request that could change nothing with the kernel's
// own errno: no ask, no denial line; the review log says it was answered
// without asking.
func (s *supervisor) answered(r *request, v verdict, ans kernelAnswer) {
	s.record(r, v, false, authority.Answered(authority.ByKernel{Errno: unix.ErrnoName(ans.errno), Reason: ans.why}))
	s.respondErr(r.id, ans.errno)
}

// ask takes a request whose answer is ask to the decider. It owns r.
func (s *supervisor) ask(r *request, v verdict) {
	req := s.authorityRequest(r, v)
	s.logAsked(r, req)
	tgid := s.tgidOf(r.tid)
	var d authority.Decision
	if sd, ok := s.saves.answer(v, tgid); ok && !r.nested {
		// The rest of a save already allowed (saves.go).
		d = sd
	} else if sd, ok := scriptAnswer(v, s.scripts.held(tgid)); ok && !r.nested {
		// One of the commands or files of a script already allowed for
		// this process tree.
		d = sd
	} else if s.cfg.Decider == nil {
		d = authority.Denied(authority.ByUnavailable{Reason: "confirmation unavailable"}, "confirmation unavailable")
	} else {
		d = s.cfg.Decider.Resolve(s.ctx, req)
	}
	// "Allow for this session" and "always deny": the rules hold from
	// the next request on (for a nested caller, in its node's chain); the
	// log records those that could be added.
	d = s.addSessionRules(r, d)
	s.logDecided(r, req, true, d)
	if v.exec != nil && approves(d) && !r.nested {
		s.scripts.approve(tgid, v.exec, d.DecidedBy())
	}
	if v.through != "" && approves(d) && !r.nested {
		s.saves.approve(tgid, v.through, v.value, d.DecidedBy())
	}
	if d.Action() != engine.Allow {
		s.refuse(r, v, d, req.ID)
		r.close()
		return
	}
	// The target may have died while a person thought about it.
	if err := s.l.IDValid(r.id); err != nil {
		r.close()
		return
	}
	if s.perform(r, false) {
		// Changed under it while asked about: a new decision.
		s.decide(r)
		return
	}
	r.close()
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
	if !s.wantsRecord(r, authority.OutcomeEvent(asked, d), v.result.Check.Surface) {
		return "" // not written: do not gather it
	}
	req := s.authorityRequest(r, v)
	s.logDecided(r, req, asked, d)
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
	req.Process = processInfo(r.th, r.tid, v.result.Action != engine.Allow, r.exe)
	req.Agent = s.cfg.Argv
	req.Rule = v.result.Rule
	req.HumanOnly = v.result.HumanOnly
	if v.exec != nil {
		execParts(&req, v)
	}
	req.Through = v.through
	if t := v.touches(); len(t) == 2 && v.through == "" {
		req.Paths = []string{t[0].path, t[1].path} // a rename, exchange or link
	}
	if v.result.Action == engine.Ask && !v.result.HumanOnly {
		// Only a prompt offers suggestions; a record of a decision made
		// without asking does not carry them.
		req.Suggested = s.suggest(v, check)
	}
	if v.net != nil {
		req.Net = v.net
	}
	s.describeNode(r, &req, v.result.Action == engine.Ask)
	return req
}

// execParts lists what an exec runs for the prompt and the log: the
// inner commands of its wrappers and the units of its script. When an
// agent's shell tool wrapped the model's command (shell.RecognizeAgentShell),
// the command comes first and the agent's own set-up goes aside, but for
// any part of it that asked or was denied, which stays in view.
func execParts(req *authority.Request, v verdict) {
	sh, wrapped := shell.RecognizeAgentShell(v.argv)
	var mine map[string]bool
	if wrapped {
		req.Command, req.CommandBy = sh.Command, sh.Agent
		mine = map[string]bool{}
		for _, u := range shell.AnalyzeScript(sh.Command, shell.ScriptContext{}).Units {
			mine[u.Line] = true
		}
	}
	for _, u := range v.exec.Units {
		switch {
		case len(u.Unit.Via) == 0:
		case !wrapped || mine[u.Unit.Line]:
			req.Runs = append(req.Runs, u.Unit.Line)
		case u.Result.Action != engine.Allow:
			req.Runs = append(req.Runs, u.Unit.Line+"  (in "+sh.Agent+"'s set-up)")
		default:
			req.SetUp = append(req.SetUp, u.Unit.Line)
		}
	}
	if !wrapped && len(v.exec.Analysis.Units) > 1 {
		for _, u := range v.exec.Analysis.Units[1:] {
			req.Units = append(req.Units, u.Line)
		}
	}
}

// suggest is what "allow for this session" would add for an ask: for an
// exec, a pattern for each part that asked — its commands and the files
// they use (engine.Policy.SuggestSession) — and for the interpreter of a
// #! script when it was that which asked; for a path, the narrowest
// useful pattern (the file, or the directory it is in).
func (s *supervisor) suggest(v verdict, check engine.Check) []authority.SessionPattern {
	var out []authority.SessionPattern
	add := func(sp authority.SessionPattern) {
		if sp.Pattern == "" || slices.Contains(out, sp) {
			return
		}
		out = append(out, sp)
	}
	access := engine.AccessWrite
	switch check.Surface {
	case engine.SurfaceRead:
		access = engine.AccessRead
	case engine.SurfaceExec:
		access = engine.AccessExec
	case engine.SurfacePath:
		// Every access: suggest for what this call does (a read gets
		// the file, never a directory every write would match).
		if t := v.touches(); len(t) > 0 {
			access = t[0].access
		}
	}
	if v.exec != nil {
		for _, sp := range s.cfg.Policy.SuggestSession(*v.exec) {
			add(authority.SessionPattern{Surface: sp.Surface, Pattern: sp.Pattern})
		}
		if check != v.exec.Result.Check && check.Surface.IsPath() {
			// An interpreter of the #! chain asked.
			add(authority.SessionPattern{Surface: check.Surface, Pattern: engine.SuggestPathPattern(access, check.Value, s.cfg.Policy.Env())})
		}
		if len(out) == 0 {
			add(authority.SessionPattern{Surface: engine.SurfaceBash, Pattern: shell.SuggestBashPattern(v.argv)})
		}
		return out
	}
	if v.net != nil {
		add(authority.SessionPattern{Surface: engine.SurfaceNet, Pattern: engine.SuggestNetPattern(v.result)})
		return out
	}
	if check.Surface.IsPath() {
		add(authority.SessionPattern{Surface: check.Surface, Pattern: engine.SuggestPathPattern(access, check.Value, s.cfg.Policy.Env())})
	}
	return out
}

// tgidOf is the thread group of a thread (the thread itself when unknown).
func (s *supervisor) tgidOf(tid int) int {
	if th, err := pin.LookupThread(tid); err == nil {
		defer th.Release()
		return th.Tgid
	}
	return tid
}

// processInfo reads who made a request, for people and the log. It is
// informational only: nothing here is used to decide. Allows (the hot
// path) get the executable only; asks and denials get the whole picture.
// exe, when not "", is the executable read before (request.exe).
func processInfo(th *pin.Thread, tid int, full bool, exe string) authority.Process {
	p := authority.Process{PID: tid}
	if th == nil {
		var err error
		if th, err = pin.LookupThread(tid); err != nil {
			return p
		}
		defer th.Release()
	}
	// Cached per thread, forgotten when the process execs.
	p.Exe = exe
	if p.Exe == "" {
		p.Exe = th.Exe()
	}
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
