package forwarding

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/permwrap/permwrap/engine"
)

// Which node a process belongs to.
//
// A process belongs to the node of its parent at the moment it was
// forked, and keeps it for life. The kernel does not record that, and a
// process's parent changes when the parent dies (the orphan is
// re-parented to the nearest child subreaper). So:
//
//   - every node's keeper is a child subreaper, protected from its
//     subtree (Landlock's signal scope, no ptrace): an orphan of the
//     subtree is re-parented to the keeper, still beneath it;
//   - a process is looked up once, walking its parents (/proc) to the
//     nearest process already known, and cached by pid with a Pin that
//     tells when that very process has exited (pid reuse cannot alias
//     two processes);
//   - the children of a keeper belong to its node; the children of the
//     root supervisor (the top, itself a subreaper) to the root;
//   - if a keeper dies without having said its subtree is empty, the
//     node's seal is broken: a process first seen after that, started
//     after the keeper, beneath an ancestor of the node, may be one of
//     its orphans. Such a process is Ambiguous: it is judged by every
//     candidate node's chain, most restrictive wins.
//
// Anything else the walk cannot establish — a parent chain that leaves
// the tree, start times out of order (a pid reused mid-walk), an ancestry
// deeper than the bound — is ErrUnknownNode, and the caller denies the
// call. Nothing is ever judged by fewer rules than its node's.

// ProcStat is what the tree reads about a process.
type ProcStat struct {
	PID   int
	PPID  int
	Start uint64 // clock ticks since boot; never decreases along a parent chain
}

// Pin watches one process instance.
type Pin interface {
	// Alive reports whether that process has not exited.
	Alive() bool
	Close() error
}

// Procs is the tree's view of the kernel's processes. ProcFS implements it
// with /proc; the supervisor may use pidfds for cheaper pins.
type Procs interface {
	// Stat reads a process (a thread group id). ErrGone when it does not
	// exist.
	Stat(pid int) (ProcStat, error)
	// Pin watches the process st describes, failing with ErrGone when
	// the pid no longer names that instance.
	Pin(st ProcStat) (Pin, error)
	// Children lists the process's children (all its threads').
	Children(pid int) ([]int, error)
}

// ErrGone is a process that does not exist (any more).
var ErrGone = errors.New("forwarding: no such process")

// ErrUnknownNode is a process whose node cannot be established. The
// supervisor denies the call.
var ErrUnknownNode = errors.New("cannot tell which permwrap node the process belongs to")

func unknown(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnknownNode, fmt.Sprintf(format, args...))
}

// Membership is the node (or, when Ambiguous, the candidate nodes) a
// process belongs to.
type Membership struct {
	nodes []*Node // sorted by depth then id; len ≥ 1
}

func single(n *Node) Membership { return Membership{nodes: []*Node{n}} }

// Node is the process's node, or nil when it is ambiguous.
func (m Membership) Node() *Node {
	if len(m.nodes) == 1 {
		return m.nodes[0]
	}
	return nil
}

// Nodes lists the candidates (one when not ambiguous).
func (m Membership) Nodes() []*Node { return append([]*Node(nil), m.nodes...) }

// Ambiguous reports whether the process may belong to several nodes.
func (m Membership) Ambiguous() bool { return len(m.nodes) > 1 }

// Layers are the policies that judge the process: its node's chain, or
// every candidate's chains when ambiguous.
func (m Membership) Layers() []Layer {
	if len(m.nodes) == 1 {
		return m.nodes[0].layers
	}
	var out []Layer
	for _, n := range m.nodes {
		out = append(out, n.layers...)
	}
	return out
}

// Label names the node, or the candidates joined by "|".
func (m Membership) Label() string {
	if len(m.nodes) == 0 {
		return "?"
	}
	parts := make([]string, len(m.nodes))
	for i, n := range m.nodes {
		parts[i] = n.Label()
	}
	return strings.Join(parts, "|")
}

func (m Membership) with(extra []*Node) Membership {
	if len(extra) == 0 {
		return m
	}
	all := append(append([]*Node(nil), m.nodes...), extra...)
	slices.SortFunc(all, func(a, b *Node) int {
		if a.depth != b.depth {
			return a.depth - b.depth
		}
		return int(a.id) - int(b.id)
	})
	all = slices.Compact(all)
	return Membership{nodes: all}
}

// entry is one cached process.
type entry struct {
	start uint64
	pin   Pin
	m     Membership
	// keeps is set on a node's keeper: its children belong to that node,
	// whatever the keeper's own membership.
	keeps *Node
}

func (e *entry) childMembership() Membership {
	if e.keeps != nil {
		return single(e.keeps)
	}
	return e.m
}

// TreeOptions tune the tree.
type TreeOptions struct {
	// MaxHops bounds the parent walk of one lookup. 0 means 512.
	MaxHops int
	// SweepEvery runs a sweep after this many new entries. 0 means 1024.
	SweepEvery int
}

// Tree answers which node a process belongs to. It is safe for
// concurrent use.
type Tree struct {
	procs Procs
	reg   *Registry
	top   int // the root supervisor: a subreaper, parent of the root's processes
	opts  TreeOptions

	mu      sync.RWMutex
	m       map[int]*entry
	inserts int
}

// NewTree makes the tree of the processes beneath top (the root
// supervisor's pid).
func NewTree(procs Procs, reg *Registry, top int, opts TreeOptions) *Tree {
	if opts.MaxHops <= 0 {
		opts.MaxHops = 512
	}
	if opts.SweepEvery <= 0 {
		opts.SweepEvery = 1024
	}
	return &Tree{procs: procs, reg: reg, top: top, opts: opts, m: map[int]*entry{}}
}

// NodeOf says which node the process tgid (a thread group id, not a
// thread's id) belongs to. While no node is registered it is the root,
// with no lookup at all; afterwards the first call for a process walks
// its ancestry and later calls cost one Pin check.
func (t *Tree) NodeOf(tgid int) (Membership, error) {
	if !t.reg.Nested() {
		return single(t.reg.root), nil
	}
	return t.lookup(tgid)
}

func (t *Tree) lookup(tgid int) (Membership, error) {
	if e := t.cached(tgid); e != nil {
		return e.m, nil
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var m Membership
		m, err = t.resolve(tgid)
		if err == nil || !errors.Is(err, errRace) {
			return m, err
		}
	}
	return Membership{}, unknown("process %d: its ancestry kept changing while it was read (%v)", tgid, err)
}

// cached returns pid's entry if it is cached and its process still runs;
// a dead entry is dropped.
func (t *Tree) cached(pid int) *entry {
	t.mu.RLock()
	e := t.m[pid]
	t.mu.RUnlock()
	if e == nil {
		return nil
	}
	if e.pin.Alive() {
		return e
	}
	t.mu.Lock()
	if t.m[pid] == e {
		delete(t.m, pid)
		e.pin.Close()
	}
	t.mu.Unlock()
	return nil
}

var errRace = errors.New("ancestry changed during the walk")

// resolve walks from tgid up to the nearest known process and caches the
// processes walked.
func (t *Tree) resolve(tgid int) (Membership, error) {
	var walked []ProcStat
	var base Membership
	pid := tgid
	for hops := 0; ; hops++ {
		if hops > t.opts.MaxHops {
			return Membership{}, unknown("process %d: more than %d ancestors", tgid, t.opts.MaxHops)
		}
		st, err := t.procs.Stat(pid)
		if err != nil {
			if len(walked) == 0 {
				if errors.Is(err, ErrGone) {
					return Membership{}, err
				}
				return Membership{}, unknown("process %d: %v", pid, err)
			}
			// An ancestor exited between reading its child and itself:
			// the child has a new parent now. Walk again.
			return Membership{}, fmt.Errorf("%w: %v", errRace, err)
		}
		if st.PID != pid {
			return Membership{}, unknown("process %d: /proc answered for %d", pid, st.PID)
		}
		if n := len(walked); n > 0 && st.Start > walked[n-1].Start {
			// A parent cannot start after its child: the pid was reused.
			return Membership{}, errRace
		}
		walked = append(walked, st)
		pp := st.PPID
		if pp == t.top {
			base = single(t.reg.root)
			break
		}
		if e := t.cached(pp); e != nil {
			if e.start > st.Start {
				return Membership{}, errRace
			}
			base = e.childMembership()
			break
		}
		if pp <= 1 {
			return Membership{}, unknown("process %d: its ancestry leaves the supervised tree (reached pid %d)", tgid, pp)
		}
		pid = pp
	}
	// From the known ancestor down: each walked process belongs to its
	// parent's membership, widened by any broken node it could have come
	// from (see the comment at the top).
	ms := make([]Membership, len(walked))
	m := base
	for i := len(walked) - 1; i >= 0; i-- {
		m = m.with(t.reg.brokenBeneath(m.nodes, walked[i].Start))
		ms[i] = m
	}
	for i, st := range walked {
		t.insert(st, ms[i])
	}
	return ms[0], nil
}

func (t *Tree) insert(st ProcStat, m Membership) {
	pin, err := t.procs.Pin(st)
	if err != nil {
		return // gone already: nothing to cache; its membership was still computed right
	}
	t.mu.Lock()
	if old := t.m[st.PID]; old != nil {
		if old.start == st.Start {
			t.mu.Unlock()
			pin.Close()
			return
		}
		old.pin.Close()
	}
	t.m[st.PID] = &entry{start: st.Start, pin: pin, m: m}
	t.inserts++
	sweep := t.inserts >= t.opts.SweepEvery
	if sweep {
		t.inserts = 0
	}
	t.mu.Unlock()
	if sweep {
		t.Sweep()
	}
}

// Place establishes which node a peer (a process that knocked) is in: it
// must be a live process of the tree, the very instance that knocked, and
// of one node only. It is the server's authentication: only processes
// the supervisor serves can knock, and only they can be placed.
func (t *Tree) Place(p Peer) (*Node, error) {
	st, err := t.procs.Stat(p.PID)
	if err != nil {
		return nil, fmt.Errorf("peer %v: %w", p, err)
	}
	if st.Start != p.Start {
		return nil, fmt.Errorf("peer %v: the pid now names another process", p)
	}
	m, err := t.lookup(p.PID)
	if err != nil {
		return nil, err
	}
	if e := t.cached(p.PID); e == nil || e.start != p.Start {
		return nil, fmt.Errorf("peer %v: not a live process of the supervised tree", p)
	}
	n := m.Node()
	if n == nil {
		return nil, fmt.Errorf("peer %v: %w: it may belong to any of %s", p, ErrUnknownNode, m.Label())
	}
	return n, nil
}

// Register places the peer, registers its node with the registry (a
// child of the peer's own node) and makes the peer the node's keeper: its
// children belong to the node from then on. The peer itself stays in its
// own node (its own calls, such as starting the command, are its parent
// node's business).
func (t *Tree) Register(p Peer, spec Spec) (*Node, []engine.Warning, error) {
	parent, err := t.Place(p)
	if err != nil {
		return nil, nil, err
	}
	if e := t.cached(p.PID); e != nil && e.keeps != nil {
		return nil, nil, refuse("this process already keeps node %s", e.keeps.Label())
	}
	pin, err := t.procs.Pin(ProcStat{PID: p.PID, Start: p.Start})
	if err != nil {
		return nil, nil, fmt.Errorf("keeper %v: %w", p, err)
	}
	n, warns, err := t.reg.Register(parent, spec, p, pin)
	if err != nil {
		pin.Close()
		return nil, nil, err
	}
	if err := t.bind(p, n); err != nil {
		// Never handed out and nothing beneath it yet: take it back.
		t.reg.discard(n)
		return nil, nil, err
	}
	return n, warns, nil
}

func (t *Tree) bind(p Peer, n *Node) error {
	for attempt := 0; ; attempt++ {
		t.mu.Lock()
		e := t.m[p.PID]
		if e != nil && e.start == p.Start {
			if e.keeps != nil && e.keeps != n {
				t.mu.Unlock()
				return fmt.Errorf("keeper %v already keeps %s", p, e.keeps.Label())
			}
			e.keeps = n
			t.mu.Unlock()
			return nil
		}
		t.mu.Unlock()
		if attempt == 2 {
			return fmt.Errorf("keeper %v: not a live process of the supervised tree", p)
		}
		if _, err := t.lookup(p.PID); err != nil {
			return err
		}
	}
}

// KeeperDone checks and records that n's keeper says its subtree is
// empty: the keeper must have no children left.
func (t *Tree) KeeperDone(n *Node) error {
	kids, err := t.procs.Children(n.keeper.PID)
	if err != nil {
		return fmt.Errorf("keeper of %s: %w", n.Label(), err)
	}
	if len(kids) > 0 {
		return fmt.Errorf("keeper of %s says its subtree is empty but has %d children", n.Label(), len(kids))
	}
	return t.reg.keeperDone(n)
}

// Sweep drops the entries of exited processes and settles nodes: a node
// whose keeper is gone becomes finished (it said its subtree was empty)
// or abandoned, and a finished node no live process belongs to is
// removed. It reports whether nodes remain that a later sweep may settle.
func (t *Tree) Sweep() bool {
	// Pins are checked outside the lock: a check may read /proc, and
	// lookups must not wait for a sweep over every process.
	t.mu.RLock()
	all := make(map[int]*entry, len(t.m))
	for pid, e := range t.m {
		all[pid] = e
	}
	t.mu.RUnlock()
	live := map[*Node]bool{}
	var dead []int
	for pid, e := range all {
		if !e.pin.Alive() {
			dead = append(dead, pid)
			continue
		}
		for _, n := range e.m.nodes {
			live[n] = true
		}
	}
	t.mu.Lock()
	for _, pid := range dead {
		if e := t.m[pid]; e != nil && e == all[pid] {
			delete(t.m, pid)
			e.pin.Close()
		}
	}
	t.mu.Unlock()
	return t.reg.settle(live)
}

// Len is the number of cached processes (for tests and doctor).
func (t *Tree) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m)
}
