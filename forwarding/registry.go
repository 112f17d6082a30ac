package forwarding

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/permwrap/permwrap/engine"
)

// NodeID names a node within one tree. The root is 0; ids are never
// reused while the root runs.
type NodeID uint32

// RootID is the root node's id.
const RootID NodeID = 0

const rootName = "root"

// NodeState is where a node is in its life.
type NodeState uint32

const (
	// StateActive: the keeper lives; its subtree is sealed beneath it.
	StateActive NodeState = iota
	// StateFinished: the keeper said its subtree was empty and exited.
	// The node goes once no process of it is left.
	StateFinished
	// StateAbandoned: the keeper died without saying so. Processes of
	// the node may have been re-parented above it, so any process first
	// seen after that could be one of them (see Tree). The node stays
	// until the root exits.
	StateAbandoned
	// StateRemoved: gone from the registry.
	StateRemoved
)

var stateNames = [...]string{"active", "finished", "abandoned", "removed"}

func (s NodeState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Peer identifies one process instance: its pid and its start time (in
// clock ticks since boot, /proc/PID/stat field 22), so a reused pid is
// never mistaken for it.
type Peer struct {
	PID   int
	Start uint64
}

func (p Peer) String() string { return fmt.Sprintf("pid %d (start %d)", p.PID, p.Start) }

// Node is one permwrap in the tree: the root, or an inner permwrap that
// registered. Its fields are fixed at registration; its state and session
// approvals change under the registry's lock.
type Node struct {
	id     NodeID
	name   string
	parent *Node
	depth  int
	argv   []string
	cfg    engine.Config
	own    *engine.Policy // this node's policy as compiled by the root (for explain)
	// layers[i] judges this node's subtree with the policy of chain node
	// i (root first, this node last).
	layers  []Layer
	keeper  Peer
	wantLog bool

	state     atomic.Uint32
	doneSaid  atomic.Bool
	keeperPin atomic.Pointer[pinBox] // nil for the root and until Tree.Bind

	// under Registry.mu
	children  []*Node
	approvals []approval
}

type approval struct {
	surface engine.Surface
	pattern string
}

// ID is the node's id.
func (n *Node) ID() NodeID { return n.id }

// Name is the node's name (--name, default the command's base name).
func (n *Node) Name() string { return n.name }

// Label is how logs and prompts name the node: "root" or "name#id".
func (n *Node) Label() string {
	if n == nil {
		return "?"
	}
	if n.id == RootID && n.parent == nil {
		return n.name
	}
	return n.name + "#" + strconv.FormatUint(uint64(n.id), 10)
}

// Path is the labels from the root to the node: "root/pi#1/reviewer#3".
func (n *Node) Path() string {
	var parts []string
	for x := n; x != nil; x = x.parent {
		parts = append(parts, x.Label())
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, "/")
}

// Parent is the node the node's keeper was in; nil for the root.
func (n *Node) Parent() *Node { return n.parent }

// Depth is 0 for the root.
func (n *Node) Depth() int { return n.depth }

// IsRoot reports whether n is the root node.
func (n *Node) IsRoot() bool { return n.parent == nil }

// Argv is the command the node runs (for prompts).
func (n *Node) Argv() []string { return append([]string(nil), n.argv...) }

// Env is what the node's patterns were expanded with.
func (n *Node) Env() engine.Env { return n.cfg.Env }

// Policy is the node's own policy, compiled by the root.
func (n *Node) Policy() *engine.Policy { return n.own }

// Layers are the policies that judge the node's subtree, root first.
// The slice is shared: do not modify it.
func (n *Node) Layers() []Layer { return n.layers }

// Keeper is the process that registered the node; its children (and
// their descendants) are the node's subtree.
func (n *Node) Keeper() Peer { return n.keeper }

// WantsLog reports whether the inner permwrap asked for its subtree's
// review-log records.
func (n *Node) WantsLog() bool { return n.wantLog }

// State is where the node is in its life.
func (n *Node) State() NodeState { return NodeState(n.state.Load()) }

// Beneath reports whether n is a strict descendant of a.
func (n *Node) Beneath(a *Node) bool {
	for x := n.parent; x != nil; x = x.parent {
		if x == a {
			return true
		}
	}
	return false
}

// Chain is the nodes from the root to n.
func (n *Node) Chain() []*Node {
	out := make([]*Node, n.depth+1)
	for x := n; x != nil; x = x.parent {
		out[x.depth] = x
	}
	return out
}

type pinBox struct{ Pin }

func (n *Node) setKeeperPin(p Pin) { n.keeperPin.Store(&pinBox{p}) }

// keeperGone reports whether the node's keeper has exited. A node whose
// keeper was never bound counts as gone: nothing seals its subtree.
func (n *Node) keeperGone() bool {
	b := n.keeperPin.Load()
	return b == nil || !b.Alive()
}

// sealBroken reports whether processes of the node may have been
// re-parented above it: the keeper is gone without having said its
// subtree was empty.
func (n *Node) sealBroken() bool {
	switch n.State() {
	case StateAbandoned:
		return true
	case StateActive:
		return n.keeperGone() && !n.doneSaid.Load()
	}
	return false
}

// Spec is what an inner permwrap asks to register.
type Spec struct {
	Name    string
	Argv    []string
	Config  engine.Config
	WantLog bool
}

// SpecOf is the Spec a validated Register message asks for.
func SpecOf(m Register) Spec {
	return Spec{Name: m.Name, Argv: append([]string(nil), m.Argv...), Config: m.EngineConfig(), WantLog: m.Log}
}

// RegistryOptions bound and check registrations.
type RegistryOptions struct {
	// MaxNodes bounds the nodes alive at once (the root not counted;
	// abandoned nodes count until the root exits). 0 means 64.
	MaxNodes int
	// MaxDepth bounds nesting (the root is depth 0). 0 means 16.
	MaxDepth int
	// Enforceable says whether the root can enforce a node's policy at
	// all: a root whose filter lets plain reads through unseen cannot
	// enforce a node's read rules. nil accepts every policy.
	Enforceable func(*engine.Policy) error
}

// Registry holds the tree's nodes and their policies.
type Registry struct {
	opts   RegistryOptions
	root   *Node
	mu     sync.Mutex
	nodes  map[NodeID]*Node // registered, not removed (root excluded)
	nextID NodeID
	nested atomic.Int32 // len(nodes)
}

// RefusedError is a registration the root refuses, with the reason the
// inner permwrap prints.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "registration refused: " + e.Reason }

func refuse(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// NewRegistry makes the registry of a root whose configuration is cfg.
// policy is the root's compiled policy (the one the supervisor already
// judges with); nil compiles cfg. Nested nodes get their own instances of
// every ancestor's policy, compiled from the same configuration, so a
// session approval scoped to a subtree stays in it.
func NewRegistry(cfg engine.Config, policy *engine.Policy, opts RegistryOptions) (*Registry, error) {
	if opts.MaxNodes <= 0 {
		opts.MaxNodes = 64
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = 16
	}
	if policy == nil {
		p, _, err := engine.Compile(cfg)
		if err != nil {
			return nil, err
		}
		policy = p
	}
	root := &Node{id: RootID, name: rootName, cfg: cfg, own: policy}
	root.layers = []Layer{{Node: root, Policy: policy}}
	return &Registry{opts: opts, root: root, nodes: map[NodeID]*Node{}, nextID: 1}, nil
}

// Root is the root node.
func (r *Registry) Root() *Node { return r.root }

// Nested reports whether any node besides the root exists: until one
// does, every process is the root's and nothing needs to be looked up.
func (r *Registry) Nested() bool { return r.nested.Load() > 0 }

// Node returns a registered node by id (the root for RootID), or nil.
func (r *Registry) Node(id NodeID) *Node {
	if id == RootID {
		return r.root
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nodes[id]
}

// Nodes lists the registered nodes (root excluded) by id.
func (r *Registry) Nodes() []*Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Node, 0, len(r.nodes))
	for id := NodeID(1); id < r.nextID; id++ {
		if n, ok := r.nodes[id]; ok {
			out = append(out, n)
		}
	}
	return out
}

// Register creates a node, child of parent, for the process keeper. The
// policy is compiled here, with the root's engine: nothing the inner
// permwrap says about its configuration is believed, and whatever it
// holds can only add layers, never remove one. Errors are
// *RefusedError (limits, an uncompilable or unenforceable policy) with a
// reason for the inner permwrap to print.
//
// keeperPin watches the keeper: while it runs the node's subtree is sealed
// beneath it. Tree.Register supplies it; nil means the caller has no way
// to watch the keeper, and the node counts as unsealed from the start.
func (r *Registry) Register(parent *Node, spec Spec, keeper Peer, keeperPin Pin) (*Node, []engine.Warning, error) {
	if parent == nil {
		return nil, nil, refuse("no parent node")
	}
	if !ValidName(spec.Name) {
		return nil, nil, refuse("invalid node name %q", spec.Name)
	}
	if len(spec.Argv) == 0 {
		return nil, nil, refuse("no command")
	}
	if keeper.PID <= 0 {
		return nil, nil, refuse("no keeper process")
	}
	if st := parent.State(); st == StateFinished || st == StateRemoved {
		return nil, nil, refuse("parent node %s is %s", parent.Label(), st)
	}
	if parent.depth+1 > r.opts.MaxDepth {
		return nil, nil, refuse("nesting deeper than %d levels", r.opts.MaxDepth)
	}
	// Cheap checks first, compile outside the lock, then check again.
	r.mu.Lock()
	full := len(r.nodes) >= r.opts.MaxNodes
	r.mu.Unlock()
	if full {
		return nil, nil, refuse("this permwrap already has %d nested nodes", r.opts.MaxNodes)
	}

	// The node's own policy, and a copy of each ancestor's for its
	// layers (each node's copies carry the session rules of its own
	// subtree), are compiled side by side: a few milliseconds each, on
	// the path of every nested start.
	chain := parent.Chain()
	compiled := make([]*engine.Policy, len(chain))
	errs := make([]error, len(chain))
	var wg sync.WaitGroup
	for i, a := range chain {
		wg.Add(1)
		go func() {
			defer wg.Done()
			compiled[i], _, errs[i] = engine.Compile(a.cfg)
		}()
	}
	own, warns, err := engine.Compile(spec.Config)
	wg.Wait()
	if err != nil {
		return nil, nil, refuse("the node's configuration does not compile here: %s", summarize(err, 3))
	}
	if r.opts.Enforceable != nil {
		if err := r.opts.Enforceable(own); err != nil {
			return nil, nil, refuse("%v", err)
		}
	}
	layers := make([]Layer, 0, len(chain)+1)
	for i, a := range chain {
		if errs[i] != nil {
			// It compiled when a was registered; the engine is the same.
			return nil, nil, refuse("internal: re-compiling %s's policy: %v", a.Label(), errs[i])
		}
		layers = append(layers, Layer{Node: a, Policy: compiled[i]})
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.nodes) >= r.opts.MaxNodes {
		return nil, nil, refuse("this permwrap already has %d nested nodes", r.opts.MaxNodes)
	}
	if st := parent.State(); st == StateFinished || st == StateRemoved {
		return nil, nil, refuse("parent node %s is %s", parent.Label(), st)
	}
	n := &Node{
		id:      r.nextID,
		name:    spec.Name,
		parent:  parent,
		depth:   parent.depth + 1,
		argv:    append([]string(nil), spec.Argv...),
		cfg:     spec.Config,
		own:     own,
		keeper:  keeper,
		wantLog: spec.WantLog,
	}
	if keeperPin != nil {
		n.setKeeperPin(keeperPin)
	}
	layers = append(layers, Layer{Node: n, Policy: own})
	n.layers = layers
	// Approvals given earlier at an ancestor a hold for a's whole subtree,
	// this new node included, in the layers from the root to a.
	for i, a := range chain {
		for _, ap := range a.approvals {
			for j := 0; j <= i; j++ {
				if _, err := layers[j].Policy.AddSessionRule(ap.surface, ap.pattern); err != nil {
					return nil, nil, refuse("internal: carrying session approval %s:%s into the node: %v", ap.surface, ap.pattern, err)
				}
			}
		}
	}
	r.nextID++
	r.nodes[n.id] = n
	parent.children = append(parent.children, n)
	r.nested.Store(int32(len(r.nodes)))
	return n, warns, nil
}

// AddSessionRule records a person's "allow for this session" given for an
// ask from node a's subtree. It lifts asks of the layers from the root to
// a, for processes of a's subtree only: a sibling, the root's own
// processes and a's ancestors are not affected, and a node beneath a
// still keeps its own asks. It never lifts a deny (engine semantics).
func (r *Registry) AddSessionRule(a *Node, s engine.Surface, pattern string) (engine.Rule, error) {
	return r.addSession(a, s, pattern, false)
}

// AddSessionDeny is AddSessionRule for an "always deny" given at node a:
// a deny session rule in the same layers (the strictest layer wins, so
// one would do; every layer keeps explain's answer the same wherever it
// is asked).
func (r *Registry) AddSessionDeny(a *Node, s engine.Surface, pattern string) (engine.Rule, error) {
	return r.addSession(a, s, pattern, true)
}

func (r *Registry) addSession(a *Node, s engine.Surface, pattern string, deny bool) (engine.Rule, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var rule engine.Rule
	var first error
	depth := a.depth
	var walk func(x *Node)
	walk = func(x *Node) {
		for j := 0; j <= depth && j < len(x.layers); j++ {
			add := x.layers[j].Policy.AddSessionRule
			if deny {
				add = x.layers[j].Policy.AddSessionDeny
			}
			rl, err := add(s, pattern)
			if err != nil && first == nil {
				first = err
			}
			if x == a && j == depth {
				rule = rl
			}
		}
		for _, c := range x.children {
			walk(c)
		}
	}
	walk(a)
	if first != nil {
		return engine.Rule{}, first
	}
	if !deny {
		a.approvals = append(a.approvals, approval{surface: s, pattern: pattern})
	}
	return rule, nil
}

// SessionApprovals lists the approvals given at node a, in order.
func (r *Registry) SessionApprovals(a *Node) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(a.approvals))
	for _, ap := range a.approvals {
		out = append(out, ap.surface.String()+":"+ap.pattern)
	}
	return out
}

// discard removes a node that was registered but never bound to its
// keeper (so no process can be in it).
func (r *Registry) discard(n *Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(n)
	r.nested.Store(int32(len(r.nodes)))
}

func (r *Registry) removeLocked(n *Node) {
	n.state.Store(uint32(StateRemoved))
	if b := n.keeperPin.Swap(nil); b != nil {
		b.Close()
	}
	delete(r.nodes, n.id)
	if p := n.parent; p != nil {
		for i, c := range p.children {
			if c == n {
				p.children = append(p.children[:i:i], p.children[i+1:]...)
				break
			}
		}
	}
}

// summarize renders at most max of the errors joined in err.
func summarize(err error, max int) string {
	var errs []error
	var flatten func(error)
	flatten = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				flatten(x)
			}
			return
		}
		// A wrapped join arrives as one error whose text has a line per
		// problem: count those lines as problems too.
		for _, line := range strings.Split(e.Error(), "\n") {
			errs = append(errs, errors.New(line))
		}
	}
	flatten(err)
	var parts []string
	for i, e := range errs {
		if i == max {
			parts = append(parts, fmt.Sprintf("(and %d more)", len(errs)-max))
			break
		}
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}

// ErrNotKeeper is a Done from a connection that does not belong to an
// active node.
var ErrNotKeeper = errors.New("forwarding: not an active node's keeper")

// keeperDone records that n's keeper said its subtree is empty.
func (r *Registry) keeperDone(n *Node) error {
	if n == nil || n.State() != StateActive {
		return ErrNotKeeper
	}
	n.doneSaid.Store(true)
	return nil
}

// settle moves nodes whose keeper is gone to finished or abandoned, and
// removes finished nodes that no live process belongs to (live, from the
// tree's sweep) and that have no node beneath them. It reports whether
// nodes remain that a later sweep may settle.
func (r *Registry) settle(live map[*Node]bool) (pending bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.nodes {
		if n.State() == StateActive && n.keeperGone() {
			if n.doneSaid.Load() {
				n.state.Store(uint32(StateFinished))
			} else {
				n.state.Store(uint32(StateAbandoned))
			}
		}
	}
	// A keeper that said its subtree was empty had no descendants left:
	// nodes beneath it whose own keeper vanished left nothing behind.
	for _, n := range r.nodes {
		if n.State() != StateAbandoned {
			continue
		}
		for a := n.parent; a != nil; a = a.parent {
			if a.State() == StateFinished {
				n.state.Store(uint32(StateFinished))
				break
			}
		}
	}
	// Remove deepest first so a parent can follow its last child.
	for changed := true; changed; {
		changed = false
		for _, n := range r.nodes {
			if n.State() != StateFinished || live[n] || len(n.children) > 0 {
				continue
			}
			r.removeLocked(n)
			changed = true
		}
	}
	r.nested.Store(int32(len(r.nodes)))
	for _, n := range r.nodes {
		if n.State() == StateActive || n.State() == StateFinished {
			pending = true
		}
	}
	return pending
}

// brokenBeneath returns the nodes strictly beneath any of base whose seal
// is broken (keeper gone without an empty subtree) and whose keeper
// started no later than start: a process started at start and first seen
// now could be a re-parented member of one of them.
func (r *Registry) brokenBeneath(base []*Node, start uint64) []*Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Node
	for _, n := range r.nodes {
		if n.keeper.Start > start || !n.sealBroken() {
			continue
		}
		for _, b := range base {
			if n.Beneath(b) {
				out = append(out, n)
				break
			}
		}
	}
	return out
}
