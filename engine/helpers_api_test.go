package engine

import (
	"path"

	"github.com/permwrap/permwrap/engine/shell"
)

// Conveniences for the package's tests, fuzzers and benchmarks. They lived
// beside the code with no caller outside the tests (deadcode); production
// goes through PathMatcher/ExpandPathPattern, shell.AnalyzeExec and
// shell.AnalyzeScript.

// Glob is one path pattern in the policy's syntax, compiled by the
// matcher rules use: linear in the value, no recursion over it, no
// allocation. It is the one glob dialect of permwrap: rules, typo paths
// and the secret-name lists of automated reviewers all match with it.
// A pattern without '/' matches a value's last component (so a bare
// file name such as ".env" can be matched directly); any other pattern
// matches absolute values only; `X/**` also matches X.
type Glob struct {
	pp *pathPattern
}

// CompileGlob compiles a pattern after expanding a leading `~` and
// ${HOME}, ${WORKSPACE} and ${TMPDIR} from env, as the policy does (an
// unknown variable, or one env leaves empty, is an error).
func CompileGlob(pattern string, env Env) (*Glob, error) {
	exp, err := expandPattern(pattern, env)
	if err != nil {
		return nil, err
	}
	pp, err := compilePathPattern(exp)
	if err != nil {
		return nil, err
	}
	return &Glob{pp: pp}, nil
}

// Match reports whether value matches the pattern.
func (g *Glob) Match(value string) bool { return g.pp.match(value) }

// AnalyzeArgv analyses one exec. Units[0] is the exec itself; wrappers
// (env, sudo, xargs, sh -c …) add their inner commands, recursively.
// The command name used to recognise wrappers is the basename of argv[0];
// callers that know the resolved binary should use shell.AnalyzeExec instead,
// because argv[0] is chosen by the caller of execve.
func AnalyzeArgv(argv []string) shell.Analysis {
	return analyzeArgvIn(argv, shell.ScriptContext{})
}

// analyzeArgvIn is AnalyzeArgv with what is known about where it runs.
func analyzeArgvIn(argv []string, ctx shell.ScriptContext) shell.Analysis {
	name := ""
	if len(argv) > 0 {
		name = path.Base(argv[0])
	}
	return shell.AnalyzeExec(name, argv, ctx, nil)
}

// AnalyzeScript analyses a shell script as `bash -c SCRIPT` would run it.
func AnalyzeScript(src string) shell.Analysis {
	return shell.AnalyzeScript(src, shell.ScriptContext{})
}
