package forwarding

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

// fakeProcs is a process table with the kernel's re-parenting: when a
// process exits, its children go to the nearest living ancestor marked
// as a child subreaper (or to pid 1).
type fakeProcs struct {
	mu        sync.Mutex
	procs     map[int]*fakeProc
	clock     uint64
	nextPid   int
	statCalls int
}

type fakeProc struct {
	pid, ppid int
	start     uint64
	dead      bool
	subreaper bool
}

func newFakeProcs() *fakeProcs {
	f := &fakeProcs{procs: map[int]*fakeProc{}, nextPid: 100}
	f.procs[1] = &fakeProc{pid: 1, start: 0, subreaper: true}
	return f
}

// spawn forks a child of parent (pid 0 picks a fresh pid).
func (f *fakeProcs) spawn(parent, pid int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pid == 0 {
		f.nextPid++
		pid = f.nextPid
	}
	if old := f.procs[pid]; old != nil && !old.dead {
		panic(fmt.Sprintf("pid %d in use", pid))
	}
	f.clock++
	f.procs[pid] = &fakeProc{pid: pid, ppid: parent, start: f.clock}
	return pid
}

func (f *fakeProcs) setSubreaper(pid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.procs[pid].subreaper = true
}

// exit ends pid; its children are re-parented.
func (f *fakeProcs) exit(pid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.procs[pid]
	p.dead = true
	reaper := 1
	for a := f.procs[p.ppid]; a != nil; a = f.procs[a.ppid] {
		if !a.dead && a.subreaper {
			reaper = a.pid
			break
		}
		if a.pid == 1 {
			break
		}
	}
	for _, c := range f.procs {
		if !c.dead && c.ppid == pid {
			c.ppid = reaper
		}
	}
}

func (f *fakeProcs) Stat(pid int) (ProcStat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statCalls++
	p := f.procs[pid]
	if p == nil || p.dead {
		return ProcStat{}, ErrGone
	}
	return ProcStat{PID: pid, PPID: p.ppid, Start: p.start}, nil
}

func (f *fakeProcs) Pin(st ProcStat) (Pin, error) {
	pin := &fakeStatPin{f: f, pid: st.PID, start: st.Start}
	if !pin.Alive() {
		return nil, ErrGone
	}
	return pin, nil
}

func (f *fakeProcs) Children(pid int) ([]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for _, c := range f.procs {
		if !c.dead && c.ppid == pid {
			out = append(out, c.pid)
		}
	}
	return out, nil
}

type fakeStatPin struct {
	f     *fakeProcs
	pid   int
	start uint64
}

func (p *fakeStatPin) Alive() bool {
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	x := p.f.procs[p.pid]
	return x != nil && !x.dead && x.start == p.start
}

func (p *fakeStatPin) Close() error { return nil }

// world is a root supervisor (top) running an agent, with a registry and
// a tree over fake processes.
type world struct {
	t     *testing.T
	f     *fakeProcs
	reg   *Registry
	tree  *Tree
	top   int
	agent int
}

func newWorld(t *testing.T) *world {
	f := newFakeProcs()
	top := f.spawn(1, 0)
	f.setSubreaper(top)
	agent := f.spawn(top, 0)
	reg := newReg(t, cfg(`{"permission": {"*": "allow"}}`))
	return &world{t: t, f: f, reg: reg, tree: NewTree(f, reg, top, TreeOptions{}), top: top, agent: agent}
}

// nest starts an inner permwrap under parent: its keeper knocks and
// registers a node with one deny; the keeper becomes a subreaper and
// starts the command. Returns the node, the keeper and the command.
func (w *world) nest(parent int, name, deny string) (*Node, int, int) {
	w.t.Helper()
	keeper := w.f.spawn(parent, 0)
	st, _ := w.f.Stat(keeper)
	n, _, err := w.tree.Register(Peer{PID: keeper, Start: st.Start}, Spec{Name: name, Argv: []string{name},
		Config: cfg(fmt.Sprintf(`{"permission": {"*": "allow", "write": {%q: "deny"}}}`, deny))})
	if err != nil {
		w.t.Fatalf("register %s: %v", name, err)
	}
	w.f.setSubreaper(keeper)
	cmd := w.f.spawn(keeper, 0)
	return n, keeper, cmd
}

func (w *world) nodeOf(pid int) Membership {
	w.t.Helper()
	m, err := w.tree.NodeOf(pid)
	if err != nil {
		w.t.Fatalf("NodeOf(%d): %v", pid, err)
	}
	return m
}

func (w *world) mustBe(pid int, n *Node) {
	w.t.Helper()
	m := w.nodeOf(pid)
	if m.Node() != n {
		w.t.Fatalf("pid %d: in %s, want %s", pid, m.Label(), n.Label())
	}
}

func TestNoNestingNoLookup(t *testing.T) {
	w := newWorld(t)
	child := w.f.spawn(w.agent, 0)
	w.mustBe(child, w.reg.Root())
	if w.f.statCalls != 0 || w.tree.Len() != 0 {
		t.Fatalf("no node registered: no /proc read, no cache (reads %d, cached %d)", w.f.statCalls, w.tree.Len())
	}
}

func TestChildrenGrandchildrenAndCache(t *testing.T) {
	w := newWorld(t)
	n, keeper, cmd := w.nest(w.agent, "inner", "/x/**")
	w.mustBe(w.agent, w.reg.Root())
	w.mustBe(keeper, w.reg.Root()) // the keeper itself stays in its parent's node
	w.mustBe(cmd, n)
	g := w.f.spawn(cmd, 0)
	gg := w.f.spawn(g, 0)
	w.mustBe(gg, n)
	w.mustBe(g, n)
	before := w.f.statCalls
	for i := 0; i < 10; i++ {
		w.mustBe(gg, n)
	}
	if w.f.statCalls != before {
		t.Fatalf("cached lookups read /proc %d times", w.f.statCalls-before)
	}
	// A sibling of the keeper is the root's.
	w.mustBe(w.f.spawn(w.agent, 0), w.reg.Root())
}

// Issue scenario 7 at this level: a process double-forks out of the
// inner permwrap and keeps going after the inner exits; it is
// re-parented to the keeper and stays in the node, whether or not it was
// seen before.
func TestDoubleForkOrphanStaysInNode(t *testing.T) {
	w := newWorld(t)
	n, _, cmd := w.nest(w.agent, "inner", "/x/**")
	w.mustBe(cmd, n)
	mid := w.f.spawn(cmd, 0)
	daemon := w.f.spawn(mid, 0)
	late := w.f.spawn(mid, 0) // not looked up before its parents die
	w.mustBe(daemon, n)
	w.f.exit(mid)
	w.f.exit(cmd) // the inner's command is done; the keeper lives on
	w.mustBe(daemon, n)
	w.mustBe(late, n)
	w.mustBe(w.f.spawn(daemon, 0), n)
}

// The root supervisor's orphans are the root's.
func TestRootOrphans(t *testing.T) {
	w := newWorld(t)
	w.nest(w.agent, "inner", "/x/**")
	a := w.f.spawn(w.agent, 0)
	b := w.f.spawn(a, 0)
	w.f.exit(a)
	w.mustBe(b, w.reg.Root())
}

// A reused pid is never taken for the process that had it.
func TestPidReuse(t *testing.T) {
	w := newWorld(t)
	n, _, cmd := w.nest(w.agent, "inner", "/x/**")
	victim := w.f.spawn(cmd, 0)
	w.mustBe(victim, n)
	w.f.exit(victim)
	// The same pid, now a child of the root's agent.
	again := w.f.spawn(w.agent, victim)
	if again != victim {
		t.Fatal("pid not reused")
	}
	w.mustBe(again, w.reg.Root())
	// And the other way round: a root process's pid reused inside the node.
	rp := w.f.spawn(w.agent, 0)
	w.mustBe(rp, w.reg.Root())
	w.f.exit(rp)
	w.f.spawn(cmd, rp)
	w.mustBe(rp, n)
}

func TestNestedThreeDeepAndJudge(t *testing.T) {
	w := newWorld(t)
	n1, _, c1 := w.nest(w.agent, "one", "/b/**")
	n2, _, c2 := w.nest(c1, "two", "/c/**")
	n3, _, c3 := w.nest(c2, "three", "/d/**")
	w.mustBe(c3, n3)
	if n3.Parent() != n2 || n2.Parent() != n1 {
		t.Fatal("node parents")
	}
	m := w.nodeOf(w.f.spawn(c3, 0))
	for _, p := range []string{"/b/1", "/c/1", "/d/1"} {
		if v := Decide(m.Layers(), write(p)...); v.Result.Action != engine.Deny {
			t.Errorf("%s: %s", p, v)
		}
	}
	if v := Decide(w.nodeOf(c1).Layers(), write("/d/1")...); v.Result.Action != engine.Allow {
		t.Errorf("outer node must not get the inner's deny: %s", v)
	}
}

// A keeper killed while its subtree lives breaks the seal: its orphans
// go to the next subreaper, and any process first seen after that, which
// started after the keeper, beneath the node's parent, is judged by both
// candidates' chains. Processes seen before keep their exact node.
func TestKilledKeeperFailsClosed(t *testing.T) {
	w := newWorld(t)
	outer, _, oc := w.nest(w.agent, "outer", "/o/**")
	inner, ik, ic := w.nest(oc, "inner", "/i/**")
	seen := w.f.spawn(ic, 0)
	w.mustBe(seen, inner)
	unseen := w.f.spawn(ic, 0)
	unseenChild := w.f.spawn(unseen, 0)
	w.f.exit(ic)
	w.f.exit(ik)              // killed from outside: no done
	older := w.f.spawn(oc, 0) // started after the keeper: a candidate

	w.mustBe(seen, inner)
	m := w.nodeOf(unseen)
	if !m.Ambiguous() || len(m.Nodes()) != 2 {
		t.Fatalf("orphan of a broken node: %s", m.Label())
	}
	if v := DecideIn(m, write("/i/x")...); v.Result.Action != engine.Deny || !v.Ambiguous {
		t.Fatalf("the broken node's deny must still hold for its possible orphans: %s", v)
	}
	if v := Decide(m.Layers(), write("/o/x")...); v.Result.Action != engine.Deny {
		t.Fatalf("the parent's deny holds too: %s", v)
	}
	if m := w.nodeOf(unseenChild); !m.Ambiguous() {
		t.Fatalf("child of an ambiguous process: %s", m.Label())
	}
	if m := w.nodeOf(older); !m.Ambiguous() {
		t.Fatalf("a process of the parent started after the keeper cannot be told apart: %s", m.Label())
	}
	// A process that started before the inner's keeper cannot be its orphan.
	if m := w.nodeOf(oc); m.Node() != outer {
		t.Fatalf("outer's command: %s", m.Label())
	}
	// An ambiguous process cannot register a node: its parent is not known.
	ust, _ := w.f.Stat(unseen)
	if _, _, err := w.tree.Register(Peer{PID: unseen, Start: ust.Start}, Spec{Name: "x", Argv: []string{"x"}, Config: cfg(`{}`)}); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("registration from an ambiguous process: %v", err)
	}
	w.tree.Sweep()
	if inner.State() != StateAbandoned {
		t.Fatalf("state %s", inner.State())
	}
	// Abandoned nodes stay and count.
	if w.reg.Node(inner.ID()) == nil {
		t.Fatal("abandoned node removed")
	}
}

// A keeper that says done and exits: the node is removed once no process
// of it lives, and the lookups go back to costing nothing.
func TestFinishedNodeRemoved(t *testing.T) {
	w := newWorld(t)
	n, k, c := w.nest(w.agent, "inner", "/x/**")
	w.mustBe(c, n)
	if err := w.tree.KeeperDone(n); err == nil {
		t.Fatal("done with a live child must be refused")
	}
	w.f.exit(c)
	if err := w.tree.KeeperDone(n); err != nil {
		t.Fatal(err)
	}
	w.f.exit(k)
	w.tree.Sweep()
	if n.State() != StateRemoved || w.reg.Nested() {
		t.Fatalf("state %s nested %v", n.State(), w.reg.Nested())
	}
	// Processes started now are the root's, with no lookup.
	before := w.f.statCalls
	w.mustBe(w.f.spawn(w.agent, 0), w.reg.Root())
	if w.f.statCalls != before {
		t.Fatal("lookups after the last node went")
	}
}

// A finished node whose processes still live (the keeper lied, or a
// race) is not removed until they are gone.
func TestFinishedNodeWaitsForItsProcesses(t *testing.T) {
	w := newWorld(t)
	n, k, c := w.nest(w.agent, "inner", "/x/**")
	w.mustBe(c, n)
	// Move c away from the keeper (as if the keeper had not seen it) so
	// the children check passes.
	w.f.mu.Lock()
	w.f.procs[c].ppid = w.agent
	w.f.mu.Unlock()
	if err := w.tree.KeeperDone(n); err != nil {
		t.Fatal(err)
	}
	w.f.exit(k)
	w.tree.Sweep()
	if n.State() != StateFinished {
		t.Fatalf("state %s", n.State())
	}
	w.mustBe(c, n) // still judged by its node
	w.f.exit(c)
	w.tree.Sweep()
	if n.State() != StateRemoved {
		t.Fatalf("state %s", n.State())
	}
}

func TestUnknownFailsClosed(t *testing.T) {
	w := newWorld(t)
	w.nest(w.agent, "inner", "/x/**")
	// A process outside the supervised tree.
	outside := w.f.spawn(1, 0)
	if _, err := w.tree.NodeOf(outside); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("outside: %v", err)
	}
	// A process that no longer exists.
	gone := w.f.spawn(w.agent, 0)
	w.f.exit(gone)
	if _, err := w.tree.NodeOf(gone); !errors.Is(err, ErrGone) {
		t.Fatalf("gone: %v", err)
	}
	// An ancestry deeper than the bound.
	deep := w.agent
	for i := 0; i < 600; i++ {
		deep = w.f.spawn(deep, 0)
	}
	if _, err := w.tree.NodeOf(deep); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("deep: %v", err)
	}
	// A parent that started after its child (the pid was reused under a
	// stale read) is never believed.
	w2 := newWorld(t)
	w2.nest(w2.agent, "inner", "/x/**")
	p := w2.f.spawn(w2.agent, 0)
	c := w2.f.spawn(p, 0)
	w2.f.mu.Lock()
	w2.f.procs[p].start = w2.f.procs[c].start + 10
	w2.f.mu.Unlock()
	if _, err := w2.tree.NodeOf(c); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("start order: %v", err)
	}
}

func TestPlaceAndRegisterChecks(t *testing.T) {
	w := newWorld(t)
	st, _ := w.f.Stat(w.agent)
	if n, err := w.tree.Place(Peer{PID: w.agent, Start: st.Start}); err != nil || n != w.reg.Root() {
		t.Fatalf("place agent: %v %v", n, err)
	}
	if _, err := w.tree.Place(Peer{PID: w.agent, Start: st.Start + 1}); err == nil {
		t.Fatal("a peer whose start time differs is another process")
	}
	outside := w.f.spawn(1, 0)
	ost, _ := w.f.Stat(outside)
	if _, err := w.tree.Place(Peer{PID: outside, Start: ost.Start}); err == nil {
		t.Fatal("a process outside the tree was placed")
	}
	if _, _, err := w.tree.Register(Peer{PID: outside, Start: ost.Start}, Spec{Name: "x", Argv: []string{"x"}, Config: cfg(`{}`)}); err == nil {
		t.Fatal("a process outside the tree registered a node")
	}
	_, k, _ := w.nest(w.agent, "inner", "/x/**")
	kst, _ := w.f.Stat(k)
	if _, _, err := w.tree.Register(Peer{PID: k, Start: kst.Start}, Spec{Name: "again", Argv: []string{"x"}, Config: cfg(`{}`)}); err == nil {
		t.Fatal("a keeper registered a second node")
	}
}

func TestConcurrentLookups(t *testing.T) {
	w := newWorld(t)
	n, _, c := w.nest(w.agent, "inner", "/x/**")
	var pids []int
	for i := 0; i < 50; i++ {
		pids = append(pids, w.f.spawn(c, 0))
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, p := range pids {
				m, err := w.tree.NodeOf(p)
				if err != nil || m.Node() != n {
					t.Errorf("pid %d: %v %v", p, m.Label(), err)
				}
			}
			w.tree.Sweep()
		}()
	}
	wg.Wait()
}
