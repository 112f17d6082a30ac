package engine

import "testing"

// Rule.String is the one rendering of a rule for people; the notice, the
// prompt, the log's text view and explain all show it, so its forms are
// pinned here.
func TestRuleString(t *testing.T) {
	pos := Position{File: "policy.jsonc", Line: 12, Column: 5}
	for _, c := range []struct {
		r    Rule
		want string
	}{
		{Rule{Surface: SurfaceWrite, Pattern: "/etc/**", Action: Deny, Origin: OriginGlobal, Pos: pos}, "rule write:/etc/** (deny, policy.jsonc:12:5)"},
		{Rule{Surface: SurfaceBash, Pattern: "git push *", Action: Allow, Origin: OriginYolo, Pos: Position{File: "default.jsonc", Line: 41, Column: 7}}, "rule bash:git push * (allow by yolo, default.jsonc:41:7)"},
		{Rule{Surface: SurfaceWrite, Pattern: "${WORKSPACE}/**", Action: Ask, Origin: OriginFailClosed, Pos: pos}, "rule write:${WORKSPACE}/** (ask by fail-closed, policy.jsonc:12:5)"},
		{Rule{Surface: SurfaceWrite, Pattern: "/srv/x/**", Action: Allow, Origin: OriginSession}, "rule write:/srv/x/** (allow, session)"},
		{Rule{Pattern: "*", Action: Ask, Origin: OriginGlobal, Pos: Position{File: "policy.jsonc", Line: 3, Column: 3}}, `rule permission["*"] (ask, policy.jsonc:3:3)`},
		{Rule{Surface: SurfaceRead, Pattern: "~/.ssh/**", Origin: OriginHardGuard, Pos: Position{File: "hard-guards.jsonc", Line: 2}}, "rule read:~/.ssh/** (hard-guards.jsonc:2)"},
		{Rule{Surface: SurfaceWrite, Action: Ask, Origin: OriginBuiltin}, "no rule (builtin ask)"},
		{Rule{}, "no rule"},
		// A session pattern is typed by a person and may hold anything.
		{Rule{Surface: SurfaceWrite, Pattern: "/tmp/\x1b[2J\u202e*", Action: Allow, Origin: OriginSession}, `rule write:/tmp/\x1b[2J\u202e* (allow, session)`},
	} {
		if got := c.r.String(); got != c.want {
			t.Errorf("%#v.String() =\n  %s\nwant\n  %s", c.r, got, c.want)
		}
	}
}
