package authority

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/gobwas/glob"

	"github.com/permwrap/permwrap/engine"
)

// TypoPathName is the name the typo-path link is registered under.
const TypoPathName = "typo-path"

// TypoPath is one known mistake: paths matching From (a glob, `**`
// crossing directories) are probably meant to be under To.
type TypoPath struct {
	From string
	To   string
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
	g     glob.Glob
	fixed int // leading path components of From that To replaces
}

// NewTypoPath compiles the mistake patterns. A pattern that does not
// compile is an error naming it.
func NewTypoPath(mistakes []TypoPath) (*TypoPathAuthorizer, error) {
	a := &TypoPathAuthorizer{}
	for i, m := range mistakes {
		if !strings.HasPrefix(m.From, "/") || !strings.HasPrefix(m.To, "/") {
			return nil, fmt.Errorf("typoPaths[%d]: from %q and to %q must be absolute paths", i, m.From, m.To)
		}
		g, err := glob.Compile(m.From, '/')
		if err != nil {
			return nil, fmt.Errorf("typoPaths[%d]: from %q: %w", i, m.From, err)
		}
		a.mistakes = append(a.mistakes, typoRule{TypoPath: m, g: g, fixed: fixedComponents(m.From)})
	}
	return a, nil
}

// WorkspaceSiblings is the common mistake for a workspace: a sibling
// directory whose name extends the workspace's (project-old, project.bak,
// project2 next to project).
func WorkspaceSiblings(workspace string) []TypoPath {
	ws := path.Clean(workspace)
	if ws == "/" || !path.IsAbs(ws) {
		return nil
	}
	return []TypoPath{{From: ws + "?*/**", To: ws}}
}

// fixedComponents counts the components of a From pattern that name the
// mistaken directory: everything before the first `**`, or the whole
// directory part when there is none.
func fixedComponents(from string) int {
	comps := strings.Split(strings.Trim(from, "/"), "/")
	for i, c := range comps {
		if strings.Contains(c, "**") {
			return i
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
		if !m.g.Match(p) {
			continue
		}
		comps := strings.Split(strings.Trim(p, "/"), "/")
		if len(comps) < m.fixed {
			continue
		}
		meant := path.Join(append([]string{m.To}, comps[m.fixed:]...)...)
		if meant == p {
			continue // the pattern also covers the right place: not a mistake
		}
		return VerdictDeny, fmt.Sprintf("%s looks like a mistaken path (typo pattern %s); did you mean %s?", p, m.From, meant), nil
	}
	return VerdictDefer, "", nil
}
