package authority

import (
	"fmt"

	"github.com/permwrap/permwrap/engine"
)

// compileGlob is the one place authority turns a pattern into a matcher:
// the engine's, so a pattern means here what it means in a policy.
func compileGlob(pattern string) (func(string) bool, error) {
	return engine.PathMatcher(pattern)
}

// mustCompileGlobs compiles patterns that are constants of this package;
// a failure is a programming error caught by the package's tests.
func mustCompileGlobs(patterns []string) []func(string) bool {
	out := make([]func(string) bool, 0, len(patterns))
	for _, p := range patterns {
		m, err := compileGlob(p)
		if err != nil {
			panic(fmt.Sprintf("authority: built-in pattern %q: %v", p, err))
		}
		out = append(out, m)
	}
	return out
}
