package supervisor

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/forwarding"
	"github.com/permwrap/permwrap/notify/host"
	"github.com/permwrap/permwrap/notify/pin"
)

// Nesting, the root's side (docs/nesting.md). A permwrap started inside
// this one does not supervise: its keeper knocks (an open of
// forwarding.KnockPath, answered here with a socket), registers a node —
// its configuration, compiled here — and from then on every call of the
// keeper's subtree is judged by every policy from this permwrap's down
// to that node's, most restrictive wins. Asks go to this permwrap's
// chain and terminal; records also go to the inner's log.
//
// While no node exists, nothing here runs on the hot path: nodeOf is
// one atomic load and the root's processes are judged exactly as
// without nesting.

// nesting holds the registry of nodes, the tree that says which node a
// process is in, the server that answers knocks, and a per-thread cache.
type nesting struct {
	s    *supervisor
	reg  *forwarding.Registry
	tree *forwarding.Tree
	srv  *forwarding.Server

	// threads caches the membership of a thread (by tid), pinned by a
	// pidfd of that thread: one poll per notification once it is known.
	thrMu   sync.RWMutex
	threads map[int]*threadNode
	inserts int

	// logs are the review logs written for inner permwraps (their
	// --log), over the server's sink of each node, made on first use.
	logMu sync.Mutex
	logs  map[*forwarding.Node]*authority.Log
}

type threadNode struct {
	pfd *pin.Pidfd
	m   forwarding.Membership
}

// Bounds of the thread cache: swept of exited threads every
// threadSweepEvery insertions.
const threadSweepEvery = 1024

// startNesting sets nesting up for a run whose processes are the
// children of top (the watchdog, see watchdog.go: the command's parent
// and the subreaper every orphan of the tree is re-parented to). It
// fails only if the root's own configuration cannot be compiled again,
// which it just was; the run then goes on without nesting, and a knock
// is answered as if nobody listened (the inner permwrap then refuses to
// run: fail-closed).
func (s *supervisor) startNesting(top int) error {
	skipsReads := s.cfg.Policy.ReadsAlwaysAllowed()
	reg, err := forwarding.NewRegistry(s.cfg.Policy.Config(), s.cfg.Policy, forwarding.RegistryOptions{
		Enforceable: func(p *engine.Policy) error {
			// With a policy that allows every read, this permwrap's filter
			// does not see plain reads at all (filterRules): it could not
			// enforce a node's read rules, so it says so instead.
			if skipsReads && !p.ReadsAlwaysAllowed() {
				return errors.New("this permwrap's policy allows every read, so its filter does not see plain reads and cannot enforce the node's read rules; give the outer permwrap a policy with a read rule (or run the inner one with a policy that allows every read)")
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	n := &nesting{s: s, reg: reg, threads: map[int]*threadNode{}, logs: map[*forwarding.Node]*authority.Log{}}
	n.tree = forwarding.NewTree(pidfdProcs{}, reg, top, forwarding.TreeOptions{})
	n.srv = forwarding.NewServer(n.tree, forwarding.ServerOptions{OnEvent: n.event})
	s.nest = n
	return nil
}

// close ends the server (nodes stay: the tree is going away with the
// run) and flushes the inner permwraps' logs.
func (n *nesting) close() {
	n.srv.Close()
	n.logMu.Lock()
	for _, l := range n.logs {
		l.Close()
	}
	n.logs = map[*forwarding.Node]*authority.Log{}
	n.logMu.Unlock()
	n.thrMu.Lock()
	for tid, e := range n.threads {
		e.pfd.Close()
		delete(n.threads, tid)
	}
	n.thrMu.Unlock()
}

// event reports what happened on the nesting server: refusals and
// protocol errors to the person (they mean an inner permwrap refused to
// run, or something in the tree spoke nonsense), everything but probes
// to the review log.
func (n *nesting) event(e forwarding.Event) {
	switch e.Kind {
	case forwarding.EventProbe:
		return
	case forwarding.EventRefused, forwarding.EventProtocol:
		n.s.notices.Line("permwrap: " + e.String())
	case forwarding.EventClosed:
		// The inner permwrap's side is gone: its log gets nothing more.
		n.logMu.Lock()
		if l := n.logs[e.Node]; l != nil {
			delete(n.logs, e.Node)
			defer l.Close()
		}
		n.logMu.Unlock()
	}
	if l, ok := n.s.cfg.Log.(*authority.Log); ok && l != nil {
		node, detail := "", ""
		if e.Node != nil {
			node = e.Node.Label()
			if e.Kind == forwarding.EventRegistered {
				detail = strings.Join(e.Node.Argv(), " ")
			}
		}
		l.Nesting(e.Kind.String(), node, detail, e.Peer.PID, e.Err)
	}
}

// pidfdProcs is the tree's view of processes: /proc for parents and
// start times (forwarding.ProcFS), pidfds for the pins, so a cached
// process costs one poll per lookup instead of a /proc read.
type pidfdProcs struct{ forwarding.ProcFS }

// Pin pins the process st describes. The pidfd names whatever held the
// pid when it was opened; the start time read after the open proves that
// was st's process (a process keeps its pid for life, so the one seen
// before and after the open is the one the pidfd names).
func (p pidfdProcs) Pin(st forwarding.ProcStat) (forwarding.Pin, error) {
	pfd, err := pin.OpenPidfd(st.PID)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", st.PID, forwarding.ErrGone)
	}
	now, err := p.ProcFS.Stat(st.PID)
	if err != nil || now.Start != st.Start || pfd.Exited() {
		pfd.Close()
		return nil, fmt.Errorf("pid %d: %w", st.PID, forwarding.ErrGone)
	}
	return pfd, nil
}

// nodeOf says which node the thread tid belongs to: the one place that
// answers it. nested is false for a process of this permwrap's own node
// (always, while no inner permwrap has registered): it is judged exactly
// as without nesting. forwarding.ErrGone: the thread is gone (the
// notification is void); forwarding.ErrUnknownNode: its node cannot be
// established, and the call is denied.
func (s *supervisor) nodeOf(tid int) (m forwarding.Membership, nested bool, err error) {
	n := s.nest
	if n == nil || !n.reg.Nested() {
		return m, false, nil
	}
	m, err = n.membership(tid)
	if err != nil {
		return m, true, err
	}
	if m.Node() == n.reg.Root() {
		return m, false, nil
	}
	return m, true, nil
}

// membership finds a thread's node: from the cache while the cached
// thread lives, else through its process (the tree walks and caches).
// The caller proves the thread is the one that made the notification by
// checking the notification is still valid afterwards (handle does): the
// pidfd was opened while it was.
func (n *nesting) membership(tid int) (forwarding.Membership, error) {
	n.thrMu.RLock()
	e := n.threads[tid]
	n.thrMu.RUnlock()
	if e != nil {
		if e.pfd.Alive() {
			return e.m, nil
		}
		n.thrMu.Lock()
		if n.threads[tid] == e {
			delete(n.threads, tid)
			e.pfd.Close()
		}
		n.thrMu.Unlock()
	}
	pfd, tgid, err := pin.OpenThread(tid)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return forwarding.Membership{}, forwarding.ErrGone
		}
		return forwarding.Membership{}, fmt.Errorf("%w: thread %d: %v", forwarding.ErrUnknownNode, tid, err)
	}
	m, err := n.tree.NodeOf(tgid)
	if err != nil {
		pfd.Close()
		return m, err
	}
	n.thrMu.Lock()
	if old := n.threads[tid]; old != nil {
		old.pfd.Close()
	}
	n.threads[tid] = &threadNode{pfd: pfd, m: m}
	n.inserts++
	sweep := n.inserts >= threadSweepEvery
	if sweep {
		n.inserts = 0
		for t, x := range n.threads {
			if x.pfd.Exited() {
				x.pfd.Close()
				delete(n.threads, t)
			}
		}
	}
	n.thrMu.Unlock()
	return m, nil
}

// nodeLabel names the node of tid for records that are not judged (an
// undecodable call, a failed exec verification): "" for this
// permwrap's own processes.
func (s *supervisor) nodeLabel(tid int) string {
	m, nested, err := s.nodeOf(tid)
	switch {
	case err != nil && !errors.Is(err, forwarding.ErrGone):
		return "?"
	case !nested:
		return ""
	}
	return m.Label()
}

// placeRequest finds the request's node; false when the call has been
// answered already (its thread is gone, or its node cannot be known and
// the call was denied).
func (s *supervisor) placeRequest(r *request) bool {
	m, nested, err := s.nodeOf(r.tid)
	if err == nil {
		r.m, r.nested = m, nested
		return true
	}
	if errors.Is(err, forwarding.ErrGone) {
		s.respondErr(r.id, unix.EACCES) // the target is gone; the answer goes nowhere
		return false
	}
	if s.l.IDValid(r.id) != nil {
		return false
	}
	// Judged by the root alone for what it is about; the answer is a deny.
	v := r.call.judge(s.cfg.Policy)
	v.result = engine.Result{Action: engine.Deny, Check: v.result.Check, Layer: engine.LayerBuiltin,
		Rule: engine.Rule{Surface: v.result.Check.Surface, Action: engine.Deny, Origin: engine.OriginBuiltin, Reason: err.Error()}}
	r.nested = true // recorded as a nested process's, node "?"
	s.deny(r, v, false, authority.Denied(authority.ByError{Reason: err.Error()}, err.Error()))
	return false
}

// judge decides a request: with this permwrap's policy alone for its own
// processes (exactly as without nesting), else with every policy of the
// node's chain, most restrictive wins. Audit mode is each layer's own:
// an inner --audit lets through what its own layer would refuse, never
// what a layer above it refuses.
func (s *supervisor) judge(r *request) verdict {
	if !r.nested {
		return judgeBy(s.cfg.Policy, r.call)
	}
	return forwarding.Strictest(r.m.Layers(), func(p *engine.Policy) verdict {
		return judgeBy(p, r.call)
	}, verdictResult)
}

// judgeBy is one policy's answer to a call: its judge (pure); when the
// answer depends on what the file holds (a content rule), the call looks
// at the very file it will hand over and the policy answers again
// (content.go); then the policy's audit mode (--audit), which lets an ask
// or deny through, logged as would_*.
func judgeBy(p *engine.Policy, c call) verdict {
	v := c.judge(p)
	if v.result.DependsOnContent {
		if cc, ok := c.(contentCall); ok {
			v = cc.judgeContent(p, v)
		}
	}
	v.result = p.Audit(v.result)
	return v
}

func verdictResult(v verdict) engine.Result { return v.result }

// describeNode adds to a request what it says about the node it came
// from: the node's label (candidates joined by "|" when ambiguous), the
// command its permwrap runs, and a session pattern suggested in the
// node's own terms (its workspace).
//
// The command and the suggestion are for people and reviewers: only an
// ask gets them (every allowed call is recorded too, and the log shows
// neither).
func (s *supervisor) describeNode(r *request, req *authority.Request, ask bool) {
	if !r.nested {
		return
	}
	req.Node = r.m.Label()
	n := r.m.Node()
	if n == nil {
		req.Suggested = nil // nothing is remembered for an ambiguous process
		return
	}
	if !ask {
		return
	}
	req.NodeCommand = n.Argv()
	if c := req.Check; c.Surface.IsPath() && len(req.Suggested) == 1 && req.Suggested[0].Surface == c.Surface {
		// A path's suggestion in the node's own terms (its workspace).
		acc := engine.AccessWrite
		if c.Surface == engine.SurfaceRead {
			acc = engine.AccessRead
		}
		req.Suggested[0].Pattern = engine.SuggestPathPattern(acc, c.Value, n.Env())
	}
}

// addSessionRules adds what "allow for this session" or "always deny"
// asked for where it holds: this permwrap's policy for its own processes,
// the chain of the node for a nested one (every layer of it and of the
// nodes below, forwarding.Registry). Nothing is remembered for a process
// that may belong to several nodes. Rules that could not be added are
// said; the answer to this request stands.
func (s *supervisor) addSessionRules(r *request, d authority.Decision) authority.Decision {
	d, err := d.AddSessionRulesBy(func(allow bool, sp authority.SessionPattern) error {
		if s.nest == nil && !r.nested {
			if allow {
				_, err := s.cfg.Policy.AddSessionRule(sp.Surface, sp.Pattern)
				return err
			}
			_, err := s.cfg.Policy.AddSessionDeny(sp.Surface, sp.Pattern)
			return err
		}
		node := s.nest.reg.Root()
		if r.nested {
			if node = r.m.Node(); node == nil {
				return fmt.Errorf("not remembered: the process may belong to any of the nodes %s", r.m.Label())
			}
		}
		add := s.nest.reg.AddSessionRule
		if !allow {
			add = s.nest.reg.AddSessionDeny
		}
		_, err := add(node, sp.Surface, sp.Pattern)
		return err
	})
	if err != nil {
		s.notices.Line("permwrap: could not add " + strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return d
}

// Records. This permwrap's log has every record; a nested node's are
// also written, with decidedBy wrapped as forwarded, to the log of the
// inner permwrap of that node and of every node above it that asked for
// its subtree's records (forwarding.Server.Sink).

// wantsRecord reports whether any log would keep a record of this kind.
func (s *supervisor) wantsRecord(r *request, ev authority.Event, surface engine.Surface) bool {
	if s.cfg.Log != nil {
		if l, ok := s.cfg.Log.(*authority.Log); !ok || l.Wants(ev, surface) {
			return true
		}
	}
	for _, l := range s.nodeLogs(r) {
		if l.Wants(ev, surface) {
			return true
		}
	}
	return false
}

func (s *supervisor) logAsked(r *request, req authority.Request) {
	if s.cfg.Log != nil {
		s.cfg.Log.Asked(req)
	}
	for _, l := range s.nodeLogs(r) {
		l.Asked(req)
	}
}

func (s *supervisor) logDecided(r *request, req authority.Request, asked bool, d authority.Decision) {
	if s.cfg.Log != nil {
		s.cfg.Log.Decided(req, asked, d)
	}
	for _, l := range s.nodeLogs(r) {
		l.Decided(req, asked, d)
	}
}

// nodeLogs lists the logs of the inner permwraps a nested request's
// record goes to: its node's and every ancestor's below the root (for an
// ambiguous process, every candidate's).
func (s *supervisor) nodeLogs(r *request) []*authority.Log {
	n := s.nest
	if !r.nested || n == nil {
		return nil
	}
	if x := r.m.Node(); x != nil {
		// One node (the common case): its chain, allocating only when a
		// node on it asked for records.
		var out []*authority.Log
		for ; x != nil && !x.IsRoot(); x = x.Parent() {
			if x.WantsLog() {
				if l := n.nodeLog(x); l != nil {
					out = append(out, l)
				}
			}
		}
		return out
	}
	var out []*authority.Log
	seen := map[*forwarding.Node]bool{}
	for _, c := range r.m.Nodes() {
		for x := c; x != nil && !x.IsRoot(); x = x.Parent() {
			if seen[x] {
				continue
			}
			seen[x] = true
			if l := n.nodeLog(x); l != nil {
				out = append(out, l)
			}
		}
	}
	return out
}

// nodeLog is the log written for node x's inner permwrap, or nil when it
// asked for none (or is gone). Its options are the node's own (its
// field width, whether it keeps read allows).
func (n *nesting) nodeLog(x *forwarding.Node) *authority.Log {
	if !x.WantsLog() {
		return nil
	}
	n.logMu.Lock()
	defer n.logMu.Unlock()
	if l := n.logs[x]; l != nil {
		return l
	}
	sink := n.srv.Sink(x)
	if sink == nil {
		return nil
	}
	set := x.Policy().Settings().Log
	l := authority.NewLogWriter(sink, authority.LogOptions{FieldWidth: set.FieldWidth, ReadAllows: set.ReadAllows, Responder: n.reg.Root().Label()})
	n.logs[x] = l
	return l
}

// The knock.

// knockCall is an open of forwarding.KnockPath with the knock's flags:
// an inner permwrap (or `permwrap doctor`) asking whether a permwrap
// supervises it. It is answered with one end of a socketpair whose other
// end the nesting server serves for peer; nothing is judged or recorded
// (the server records the registration).
type knockCall struct {
	peer forwarding.Peer
}

func (c *knockCall) judge(*engine.Policy) verdict { return verdict{result: allowUnchecked("")} }
func (c *knockCall) perform(s *supervisor, id uint64) {
	if s.nest == nil {
		s.respondErr(id, unix.ENOTDIR) // nobody listens: what the open does bare
		return
	}
	f, err := s.nest.srv.Accept(c.peer)
	if err != nil {
		if errors.Is(err, forwarding.ErrBusy) {
			s.respondErr(id, unix.EUSERS)
		} else {
			s.notices.Line("permwrap: nesting: " + err.Error())
			s.respondErr(id, unix.EAGAIN)
		}
		return
	}
	s.installFD(id, f, true, false, nil) // a socket: installed and answered in one step
}
func (c *knockCall) close() {}

// knock recognises a knock from the path as read from the target and
// the open's flags, before anything is resolved, and says who knocked:
// the calling thread's process and its start time. The notification is
// checked to be still valid after this (handle), so the process read
// here is the one that knocked.
func (d *decoder) knock(path string, flags int) (call, error) {
	if !forwarding.IsKnock(path, uint64(uint32(flags))) {
		return nil, nil
	}
	tgid, err := pin.Tgid(d.tid)
	if err != nil {
		return nil, &refusal{errno: pin.Errno(err), why: "identifying the process that knocked", err: err}
	}
	st, err := forwarding.ProcFS{}.Stat(tgid)
	if err != nil {
		return nil, &refusal{errno: unix.ESRCH, why: "identifying the process that knocked", err: err}
	}
	return &knockCall{peer: forwarding.Peer{PID: tgid, Start: st.Start}}, nil
}

// couldKnock is the register-only test done before reading the path: an
// open with exactly the knock's flags.
func couldKnock(flags int) bool {
	return uint32(flags)&^0x8000 == uint32(forwarding.KnockFlags)
}

// ExecNested is the last stage of a nested permwrap (cmd/permwrap's
// __nest-exec, a child of the node's keeper): it finds the command as
// the root's sandbox stage does, enters a new Landlock domain — the inner
// policy's static floor, and the signal scope, so nothing in the node's
// subtree can signal the node's keeper or the inner permwrap, which stay
// outside it — and executes the command. It returns only on failure,
// with the exit code to use (126/127 as env(1), 125 for permwrap's own)
// having said why on stderr. The root's filter judges every call of the
// subtree either way; the floor is the second layer, as for the root's
// own command.
func ExecNested(argv, env []string, floor engine.Floor, requireLandlock bool) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "permwrap: nested exec stage: no command")
		return initExitInternal
	}
	path, code, err := lookCommand(argv[0], env)
	if err != nil {
		fmt.Fprintln(os.Stderr, "permwrap:", err)
		return code
	}
	spec := initSpec{WriteDirs: floor.WriteDirs, WriteAnywhere: floor.WriteAnywhere, RequireLandlock: requireLandlock}
	if err := applyLandlock(spec); err != nil {
		fmt.Fprintln(os.Stderr, "permwrap: landlock:", err)
		return initExitInternal
	}
	err = host.Exec(path, argv, env)
	fmt.Fprintf(os.Stderr, "permwrap: %s: %v\n", argv[0], err)
	if errors.Is(err, unix.ENOENT) {
		return initExitNotFound
	}
	return initExitNoExec
}
