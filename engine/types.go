// Package engine owns permwrap's rules and their evaluation: surfaces,
// patterns, the most-specific-wins order, composition of hard guards,
// session rules, policy scopes, yolo and fail-closed asking, the JSONC
// configuration, the embedded default policy, intents and their
// resolution into checks, and the analysis of shell command lines.
//
// It is pure Go: nothing here touches the kernel, so every decision
// permwrap makes can be reproduced by `permwrap explain` and by tests.
package engine

import (
	"fmt"
	"strings"

	"github.com/permwrap/permwrap/internal/display"
)

// Surface is what a rule is about.
type Surface uint8

const (
	SurfaceInvalid Surface = iota
	SurfaceRead            // a path being read (value: absolute, cleaned path)
	SurfaceWrite           // a path being created, changed or removed
	SurfaceExec            // a path being executed
	SurfaceBash            // a command line (value: rendered command line)
	SurfacePath            // any access to a path
	SurfaceNet             // an outbound connection (value: one spelling of its destination, see NetIntent)
	numSurfaces
)

// Surfaces lists the valid surfaces in a stable order.
var Surfaces = []Surface{SurfaceRead, SurfaceWrite, SurfaceExec, SurfaceBash, SurfacePath, SurfaceNet}

var surfaceNames = [...]string{"invalid", "read", "write", "exec", "bash", "path", "net"}

func (s Surface) String() string { return enumName(surfaceNames[:], int(s), "surface") }

// enumName is names[i], or "what(i)" for a value outside the names (or
// one named "").
func enumName(names []string, i int, what string) string {
	if i >= 0 && i < len(names) && names[i] != "" {
		return names[i]
	}
	return fmt.Sprintf("%s(%d)", what, i)
}

// IsPath reports whether values of s are filesystem paths.
func (s Surface) IsPath() bool {
	return s == SurfaceRead || s == SurfaceWrite || s == SurfaceExec || s == SurfacePath
}

// ParseSurface maps a config name to a Surface.
func ParseSurface(name string) (Surface, bool) {
	for i, n := range surfaceNames {
		if i > 0 && n == name {
			return Surface(i), true
		}
	}
	return SurfaceInvalid, false
}

// Action is a rule's verdict. The numeric order is the restrictiveness
// order: Allow < Ask < Deny, so the most restrictive of several is the max.
type Action uint8

const (
	Allow Action = iota + 1
	Ask
	Deny
)

var actionNames = [...]string{"", "allow", "ask", "deny"}

func (a Action) String() string { return enumName(actionNames[:], int(a), "action") }

// ParseAction maps a config word to an Action.
func ParseAction(s string) (Action, bool) {
	switch s {
	case "allow":
		return Allow, true
	case "ask":
		return Ask, true
	case "deny":
		return Deny, true
	}
	return 0, false
}

// Origin says where a rule came from: the provenance shown by explain and
// written to the review log.
type Origin uint8

const (
	OriginInvalid    Origin = iota
	OriginGlobal            // the user's policy.jsonc
	OriginScope             // a --policy FILE scope for one run
	OriginHardGuard         // hard-guards.jsonc
	OriginSession           // "allow for this session"
	OriginYolo              // an ask rewritten to allow by yolo mode
	OriginFailClosed        // an allow turned into an ask because a scope failed to load
	OriginBuiltin           // the built-in answer when nothing matched
	OriginDefault           // the embedded default policy
	OriginProfile           // an embedded profile other than the default (--profile, "extends")
	OriginProject           // a project's .permwrap/policy.jsonc
	// OriginAudit marks an ask or deny that audit mode let through: the
	// Rule keeps the action the policy chose (and its pattern and
	// position); the Result that carries it allows.
	OriginAudit
	OriginManaged // the administrator's managed policy (ManagedPolicyPath)
)

var originNames = [...]string{"invalid", "global", "scope", "hard-guard", "session", "yolo", "fail-closed", "builtin", "default", "profile", "project", "audit", "managed"}

func (o Origin) String() string { return enumName(originNames[:], int(o), "origin") }

// ParseOrigin maps an origin's name (as String writes it) back to the
// Origin; unknown names are OriginInvalid.
func ParseOrigin(s string) Origin {
	for i, n := range originNames {
		if n == s {
			return Origin(i)
		}
	}
	return OriginInvalid
}

// Position is where a rule was written. File is empty for rules that were
// not read from a file (session, builtin).
type Position struct {
	File   string
	Line   int // 1-based; 0 when unknown
	Column int // 1-based; 0 when unknown
}

func (p Position) String() string {
	switch {
	case p.File == "":
		return ""
	case p.Line == 0:
		return p.File
	case p.Column == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

// Content is a condition on what a file holds. A rule with
// ContentSecret applies only to a file whose content looks like secret
// material (see LooksSecret); for any other file the rule is skipped and
// the next most specific rule decides. It is written
// `{"action": "ask", "content": "secret"}` and exists on the read surface
// only, in the policy and its scopes (not in hard guards), and never on
// an allow.
type Content uint8

const (
	ContentAny    Content = iota // the rule applies whatever the file holds
	ContentSecret                // only when the file's content looks secret
)

var contentNames = [...]string{"", "secret"}

func (c Content) String() string {
	if c == ContentAny {
		return ""
	}
	return enumName(contentNames[:], int(c), "content")
}

// Rule is one (surface, pattern) → action entry. Pattern is as written by
// the user (before ~ and ${VAR} expansion); the compiled form lives in a
// Policy.
type Rule struct {
	Surface Surface
	Pattern string
	Action  Action
	Content Content // ContentSecret: only for files whose content looks secret
	Reason  string  // travels with every denial the rule causes
	Origin  Origin
	Pos     Position
}

// String is the one rendering of a rule for people: the denial notice,
// the prompt, the review log's text view and explain all use it.
//
//	rule write:/etc/** (deny, policy.jsonc:12:5)
//	rule bash:git push * (allow by yolo, default.jsonc:41:7)
//	rule write:/srv/x/** (allow, session)
//	rule permission["*"] (ask, policy.jsonc:3:3)
//	no rule (builtin ask)
//
// The place is the file position when the rule was read from a file, its
// origin otherwise; an action that yolo or fail-closed rewrote says so.
// The action is left out when unset (a decider names a rule without it).
// The pattern goes through the one sanitiser: a session pattern is typed
// by a person and may hold anything.
func (r Rule) String() string {
	if r.Pattern == "" && (r.Origin == OriginBuiltin || r.Origin == OriginInvalid) {
		if r.Action == 0 {
			return "no rule"
		}
		return "no rule (builtin " + r.Action.String() + ")"
	}
	var b strings.Builder
	b.WriteString("rule ")
	if r.Surface == SurfaceInvalid {
		b.WriteString(`permission["` + display.Printable(r.Pattern) + `"]`)
	} else {
		b.WriteString(r.Surface.String())
		b.WriteByte(':')
		b.WriteString(display.Printable(r.Pattern))
	}
	b.WriteString(" (")
	if r.Action != 0 {
		b.WriteString(r.Action.String())
		if r.Content != ContentAny {
			b.WriteString(" if " + r.Content.String())
		}
		switch r.Origin {
		case OriginYolo:
			b.WriteString(" by yolo")
		case OriginFailClosed:
			b.WriteString(" by fail-closed")
		}
		b.WriteString(", ")
	}
	if p := r.Pos.String(); p != "" {
		b.WriteString(display.Printable(p))
	} else {
		b.WriteString(r.Origin.String())
	}
	b.WriteByte(')')
	return b.String()
}

// Check is one (surface, value) question put to the policy.
type Check struct {
	Surface Surface
	Value   string
}

func (c Check) String() string { return c.Surface.String() + " " + c.Value }
