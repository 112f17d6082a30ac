package supervisor

import (
	"strings"

	"github.com/permwrap/permwrap/engine"
)

// aliasing applies Landlock's "refer" principle to the policy: a rename or
// link of A to B must not give anything under B an access that the same
// thing under A was refused. It compares read, write and exec at A and at
// B, and, when A is a directory, at every place beneath A that a path
// rule names (renaming the parent of a protected file moves the file).
// The result is Allow, or the A-side answer the move would have widened.
func (s *supervisor) aliasing(r *request) engine.Result {
	p := s.cfg.Policy
	from, to := r.res[0].Path, r.res[1].Path
	pairs := [][2]string{{from, to}}
	if r.res[0].Exists && r.res[0].Stat.Mode&0o170000 == 0o040000 {
		for _, prefix := range p.PathRulePrefixes() {
			if rest, ok := strings.CutPrefix(prefix, from+"/"); ok {
				pairs = append(pairs, [2]string{prefix, to + "/" + rest})
			}
		}
	}
	allow := engine.Result{Action: engine.Allow}
	for _, pair := range pairs {
		for _, a := range []engine.Access{engine.AccessRead, engine.AccessWrite, engine.AccessExec} {
			before := p.DecidePath(a, pair[0])
			after := p.DecidePath(a, pair[1])
			if after.Action < before.Action {
				return before
			}
		}
	}
	return allow
}
