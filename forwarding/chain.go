package forwarding

import (
	"fmt"

	"github.com/permwrap/permwrap/engine"
)

// A Layer is one policy of a chain: the node that wrote it and the
// instance that judges with it. Instances are per (node judged, layer):
// a session approval given for one node's subtree lives only in that
// subtree's instances.
type Layer struct {
	Node   *Node
	Policy *engine.Policy
}

// LayerResult is one layer's answer.
type LayerResult struct {
	Node   *Node
	Result engine.Result
}

// Verdict is a decision over a chain of policies: the combined answer,
// the layer that gave it, and every layer's answer (root first).
type Verdict struct {
	Result engine.Result
	// Decider is the node whose policy gave Result: the most restrictive
	// answer; among equal actions a human-only one; among those the layer
	// nearest the root.
	Decider *Node
	Layers  []LayerResult
	// Ambiguous is set when the process could belong to more than one
	// node (see Tree): every candidate's chain was consulted. Nothing
	// decided for it may become a session approval.
	Ambiguous bool
}

// valid reports whether r is an answer at all; anything else is treated
// as a deny (an engine result with no action would otherwise rank below
// allow).
func valid(r engine.Result) bool {
	return r.Action == engine.Allow || r.Action == engine.Ask || r.Action == engine.Deny
}

// undecided is the answer for a layer that gave none.
func undecided(r engine.Result) engine.Result {
	return engine.Result{Action: engine.Deny, Check: r.Check, Layer: engine.LayerBuiltin,
		Rule: engine.Rule{Surface: r.Check.Surface, Action: engine.Deny, Origin: engine.OriginBuiltin,
			Reason: "a nested policy layer gave no answer"}}
}

// Judge asks every layer with judge and combines the answers
// most-restrictive-wins (deny > ask > allow). It returns the deciding
// layer's own value (an exec decision keeps its units and decider) and
// the verdict. A layer replaces the answer so far only when it is
// stricter (engine.Result.Stricter: the action, then who may approve an
// ask); an equal later layer never does, so the outermost layer names an
// answer several layers share. With no layers it denies: there is
// nothing to judge by.
func Judge[T any](layers []Layer, judge func(*engine.Policy) T, result func(T) engine.Result) (T, Verdict) {
	var best T
	var v Verdict
	if len(layers) == 0 {
		v.Result = undecided(engine.Result{})
		return best, v
	}
	v.Layers = make([]LayerResult, 0, len(layers))
	for i, l := range layers {
		x := judge(l.Policy)
		r := result(x)
		if !valid(r) {
			r = undecided(r)
		}
		v.Layers = append(v.Layers, LayerResult{Node: l.Node, Result: r})
		if i == 0 || r.Stricter(v.Result) {
			best, v.Result, v.Decider = x, r, l.Node
		}
	}
	return best, v
}

// Strictest is Judge without the record of every layer's answer: the
// deciding layer's value only, for the hot path (the supervisor judges
// every notification of a nested subtree with it). It combines exactly
// as Judge does.
func Strictest[T any](layers []Layer, judge func(*engine.Policy) T, result func(T) engine.Result) T {
	var best T
	var bestR engine.Result
	if len(layers) == 0 {
		return best
	}
	for i, l := range layers {
		x := judge(l.Policy)
		r := result(x)
		if !valid(r) {
			return x // a layer with no answer: the caller's result() of it is not an allow
		}
		if i == 0 || r.Stricter(bestR) {
			best, bestR = x, r
		}
	}
	return best
}

// OfflineChain builds a chain from configurations, root first, for
// `permwrap explain --node` without a running root: node i is the child
// of node i-1. Names label the layers ("root" for the first when empty).
func OfflineChain(names []string, cfgs []engine.Config) ([]Layer, []engine.Warning, error) {
	if len(cfgs) == 0 {
		return nil, nil, fmt.Errorf("forwarding: no configuration")
	}
	var layers []Layer
	var warns []engine.Warning
	var parent *Node
	for i, cfg := range cfgs {
		p, w, err := engine.Compile(cfg)
		if err != nil {
			return nil, nil, err
		}
		warns = append(warns, w...)
		name := ""
		if i < len(names) {
			name = names[i]
		}
		if name == "" {
			if i == 0 {
				name = rootName
			} else {
				name = fmt.Sprintf("node%d", i)
			}
		}
		n := &Node{id: NodeID(i), name: name, parent: parent, own: p, cfg: cfg}
		if parent != nil {
			n.depth = parent.depth + 1
		}
		layers = append(layers, Layer{Node: n, Policy: p})
		parent = n
	}
	return layers, warns, nil
}
