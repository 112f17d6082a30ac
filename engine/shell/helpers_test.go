package shell

import "path"

// Conveniences for the package's tests, fuzzers and benchmarks.

// analyzeArgv analyses one exec, recognising wrappers by the basename of
// argv[0] (production passes the resolved binary's name to AnalyzeExec).
func analyzeArgv(argv []string) Analysis {
	return analyzeArgvIn(argv, ScriptContext{})
}

// analyzeArgvIn is analyzeArgv with what is known about where it runs.
func analyzeArgvIn(argv []string, ctx ScriptContext) Analysis {
	name := ""
	if len(argv) > 0 {
		name = path.Base(argv[0])
	}
	return AnalyzeExec(name, argv, ctx, nil)
}

// analyzeScript analyses a script knowing nothing of where it runs.
func analyzeScript(src string) Analysis {
	return AnalyzeScript(src, ScriptContext{})
}
