package authority

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/permwrap/permwrap/engine"
)

// TypoPathName is the name the typo-path link is registered under.
const TypoPathName = "typo-path"

// TypoPath is one known mistake: paths matching From (a glob, `**`
// crossing directories) are probably meant to be under To.
type TypoPath struct {
	From string // as written; shown in the teaching reason
	To   string // an absolute directory
	// Match, when set, decides whether a path matches From (the engine's
	// own pattern matcher, so ~ and ${VAR} mean what they mean in rules).
	// When nil, From is compiled with engine.CompileGlob and must be
	// absolute.
	Match func(path string) bool
}

// TypoPathAuthorizer denies reads and writes of paths that match a known
// mistake, with a teaching reason naming the likely intended path, so the
// agent corrects itself instead of asking a person. Everything else it
// defers: it can only ever make the answer stricter.
type TypoPathAuthorizer struct {
	mistakes []typoRule
}

type typoRule struct {
	TypoPath
	match func(string) bool
}

// NewTypoPath compiles the mistake patterns. A pattern that does not
// compile is an error naming it.
func NewTypoPath(mistakes []TypoPath) (*TypoPathAuthorizer, error) {
	a := &TypoPathAuthorizer{}
	for i, m := range mistakes {
		if !strings.HasPrefix(m.To, "/") {
			return nil, fmt.Errorf("typoPaths[%d]: to %q must be an absolute path", i, m.To)
		}
		match := m.Match
		if match == nil {
			if !strings.HasPrefix(m.From, "/") {
				return nil, fmt.Errorf("typoPaths[%d]: from %q must be an absolute path", i, m.From)
			}
			g, err := engine.CompileGlob(m.From, engine.Env{})
			if err != nil {
				return nil, fmt.Errorf("typoPaths[%d]: from %q: %w", i, m.From, err)
			}
			match = g.Match
		}
		a.mistakes = append(a.mistakes, typoRule{TypoPath: m, match: match})
	}
	return a, nil
}

// WorkspaceSiblings are the common mistakes for a workspace: a stale
// copy next to it (project-old, project.bak, project-backup, project-copy,
// project.orig, project~). Only these suffixes: a sibling like
// project-common is as likely a real dependency as a mistake, and a
// wrong "did you mean" would deny it without asking anyone.
func WorkspaceSiblings(workspace string) []TypoPath {
	ws := path.Clean(workspace)
	if ws == "/" || !path.IsAbs(ws) {
		return nil
	}
	var out []TypoPath
	for _, suffix := range siblingSuffixes {
		out = append(out, TypoPath{From: engine.QuoteGlob(ws+suffix) + "/**", To: ws})
	}
	return out
}

var siblingSuffixes = []string{"-old", ".old", "_old", ".bak", "-bak", "-backup", ".backup", "-copy", " copy", ".orig", "~"}

// typoProbe is a file name no mistake pattern names: a prefix of the path
// that matches with it appended is a directory the pattern covers whole.
const typoProbe = "permwrap-typo-probe"

// mistakenDir returns how many leading components of comps name the
// mistaken directory: the shortest prefix under which the pattern covers
// everything (`/home/u/project-old/**` → 3), or else the path's own
// directory (`/tmp/projct/*.go` → all but the file name). Probing works
// with any matcher, so the engine's pattern syntax needs no second parser.
func mistakenDir(comps []string, match func(string) bool) int {
	// k may reach len(comps): `X/**` matches X itself, and then the whole
	// path is the mistaken directory.
	for k := 1; k <= len(comps); k++ {
		if match("/" + path.Join(path.Join(comps[:k]...), typoProbe)) {
			return k
		}
	}
	return len(comps) - 1
}

func (a *TypoPathAuthorizer) Review(_ context.Context, r Request, _ Querier) (Verdict, string, error) {
	switch r.Check.Surface {
	case engine.SurfaceRead, engine.SurfaceWrite, engine.SurfacePath:
	default:
		return VerdictDefer, "", nil
	}
	p := path.Clean(r.Check.Value)
	for _, m := range a.mistakes {
		if !m.match(p) {
			continue
		}
		comps := strings.Split(strings.Trim(p, "/"), "/")
		meant := path.Join(append([]string{m.To}, comps[mistakenDir(comps, m.match):]...)...)
		if meant == p {
			continue // the pattern also covers the right place: not a mistake
		}
		return VerdictDeny, fmt.Sprintf("%s looks like a mistaken path (typo pattern %s); did you mean %s?", p, m.From, meant), nil
	}
	return VerdictDefer, "", nil
}
