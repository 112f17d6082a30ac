package supervisor

import (
	"strings"

	"github.com/permwrap/permwrap/engine"
)

// aliasing applies Landlock's "refer" principle to the policy: a rename or
// link of from to to must not give anything under to an access that the
// same thing under from was refused. It compares read, write and exec at
// from and at to, and, when from is a directory, at every place beneath
// it that a path rule names (renaming the parent of a protected file
// moves the file). The result is Allow, or the from-side answer the move
// would have widened.
func aliasing(p *engine.Policy, from, to string, fromIsDir bool) engine.Result {
	pairs := [][2]string{{from, to}}
	if fromIsDir {
		for _, prefix := range p.PathRulePrefixes() {
			if rest, ok := strings.CutPrefix(prefix, from+"/"); ok {
				pairs = append(pairs, [2]string{prefix, to + "/" + rest})
			}
		}
	}
	for _, pair := range pairs {
		for _, a := range []engine.Access{engine.AccessRead, engine.AccessWrite, engine.AccessExec} {
			before := p.DecidePath(a, pair[0])
			after := p.DecidePath(a, pair[1])
			if after.Action < before.Action {
				return before
			}
		}
	}
	return engine.Result{Action: engine.Allow}
}
