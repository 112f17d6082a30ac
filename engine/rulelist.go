package engine

import (
	"sort"
	"strings"

	"github.com/permwrap/permwrap/engine/shell"
)

// compiledRule is a Rule with its matcher.
type compiledRule struct {
	Rule
	path  *pathPattern
	bash  *bashPattern
	net   *netPattern
	spec  specificity
	order int // declaration order across composed files; later wins ties
}

func (r *compiledRule) match(v string) bool {
	switch {
	case r.bash != nil:
		return r.bash.match(v)
	case r.net != nil:
		return r.net.matchValue(v)
	}
	return r.path.match(v)
}

func (r *compiledRule) exactKey() (string, bool) {
	if r.net != nil {
		return "", false // a net value has several spellings of the same host
	}
	if r.bash != nil {
		if r.bash.spec.exact {
			return r.bash.segs[0], true
		}
		return "", false
	}
	if r.path.exact {
		// The literal path, unescaped: `/a/\[1\]` names "/a/[1]".
		return r.path.main.prefix, true
	}
	return "", false
}

// beats reports whether r wins over o when both match.
func (r *compiledRule) beats(o *compiledRule) bool {
	if r.net != nil && o.net != nil {
		if netMoreSpecific(r.net, o.net) {
			return true
		}
		if netMoreSpecific(o.net, r.net) {
			return false
		}
		return r.order > o.order
	}
	if r.spec != o.spec {
		return r.spec.moreSpecific(o.spec)
	}
	return r.order > o.order
}

// namesOptions reports whether r is a command rule that names an option.
func (r *compiledRule) namesOptions() bool {
	return r.bash != nil && r.bash.opt != nil && r.bash.opt.Options() > 0
}

// cmdCompare orders two rules that match one command (docs/bash-rules.md
// §2.2): +1 when r is the more specific, -1 when o is, 0 when neither
// is, and then the most restrictive of the two wins. An exact rule is
// the more specific. When either names an option, a rule is the more
// specific only when it names everything the other names and more (its
// options, and at least as many characters of operands): `git push
// origin *` and `git push --force*` name different things, so the
// stricter decides; `git push --dry-run *` names more than `git push *`.
// Otherwise the usual order (more literal characters, fewer stars,
// longer) decides, with 0 for equals.
func cmdCompare(r, o *compiledRule) int {
	if r.spec.exact != o.spec.exact {
		if r.spec.exact {
			return 1
		}
		return -1
	}
	if (r.namesOptions() || o.namesOptions()) && r.bash != nil && o.bash != nil && r.bash.opt != nil && o.bash.opt != nil {
		if c := r.bash.opt.Compare(o.bash.opt); c != 0 || !r.bash.opt.Same(o.bash.opt) {
			return c
		}
	}
	switch {
	case r.spec == o.spec:
		return 0
	case r.spec.moreSpecific(o.spec):
		return 1
	}
	return -1
}

// pickCommandRule chooses among the rules that match one command: of
// those no other is more specific than (cmdCompare), the most
// restrictive; among equals, the one the usual order puts first.
func pickCommandRule(matches []*compiledRule) *compiledRule {
	var best *compiledRule
	for i, r := range matches {
		dominated := false
		for j, o := range matches {
			if i != j && cmdCompare(o, r) > 0 {
				dominated = true
				break
			}
		}
		if dominated {
			continue
		}
		if best == nil || r.Action > best.Action || r.Action == best.Action && r.beats(best) {
			best = r
		}
	}
	if best == nil {
		// No rule stands above the others: the most restrictive.
		for _, r := range matches {
			if best == nil || r.Action > best.Action || r.Action == best.Action && r.beats(best) {
				best = r
			}
		}
	}
	return best
}

// ruleList holds one layer's rules for one surface, ready for
// first-match evaluation: exact patterns in a map, the rest sorted most
// specific first.
type ruleList struct {
	exact map[string]*compiledRule
	// optExact are the exact command patterns that also match option
	// readings (`rm -rf /` meets `rm -r -f /`), which the map cannot find.
	optExact []*compiledRule
	rules    []listEntry
	index    *ruleIndex
	n        int
}

// each calls f for every rule of the list: the exact ones (in map order),
// then the patterns in list order.
func (l *ruleList) each(f func(*compiledRule)) {
	for _, r := range l.exact {
		f(r)
	}
	for _, e := range l.rules {
		f(e.r)
	}
}

// listEntry keeps what rejects most rules (a literal prefix and suffix
// compared with the value, or its last component) next to the rule, so
// the scan over a surface's rules stays in cache and out of calls.
type listEntry struct {
	prefix, suffix string
	basename       bool
	// anchor is the directory every matching value lies in or is, with
	// a trailing '/', for the index; "" when the rule may match anywhere.
	anchor string
	r      *compiledRule
}

func entryFor(r *compiledRule) listEntry {
	e := listEntry{r: r}
	switch {
	case r.net != nil:
		// Net rules are few; each is tried on the parsed value.
	case r.bash != nil:
		e.prefix = r.bash.segs[0]
		if r.bash.short == nil {
			e.suffix = r.bash.segs[len(r.bash.segs)-1]
		} else {
			// `git push *` also matches `git push`.
			e.prefix = r.bash.short[0]
		}
	case r.path.anyValue:
	default:
		e.prefix, e.suffix, e.basename = r.path.main.prefix, r.path.main.suffix, r.path.basename
		if r.path.self != nil {
			// `X/**` also matches X, which lacks the suffix; the prefix
			// of X is a prefix of the pattern's, so use X's.
			e.prefix, e.suffix = r.path.self.prefix, ""
		}
		if !e.basename && strings.HasPrefix(e.prefix, "/") {
			e.anchor = e.prefix[:strings.LastIndexByte(e.prefix, '/')+1]
			if r.path.self != nil && r.path.self.mid == nil {
				// A literal X: every match is X or beneath it.
				e.anchor = r.path.self.prefix + "/"
			}
		}
	}
	return e
}

// quickReject reports whether the entry surely does not match v (whose
// last component is base).
func (e *listEntry) quickReject(v, base string) bool {
	if e.basename {
		v = base
	}
	return len(v) < len(e.prefix)+len(e.suffix) ||
		v[:len(e.prefix)] != e.prefix ||
		v[len(v)-len(e.suffix):] != e.suffix
}

func newRuleList(rules []*compiledRule) ruleList {
	var l ruleList
	for _, r := range rules {
		l.n++
		if k, ok := r.exactKey(); ok {
			if l.exact == nil {
				l.exact = make(map[string]*compiledRule)
			}
			if old, dup := l.exact[k]; !dup || r.order > old.order {
				l.exact[k] = r
			}
			if r.bash != nil && r.bash.opt != nil {
				l.optExact = append(l.optExact, r)
			}
			continue
		}
		l.rules = append(l.rules, entryFor(r))
	}
	sort.SliceStable(l.rules, func(i, j int) bool { return l.rules[i].r.beats(l.rules[j].r) })
	l.buildIndex()
	return l
}

// ruleIndex narrows a surface's sorted rules to those that can match a
// value, so evaluation cost follows the value, not the policy's size.
// Path rules hang in a trie of the directories their literal prefix
// names (`~/.ssh/**` under home → u → .ssh's parent, `*.pem` at the
// root); a value visits only the nodes along its own directories. Command
// rules whose literal prefix holds a whole first word are bucketed by
// it. Each list keeps the global specificity order (indexes ascend), so
// the best match is the smallest index found.
type ruleIndex struct {
	root trieNode // path rules
	// Basename rules with a literal suffix, by the suffix's last byte:
	// `*.pem`, `*.key`, `.env` are rarely all candidates at once.
	byLast map[byte][]int32
	byWord map[string][]int32 // bash rules with a known first word
	any    []int32            // bash rules without one; every net rule
	bash   bool
	net    bool
}

type trieNode struct {
	children map[string]*trieNode
	idx      []int32
}

func (l *ruleList) buildIndex() {
	if len(l.rules) == 0 {
		return
	}
	l.index = &ruleIndex{}
	ix := l.index
	for i := range l.rules {
		e := &l.rules[i]
		if e.r.net != nil {
			ix.net = true
			ix.any = append(ix.any, int32(i))
			continue
		}
		if e.r.bash != nil {
			ix.bash = true
			if k := strings.IndexByte(e.prefix, ' '); k >= 0 {
				if ix.byWord == nil {
					ix.byWord = map[string][]int32{}
				}
				ix.byWord[e.prefix[:k]] = append(ix.byWord[e.prefix[:k]], int32(i))
			} else {
				ix.any = append(ix.any, int32(i))
			}
			continue
		}
		node := &ix.root
		if e.basename && e.suffix != "" {
			if ix.byLast == nil {
				ix.byLast = map[byte][]int32{}
			}
			last := e.suffix[len(e.suffix)-1]
			ix.byLast[last] = append(ix.byLast[last], int32(i))
			continue
		}
		// Only an anchored rule leaves the root. Every value the rule
		// matches is its anchor directory or lies beneath it, so the walk
		// over the value's components passes the rule's node.
		if e.anchor != "" {
			rest := e.anchor[1:]
			for {
				j := strings.IndexByte(rest, '/')
				if j < 0 {
					break
				}
				comp := rest[:j]
				if node.children == nil {
					node.children = map[string]*trieNode{}
				}
				child := node.children[comp]
				if child == nil {
					child = &trieNode{}
					node.children[comp] = child
				}
				node = child
				rest = rest[j+1:]
			}
		}
		node.idx = append(node.idx, int32(i))
	}
}

// scan returns the smallest index in idx below best whose rule matches.
func (l *ruleList) scan(idx []int32, v, base string, best int32) int32 {
	for _, i := range idx {
		if i >= best {
			break
		}
		e := &l.rules[i]
		if !e.quickReject(v, base) && e.r.match(v) {
			return i
		}
	}
	return best
}

// find returns the most specific matching rule, or nil.
func (l *ruleList) find(v string) *compiledRule {
	if shell.IsOptionReading(v) {
		return l.findReading(v)
	}
	if l.exact != nil {
		if r, ok := l.exact[v]; ok {
			return r
		}
	}
	ix := l.index
	if ix == nil {
		return nil
	}
	if ix.net {
		// The value is parsed once; rules are in specificity order.
		d, ok := parseNetValue(v)
		if !ok {
			return nil
		}
		for _, i := range ix.any {
			if r := l.rules[i].r; r.net.match(&d) {
				return r
			}
		}
		return nil
	}
	const none = int32(1<<31 - 1)
	best := none
	base := lastComponent(v)
	if ix.bash {
		best = l.scan(ix.any, v, base, best)
		word := v
		if k := strings.IndexByte(v, ' '); k >= 0 {
			word = v[:k]
		}
		if list, ok := ix.byWord[word]; ok {
			best = l.scan(list, v, base, best)
		}
	} else {
		node := &ix.root
		best = l.scan(node.idx, v, base, best)
		if ix.byLast != nil && len(base) > 0 {
			if list, ok := ix.byLast[base[len(base)-1]]; ok {
				best = l.scan(list, v, base, best)
			}
		}
		if len(v) > 0 && v[0] == '/' {
			rest := v[1:]
			for node.children != nil {
				j := strings.IndexByte(rest, '/')
				comp := rest
				if j >= 0 {
					comp = rest[:j]
				}
				// The last component is visited too: a literal `X/**`
				// hangs at X's own node and matches X.
				node = node.children[comp]
				if node == nil {
					break
				}
				best = l.scan(node.idx, v, base, best)
				if j < 0 {
					break
				}
				rest = rest[j+1:]
			}
		}
	}
	if best == none {
		return nil
	}
	return l.rules[best].r
}

// findReading is find for an option reading of a command: every rule
// that reads it (the exact command patterns, the others the index
// narrows by their first word, the reading's program word), chosen
// among by pickCommandRule.
func (l *ruleList) findReading(v string) *compiledRule {
	var buf [8]*compiledRule
	matches := buf[:0]
	for _, r := range l.optExact {
		if r.match(v) {
			matches = append(matches, r)
		}
	}
	if ix := l.index; ix != nil && ix.bash {
		try := func(idx []int32) {
			for _, i := range idx {
				if r := l.rules[i].r; r.match(v) {
					matches = append(matches, r)
				}
			}
		}
		try(ix.any)
		if word, ok := shell.ReadingProgram(v); ok {
			try(ix.byWord[word])
		}
	}
	return pickCommandRule(matches)
}

// matching returns every matching rule, most specific first.
func (l *ruleList) matching(v string) []*compiledRule {
	var out []*compiledRule
	if shell.IsOptionReading(v) {
		for _, r := range l.optExact {
			if r.match(v) {
				out = append(out, r)
			}
		}
		for _, e := range l.rules {
			if e.r.match(v) {
				out = append(out, e.r)
			}
		}
		return out
	}
	if r, ok := l.exact[v]; ok {
		out = append(out, r)
		// Shadowed duplicates of the same exact pattern are not kept.
	}
	for _, e := range l.rules {
		if e.r.match(v) {
			out = append(out, e.r)
		}
	}
	return out
}
