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

// TypoPathAuthorizer denies reads and writes of paths that match a known
// mistake (engine.TypoPath: the "typoPaths" setting and the workspace's
// stale siblings), with a teaching reason naming the likely intended
// path, so the agent corrects itself instead of asking a person.
// Everything else it defers: it can only ever make the answer stricter.
type TypoPathAuthorizer struct {
	mistakes []engine.TypoPath
}

// NewTypoPath takes the mistakes. Each must have been built by the
// engine (the policy parser or engine.NewTypoPath), with an absolute To.
func NewTypoPath(mistakes []engine.TypoPath) (*TypoPathAuthorizer, error) {
	for i, m := range mistakes {
		if !strings.HasPrefix(m.To, "/") {
			return nil, fmt.Errorf("typoPaths[%d]: to %q must be an absolute path", i, m.To)
		}
	}
	return &TypoPathAuthorizer{mistakes: append([]engine.TypoPath(nil), mistakes...)}, nil
}

// WorkspaceSiblings are the common mistakes for a workspace: a stale
// copy next to it (project-old, project.bak, project-backup, project-copy,
// project.orig, project~). Only these suffixes: a sibling like
// project-common is as likely a real dependency as a mistake, and a
// wrong "did you mean" would deny it without asking anyone.
func WorkspaceSiblings(workspace string) []engine.TypoPath {
	ws := path.Clean(workspace)
	if ws == "/" || !path.IsAbs(ws) {
		return nil
	}
	var out []engine.TypoPath
	for _, suffix := range siblingSuffixes {
		// The pattern is a quoted literal, so it always compiles.
		if tp, err := engine.NewTypoPath(engine.QuoteGlob(ws+suffix)+"/**", ws, engine.Env{}); err == nil {
			out = append(out, tp)
		}
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
		if !m.Match(p) {
			continue
		}
		comps := strings.Split(strings.Trim(p, "/"), "/")
		meant := path.Join(append([]string{m.To}, comps[mistakenDir(comps, m.Match):]...)...)
		if meant == p {
			continue // the pattern also covers the right place: not a mistake
		}
		return VerdictDeny, fmt.Sprintf("%s looks like a mistaken path (typo pattern %s); did you mean %s?", p, m.From, meant), nil
	}
	return VerdictDefer, "", nil
}
