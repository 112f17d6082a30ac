package supervisor

import (
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/engine/shell"
	"github.com/permwrap/permwrap/forwarding"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
	"github.com/permwrap/permwrap/supervisor/receive"
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

type supervisor struct {
	cfg     Config
	l       *notify.Listener
	mainPid int
	ctx     context.Context
	cancel  context.CancelFunc
	notices *terminal.Noticer
	execs   execVerifier
	// writeCopies is held shared by every install of a file open for
	// writing until the supervisor's own copy is closed, and taken whole
	// (and let go) by an exec before it is continued: no exec the tree
	// makes can find permwrap still holding a file it wrote (installFD).
	writeCopies sync.RWMutex
	scripts     scriptApprovals
	saves       saveApprovals
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
	pool       receive.Pool
	// remote caches, per device, whether a file system is remote
	// (calls.go, openCall.mayBlock).
	remote sync.Map
	// stats counts calls by kind (Config.Stats, stats.go); nil when off.
	stats *callStats
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
	s.stats = newCallStats(cfg.Stats)
	return s
}

// serve runs the receiving pool (supervisor/receive) until the filter
// has no users left: every notification is handled (handle) by a worker
// that keeps the receiving role as keepRole says.
func (s *supervisor) serve() {
	handle := s.handle
	if s.stats != nil {
		handle = s.stats.handler(handle)
	}
	s.pool.Serve(s.l, s.keepRole, handle, s.receiveTrouble)
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
	if err := s.stats.write(); err != nil {
		s.notices.Line("permwrap: writing the call statistics (PERMWRAP_STATS): " + err.Error())
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
// count is zero must not meet that Wait (the same rule as the receiving
// pool's, receive.Pool).
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
// (receive.Loop), else nil: an fd installed inline may keep the thread's
// signals blocked (notify.Quiet).
func (s *supervisor) handle(n *notify.Notif, q *notify.Quiet) {
	// The thread is in a new call: a chdir of its own has run.
	pin.CallSeen(int(n.Pid), n.ID)
	// A process that just exec'd is verified before anything it asks for.
	if !s.execs.check(n) {
		return
	}
	row := rowOf(n.Nr)
	if row == nil || row.decode == nil {
		s.fail(n, row, &refusal{errno: unix.ENOSYS, why: "a syscall permwrap does not watch"})
		return
	}
	d := decoder{n: n, tid: int(n.Pid), ids: s.ids, tree: s.tree, net: &s.net}
	c, err := row.decode(&d)
	if s.stats != nil {
		s.stats.note(n.ID, row, c, err)
	}
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
	cl, ok := c.(call)
	if !ok {
		// A decoder that made neither: refused, never a panic of the worker.
		d.release()
		s.fail(n, row, &refusal{errno: unix.EACCES, why: fmt.Sprintf("permwrap decoded %s into nothing it can decide (%T)", row.name, c)})
		return
	}
	r := &request{id: n.ID, tid: int(n.Pid), th: d.takeThread(), call: cl, quiet: q}
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
//  2. Not simply allowed (audit mode's would-be asks and denials
//     included), and the kernel would refuse the call anyway (or it
//     could change nothing): answered as the kernel, without asking.
//  3. Allowed: performed; when what it was decided on changed under it,
//     decided once more (back to 1). Asked: handed off to ask, off the
//     receiving goroutine. Denied: refused.
func (s *supervisor) decide(r *request) {
	for {
		v := s.verdictOf(r)
		// Audit mode's allows of what would have asked or been denied
		// too: without --audit the call would be answered here, so it is
		// with it, and the log does not name a would_ask (which policy
		// suggest would turn into a rule) for `mkdir -p ~/src/x`'s
		// existing ~ and ~/src.
		if v.result.Action != engine.Allow || v.result.Rule.Origin == engine.OriginAudit {
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
			if v.exec != nil && len(v.exec.Effects) > 0 && !r.nested {
				// A command a rule allows: the writes its job is
				// (a local push's remote) follow (scripts.go).
				s.scripts.approveRule(s.tgidOf(r.tid), v)
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
	r.call.perform(s, r.id, r.quiet)
	return r.call.changed() && s.l.IDValid(r.id) == nil
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
	tgid := s.tgidOf(r.tid)
	var d authority.Decision
	// An ask an approval already answers asks nobody: it is recorded as
	// allowed by that approval, without an asked record before it (a
	// push's sixteen writes into its remote were sixteen asked/approved
	// pairs).
	asked := false
	if sd, ok := s.saves.answer(v, tgid); ok && !r.nested {
		// The rest of a save already allowed (saves.go).
		d = sd
	} else if sd, ok := scriptAnswer(v, s.scripts.held(tgid), s.cfg.Policy.AsksUnnamed); ok && !r.nested {
		// One of the commands or files of a script already allowed for
		// this process tree.
		d = sd
	} else {
		asked = true
		s.logAsked(r, req)
		if s.cfg.Decider == nil {
			d = authority.Denied(authority.ByUnavailable{Reason: "confirmation unavailable"}, "confirmation unavailable")
		} else {
			d = s.cfg.Decider.Resolve(s.ctx, req)
		}
	}
	// "Allow for this session" and "always deny": the rules hold from
	// the next request on (for a nested caller, in its node's chain); the
	// log records those that could be added.
	d = s.addSessionRules(r, d)
	s.logDecided(r, req, asked, d)
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
	ev := authority.OutcomeEvent(asked, d)
	if _, byRule := d.DecidedBy().(authority.ByRule); byRule && ev == authority.EventAllowed && v.result.Check.Surface == engine.SurfaceRead && !r.nested {
		if l, ok := s.cfg.Log.(*authority.Log); ok && l.SummarisesReads() {
			// Counted in its process's summary: no Request, no request id.
			l.NoteRead(processInfo(r.th, r.tid, false, r.exe), v.result.Check.Value, "", v.result.Rule, d.DecidedBy())
			return ""
		}
	}
	if !s.wantsRecord(r, ev, v.result.Check.Surface) {
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
	req.Managed = v.result.Managed
	if v.exec != nil {
		execParts(&req, v)
		if r.nested {
			// A nested node's approvals record nothing (ask): its
			// prompt must not promise what they would cover.
			req.Covers = nil
		}
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
	// What allowing it allows besides (scripts.go): asked, every effect a
	// person's approval would grant; allowed, those the rule granted.
	effects := v.exec.Effects
	if v.result.Action == engine.Allow {
		effects, _ = ruleEffects(v)
	}
	for _, e := range effects {
		req.Covers = append(req.Covers, e.String())
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
	if th.Tgid != tid && th.Tgid > 0 {
		// The process, and the thread that asked: a thread's allows
		// are counted under its process in the log's read summaries.
		p.PID, p.TID = th.Tgid, tid
	}
	if !full {
		return p
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
	p.Comm = programName(p.Comm, p.Exe, p.Cmdline)
	return p
}

// programName is what the prompt and the log call a process: its comm,
// unless the comm names how it was started rather than what runs — a
// program exec'd through /proc/self/exe (permwrap's own stages, Go and
// Rust programs re-executing themselves) has the comm "exe", and one
// exec'd from a descriptor (fexecve, execveat with AT_EMPTY_PATH) the
// descriptor's number. Then the executable's base name, else argv[0]'s.
func programName(comm, exe string, argv []string) string {
	if comm != "" && comm != "exe" && strings.Trim(comm, "0123456789") != "" {
		return comm
	}
	if exe != "" && !strings.HasPrefix(exe, "/proc/") {
		return path.Base(strings.TrimSuffix(exe, " (deleted)"))
	}
	if len(argv) > 0 && argv[0] != "" {
		return path.Base(argv[0])
	}
	return comm
}
