package engine

import (
	"strings"
)

// moveNFA is a whole pattern as an automaton over the whole value
// (literal prefix and suffix included), for the search beneath a moved
// directory. It is built once per pattern, when first needed.
type moveNFA struct {
	elems    []elem
	classes  []byteSet
	words    int
	basename bool     // matches the last component: restarts at each '/'
	live     []uint64 // states from which the accepting state is reachable
}

func newMoveNFA(pattern string, basename bool) *moveNFA {
	elems, classes, _, _, err := parseGlob(pattern)
	if err != nil {
		return nil // compiled before, so it does not happen
	}
	a := &moveNFA{elems: elems, classes: classes, words: (len(elems)+1)/64 + 1, basename: basename}
	n := len(elems)
	a.live = make([]uint64, a.words)
	set(a.live, n)
	// Edges go forward only (and stars loop), so one backward pass finds
	// every state that can still reach the end.
	for i := n - 1; i >= 0; i-- {
		e := &elems[i]
		ok := false
		switch e.kind {
		case elEps:
			ok = has(a.live, i+1) || has(a.live, int(e.skip))
		case elClass:
			c := a.classes[e.class]
			ok = has(a.live, i+1) && classUsable(&c)
		default:
			ok = has(a.live, i+1)
		}
		if ok {
			set(a.live, i)
		}
	}
	return a
}

func classUsable(c *byteSet) bool {
	for b := 1; b < 256; b++ {
		if b != '/' && c.has(byte(b)) {
			return true
		}
	}
	return false
}

func (a *moveNFA) start() []uint64 {
	s := make([]uint64, a.words)
	addClosure(a.elems, s, 0)
	return s
}

// stepInto writes the set after consuming c into dst and reports whether
// it can still lead to a match.
func (a *moveNFA) stepInto(dst, cur []uint64, c byte) bool {
	clear(dst)
	if a.basename && c == '/' {
		addClosure(a.elems, dst, 0)
		return true
	}
	return cur != nil && stepStates(a.elems, a.classes, dst, cur, c) && a.alive(dst)
}

func (a *moveNFA) run(s string) []uint64 {
	cur, next := a.start(), make([]uint64, a.words)
	for i := 0; i < len(s); i++ {
		if !a.stepInto(next, cur, s[i]) {
			return nil
		}
		cur, next = next, cur
	}
	return cur
}

func (a *moveNFA) accepts(s []uint64) bool { return s != nil && has(s, len(a.elems)) }

func (a *moveNFA) alive(s []uint64) bool {
	for i, w := range s {
		if w&a.live[i] != 0 {
			return true
		}
	}
	return false
}

func sameSet(a, b []uint64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// moveAutomata returns the automata of a path pattern for the move
// search: the pattern itself and, for `X/**`, X. nil for a pattern that
// matches everything.
func (pp *pathPattern) moveAutomata() []*moveNFA {
	pp.moveOnce.Do(func() {
		if pp.anyValue {
			return
		}
		pp.moveNFAs = append(pp.moveNFAs, newMoveNFA(pp.expanded, pp.basename))
		if pp.self != nil {
			pp.moveNFAs = append(pp.moveNFAs, newMoveNFA(pp.expanded[:len(pp.expanded)-3], false))
		}
	})
	return pp.moveNFAs
}

// byteClasses partitions the bytes 1..255 by how every automaton treats
// them and returns one readable representative per class.
func byteClasses(slots []moveSlot) []byte {
	const prefer = "abcdefghijklmnopqrstuvwxyz0123456789._-ABCDEFGHIJKLMNOPQRSTUVWXYZ/"
	var lits [256]bool
	lits['/'], lits['.'] = true, true // they shape components
	classes := false
	for _, sl := range slots {
		for _, e := range sl.a.elems {
			switch e.kind {
			case elLit:
				lits[e.c] = true
			case elClass:
				classes = true
			}
		}
	}
	if !classes {
		// Without [...] classes every byte that is no literal anywhere
		// behaves the same: one representative stands for them all.
		var out []byte
		other := byte(0)
		for b := 1; b < 256; b++ {
			if lits[b] {
				out = append(out, byte(b))
			}
		}
		for i := 0; i < len(prefer); i++ {
			if !lits[prefer[i]] {
				other = prefer[i]
				break
			}
		}
		for b := 1; other == 0 && b < 256; b++ {
			if !lits[b] {
				other = byte(b)
			}
		}
		if other != 0 {
			out = append(out, other)
		}
		return out
	}
	sigs := map[string]byte{}
	var order []string
	sig := make([]byte, 0, 64)
	bytesInOrder := []byte(prefer)
	for b := 1; b < 256; b++ {
		if strings.IndexByte(prefer, byte(b)) < 0 {
			bytesInOrder = append(bytesInOrder, byte(b))
		}
	}
	for _, c := range bytesInOrder {
		sig = sig[:0]
		sig = append(sig, b2(c == '/'), b2(c == '.'))
		for _, sl := range slots {
			for _, e := range sl.a.elems {
				switch e.kind {
				case elLit:
					sig = append(sig, b2(c == e.c))
				case elClass:
					sig = append(sig, b2(sl.a.classes[e.class].has(c)))
				}
			}
		}
		if _, ok := sigs[string(sig)]; !ok {
			k := string(sig)
			sigs[k] = c
			order = append(order, k)
		}
	}
	out := make([]byte, 0, len(order))
	for _, k := range order {
		out = append(out, sigs[k])
	}
	return out
}

func b2(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func writeSet(b *strings.Builder, s []uint64) {
	if s == nil {
		b.WriteByte(0)
		return
	}
	b.WriteByte(1)
	for _, w := range s {
		for k := 0; k < 8; k++ {
			b.WriteByte(byte(w >> (8 * k)))
		}
	}
}

// stepScratch steps cur by c into buf and returns buf, or nil for the
// empty set.
func stepScratch(a *moveNFA, buf, cur []uint64, c byte) []uint64 {
	if cur == nil && !(a.basename && c == '/') {
		return nil
	}
	if !a.stepInto(buf, cur, c) {
		return nil
	}
	return buf
}

// slotDFA is one automaton of a search followed as a DFA: its state sets
// interned (id 0 is the empty set), their acceptance, and the steps
// computed so far (-1: not yet).
type slotDFA struct {
	a       *moveNFA
	classes int
	sets    [][]uint64
	acc     []bool
	idx     map[string]int32
	next    []int32 // next[id*classes+class]
	buf     []uint64
}

func (d *slotDFA) init(a *moveNFA, classes int) {
	d.a, d.classes = a, classes
	d.idx = map[string]int32{}
	d.buf = make([]uint64, a.words)
	d.sets = [][]uint64{nil}
	d.acc = []bool{false}
	d.next = make([]int32, classes)
	for i := range d.next {
		d.next[i] = -1
	}
}

// intern returns the id of the state set st (nil: the empty set).
func (d *slotDFA) intern(st []uint64) int32 {
	if st == nil {
		return 0
	}
	var kb strings.Builder
	writeSet(&kb, st)
	k := kb.String()
	if id, ok := d.idx[k]; ok {
		return id
	}
	id := int32(len(d.sets))
	d.idx[k] = id
	d.sets = append(d.sets, append([]uint64(nil), st...))
	d.acc = append(d.acc, d.a.accepts(st))
	for range d.classes {
		d.next = append(d.next, -1)
	}
	return id
}

// step is the id after the set id reads c (class ci).
func (d *slotDFA) step(id int32, ci int, c byte) int32 {
	k := int(id)*d.classes + ci
	if n := d.next[k]; n >= 0 {
		return n
	}
	n := d.intern(stepScratch(d.a, d.buf, d.sets[id], c))
	d.next[k] = n
	return n
}
