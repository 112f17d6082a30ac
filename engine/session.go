package engine

import (
	"fmt"
	"strings"
)

// sessionSet is the session rules, swapped in whole when one is added.
type sessionSet struct {
	rules []*compiledRule
	lists [numSurfaces]ruleList
}

// AddSessionRule records a person's "allow for this session" as a rule
// with origin session. Path patterns are expanded like config patterns.
// A session allow lifts an ask of the policy, never a deny, a hard guard,
// a protected write or permwrap's own files.
func (p *Policy) AddSessionRule(s Surface, pattern string) (Rule, error) {
	return p.addSession(s, pattern, Allow)
}

// AddSessionDeny records a person's "always deny" for the rest of the run
// (the rule they saved applies from the next run on): a later request
// whose answer would be ask is denied instead, without asking. It only
// ever answers an ask: whatever the policy allows stays allowed, and
// what only a person may approve (hard-guard asks, protected writes)
// still asks, as the saved rule will. Among session rules the most
// specific pattern decides, the later one on a tie.
func (p *Policy) AddSessionDeny(s Surface, pattern string) (Rule, error) {
	return p.addSession(s, pattern, Deny)
}

func (p *Policy) addSession(s Surface, pattern string, a Action) (Rule, error) {
	if s == SurfaceInvalid || s >= numSurfaces {
		return Rule{}, fmt.Errorf("invalid surface %v", s)
	}
	cr := &compiledRule{Rule: Rule{Surface: s, Pattern: pattern, Action: a, Origin: OriginSession}}
	var err error
	switch s {
	case SurfaceBash:
		cr.bash, err = compileBashPattern(pattern)
		if err == nil {
			cr.spec = cr.bash.spec
		}
	case SurfaceNet:
		cr.net, err = compileNetPattern(pattern, p.env)
	default:
		var exp string
		if exp, err = expandPattern(pattern, p.env); err == nil {
			cr.path, err = compilePathPattern(exp)
		}
		if err == nil {
			cr.spec = cr.path.spec
		}
	}
	if err != nil {
		return Rule{}, fmt.Errorf("session pattern %q: %w", pattern, err)
	}
	p.sessMu.Lock()
	defer p.sessMu.Unlock()
	old := p.session.Load()
	next := &sessionSet{}
	if old != nil {
		next.rules = append(next.rules, old.rules...)
	}
	cr.order = len(next.rules)
	next.rules = append(next.rules, cr)
	var per [numSurfaces][]*compiledRule
	for _, r := range next.rules {
		per[r.Surface] = append(per[r.Surface], r)
	}
	for i := range per {
		next.lists[i] = newRuleList(per[i])
	}
	p.session.Store(next)
	return cr.Rule, nil
}

// SessionRules returns the session rules in the order they were added.
func (p *Policy) SessionRules() []Rule {
	ss := p.session.Load()
	if ss == nil {
		return nil
	}
	out := make([]Rule, len(ss.rules))
	for i, r := range ss.rules {
		out[i] = r.Rule
	}
	return out
}

// SuggestPathPattern proposes the pattern for "allow for this session"
// of one path: the narrowest useful one. For a read, the file itself. For
// a write, the directory it is in (`/srv/app/logs/**`: writing one file
// there usually means more follow), except where that directory is too
// wide to approve on the strength of one file — /, a top-level
// directory, the home directory or a directory directly in it (~/.ssh),
// the workspace itself, a temporary area, or an ancestor of one of them
// (see broadDir) — where it is the file itself. A person who means a
// whole workspace widens the pattern at the prompt.
func SuggestPathPattern(a Access, path string, env Env) string {
	if a&AccessWrite == 0 {
		return QuoteGlob(path)
	}
	dir := path
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		dir = path[:i]
	} else {
		dir = "/"
	}
	if broadDir(dir, env) {
		return QuoteGlob(path)
	}
	return QuoteGlob(dir) + "/**"
}

// QuoteGlob returns a pattern that matches s literally: wildcards,
// classes, braces and backslashes are escaped, and so are a leading `~`
// and `${`, which expansion would otherwise read.
func QuoteGlob(s string) string {
	if !strings.ContainsAny(s, `*?[]{}\`) && !strings.HasPrefix(s, "~") && !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '*', '?', '[', ']', '{', '}', '\\':
			b.WriteByte('\\')
		case '~':
			if i == 0 {
				b.WriteByte('\\')
			}
		case '$':
			if i+1 < len(s) && s[i+1] == '{' {
				// `${` cannot be escaped in expansion; break it with a class.
				b.WriteString("[$]")
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}
