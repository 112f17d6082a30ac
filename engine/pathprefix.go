package engine

import (
	"path"
	"sort"
	"strings"
)

// PathRulePrefixes lists, for every rule on a path surface (permwrap's
// protected paths, hard guards, protected writes, the policy layers and
// session rules), the literal
// directory its expanded pattern is anchored in: "/home/u/.ssh" for
// "~/.ssh/**", "/w/secret" for "${WORKSPACE}/secret/*.key". Basename and
// leading-"**" patterns match anywhere and have no anchor.
//
// The supervisor's aliasing rule used it: renaming or linking a
// directory moves everything beneath it, so each anchored place beneath
// the source must not gain access at the destination. It misses every
// rule without a literal leading directory (`**/.git/hooks/**`).
//
// Superseded by DecideMove, which judges a move against every rule that
// could match beneath either name; kept only until
// supervisor/aliasing.go calls DecideMove, then to be removed. (Not
// marked Deprecated, so that staticcheck stays clean meanwhile.)
func (p *Policy) PathRulePrefixes() []string {
	seen := map[string]bool{}
	p.eachPathRule(true, func(r *compiledRule) {
		if r.path.basename || r.path.anyValue {
			return
		}
		if pre := literalDir(r.path.expanded); pre != "" && pre != "/" {
			seen[pre] = true
		}
	})
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// literalDir is the longest wildcard-free leading run of whole path
// components of an expanded pattern ("" when it does not start with '/').
func literalDir(pattern string) string {
	if !strings.HasPrefix(pattern, "/") {
		return ""
	}
	cut := strings.IndexAny(pattern, `*?[\`)
	if cut < 0 {
		return path.Clean(pattern)
	}
	i := strings.LastIndexByte(pattern[:cut], '/')
	if i <= 0 {
		return "/"
	}
	return path.Clean(pattern[:i])
}
