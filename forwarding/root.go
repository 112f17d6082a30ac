package forwarding

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify/pin"
)

// Root is the root's side of nesting (docs/nesting.md): the permwrap
// that owns the seccomp listener. A permwrap started inside it does not
// supervise: its keeper knocks (an open of KnockPath, which the
// supervisor answers with a socket from Accept), registers a node — its
// configuration, compiled here — and from then on every call of the
// keeper's subtree is judged by every policy from the root's down to that
// node's, most restrictive wins (Membership.Layers, Strictest). Asks go
// to the root's chain and terminal; records also go to the inner's log
// (Logs).
//
// Root holds the registry of nodes, the tree that says which node a
// process is in, the server that answers knocks, a per-thread cache of
// memberships and the review logs written for inner permwraps. While no
// node exists, nothing here runs on the hot path: NodeOf is one atomic
// load and the root's processes are judged exactly as without nesting.
//
// A nil *Root is nesting unavailable: no process is nested, and nothing
// is logged for a node.
type Root struct {
	reg  *Registry
	tree *Tree
	srv  *Server
	opts RootOptions

	// threads caches the membership of a thread (by tid), pinned by a
	// pidfd of that thread: one poll per notification once it is known.
	thrMu   sync.RWMutex
	threads map[int]*threadNode
	inserts int

	// logs are the review logs written for inner permwraps (their
	// --log), over the server's sink of each node, made on first use.
	logMu sync.Mutex
	logs  map[*Node]*authority.Log
}

// RootOptions are what the supervisor gives the root's side of nesting.
type RootOptions struct {
	// Notice says a line to the person at the root's terminal: a node
	// refused, a protocol error.
	Notice func(string)
	// Log is the root's review log, which records what happens to nodes
	// (nesting.* events); nil records none.
	Log *authority.Log
}

type threadNode struct {
	pfd *pin.Pidfd
	m   Membership
}

// Bounds of the thread cache: swept of exited threads every
// threadSweepEvery insertions.
const threadSweepEvery = 1024

// NewRoot sets nesting up for a run whose processes are the children of
// top (the supervisor's watchdog: the command's parent and the subreaper
// every orphan of the tree is re-parented to), with policy the root's
// own. It fails only if the root's own configuration cannot be compiled
// again, which it just was; the run then goes on without nesting, and a
// knock is answered as if nobody listened (the inner permwrap then
// refuses to run: fail-closed).
func NewRoot(policy *engine.Policy, top int, opts RootOptions) (*Root, error) {
	skipsReads, freeListings := policy.ReadsAlwaysAllowed(), policy.ListingsFree()
	reg, err := NewRegistry(policy.Config(), policy, RegistryOptions{
		Enforceable: func(p *engine.Policy) error {
			// With a policy that allows every read, the root's filter does
			// not see plain reads at all (the supervisor's filterOptions): it
			// could not enforce a node's read rules, so it says so instead.
			if skipsReads && !p.ReadsAlwaysAllowed() {
				return errors.New("this permwrap's policy allows every read, so its filter does not see plain reads and cannot enforce the node's read rules; give the outer permwrap a policy with a read rule (or run the inner one with a policy that allows every read)")
			}
			// Likewise listings: a filter that leaves them free cannot
			// judge them for a node whose policy says "judged".
			if freeListings && !p.ListingsFree() && p.FailClosed() {
				return errors.New("a scope of the node's policy did not load, so it would judge every listing (fail-closed), which this permwrap's filter does not show it: fix the scope, or run the inner permwrap without it")
			}
			if freeListings && !p.ListingsFree() {
				return errors.New(`this permwrap leaves directory listings free ("listings": "free"), so its filter does not see them and cannot judge the node's listings; set "listings": "judged" in the outer permwrap's policy too`)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	n := &Root{reg: reg, opts: opts, threads: map[int]*threadNode{}, logs: map[*Node]*authority.Log{}}
	n.tree = NewTree(pidfdProcs{}, reg, top, TreeOptions{})
	n.srv = NewServer(n.tree, ServerOptions{OnEvent: n.event})
	return n, nil
}

// Close ends the server (nodes stay: the tree is going away with the
// run) and flushes the inner permwraps' logs.
func (n *Root) Close() {
	n.srv.Close()
	n.logMu.Lock()
	for _, l := range n.logs {
		l.Close()
	}
	n.logs = map[*Node]*authority.Log{}
	n.logMu.Unlock()
	n.thrMu.Lock()
	for tid, e := range n.threads {
		e.pfd.Close()
		delete(n.threads, tid)
	}
	n.thrMu.Unlock()
}

// Accept answers a knock by peer (Server.Accept): one end of a
// socketpair to install in the knocker, ErrBusy when too many nesting
// connections are pending.
func (n *Root) Accept(peer Peer) (*os.File, error) { return n.srv.Accept(peer) }

// event reports what happened on the nesting server: refusals and
// protocol errors to the person (they mean an inner permwrap refused to
// run, or something in the tree spoke nonsense), everything but probes
// to the review log.
func (n *Root) event(e Event) {
	switch e.Kind {
	case EventProbe:
		return
	case EventRefused, EventProtocol:
		n.opts.Notice("permwrap: " + e.String())
	case EventClosed:
		// The inner permwrap's side is gone: its log gets nothing more.
		n.logMu.Lock()
		if l := n.logs[e.Node]; l != nil {
			delete(n.logs, e.Node)
			defer l.Close()
		}
		n.logMu.Unlock()
	}
	if l := n.opts.Log; l != nil {
		node, detail := "", ""
		if e.Node != nil {
			node = e.Node.Label()
			if e.Kind == EventRegistered {
				detail = strings.Join(e.Node.Argv(), " ")
			}
		}
		l.Nesting(e.Kind.String(), node, detail, e.Peer.PID, e.Err)
	}
}

// pidfdProcs is the tree's view of processes: /proc for parents and
// start times (ProcFS), pidfds for the pins, so a cached process costs
// one poll per lookup instead of a /proc read.
type pidfdProcs struct{ ProcFS }

// Pin pins the process st describes. The pidfd names whatever held the
// pid when it was opened; the start time read after the open proves that
// was st's process (a process keeps its pid for life, so the one seen
// before and after the open is the one the pidfd names).
func (p pidfdProcs) Pin(st ProcStat) (Pin, error) {
	pfd, err := pin.OpenPidfd(st.PID)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", st.PID, ErrGone)
	}
	now, err := p.ProcFS.Stat(st.PID)
	if err != nil || now.Start != st.Start || pfd.Exited() {
		pfd.Close()
		return nil, fmt.Errorf("pid %d: %w", st.PID, ErrGone)
	}
	return pfd, nil
}

// NodeOf says which node the thread tid belongs to: the one place that
// answers it. nested is false for a process of the root's own node
// (always, while no inner permwrap has registered, and with n nil): it
// is judged exactly as without nesting. ErrGone: the thread is gone (the
// notification is void); ErrUnknownNode: its node cannot be established,
// and the call is denied.
//
// The caller proves the thread is the one that made the notification by
// checking the notification is still valid afterwards: the pidfd pinning
// it was opened while it was.
func (n *Root) NodeOf(tid int) (m Membership, nested bool, err error) {
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
func (n *Root) membership(tid int) (Membership, error) {
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
			return Membership{}, ErrGone
		}
		return Membership{}, fmt.Errorf("%w: thread %d: %v", ErrUnknownNode, tid, err)
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

// LabelOf names the node of tid for records that are not judged (an
// undecodable call, a failed exec verification): "" for the root's own
// processes, "?" when the node cannot be known.
func (n *Root) LabelOf(tid int) string {
	m, nested, err := n.NodeOf(tid)
	switch {
	case err != nil && !errors.Is(err, ErrGone):
		return "?"
	case !nested:
		return ""
	}
	return m.Label()
}

// Describe adds to a nested process's request what it says about the
// node it came from: the node's label (candidates joined by "|" when
// ambiguous), the command its permwrap runs, and a session pattern
// suggested in the node's own terms (its workspace).
//
// The command and the suggestion are for people and reviewers: only an
// ask gets them (every allowed call is recorded too, and the log shows
// neither).
func (m Membership) Describe(req *authority.Request, ask bool) {
	req.Node = m.Label()
	n := m.Node()
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

// AddSessionRule adds what "allow for this session" (allow) or "always
// deny" asked for where it holds: the root's layer for the root's own
// processes (nested false), the chain of m's node for a nested one
// (every layer of it and of the nodes below, Registry.AddSessionRule).
// Nothing is remembered for a process that may belong to several nodes.
func (n *Root) AddSessionRule(m Membership, nested, allow bool, s engine.Surface, pattern string) error {
	node := n.reg.Root()
	if nested {
		if node = m.Node(); node == nil {
			return fmt.Errorf("not remembered: the process may belong to any of the nodes %s", m.Label())
		}
	}
	add := n.reg.AddSessionRule
	if !allow {
		add = n.reg.AddSessionDeny
	}
	_, err := add(node, s, pattern)
	return err
}

// Logs lists the logs of the inner permwraps a nested process's record
// goes to, besides the root's (which has every record): its node's and
// every ancestor's below the root (for an ambiguous process, every
// candidate's), each written with decidedBy wrapped as forwarded
// (Server.Sink). Nil for n nil.
func (n *Root) Logs(m Membership) []*authority.Log {
	if n == nil {
		return nil
	}
	if x := m.Node(); x != nil {
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
	seen := map[*Node]bool{}
	for _, c := range m.Nodes() {
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
func (n *Root) nodeLog(x *Node) *authority.Log {
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
