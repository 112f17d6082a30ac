package supervisor

// Temporary until engine.DecideExec lands: the exec decision from the
// exec/path checks of the binary and the bash check of its command line.

import (
	"path/filepath"

	"github.com/permwrap/permwrap/engine"
)

type execIntent struct {
	Path, Resolved string
	Argv           []string
	Cwd            string
}

type unitDecision struct {
	Unit   engine.Unit
	Result engine.Result
}

type execDecision struct {
	Result   engine.Result
	Units    []unitDecision
	Analysis engine.ShellAnalysis
}

func decideExec(p *engine.Policy, in execIntent) execDecision {
	d := execDecision{Result: p.DecidePath(engine.AccessExec, in.Resolved)}
	args := in.Argv
	if len(args) > 0 {
		args = args[1:]
	}
	name := append([]string{filepath.Base(in.Path)}, args...)
	full := append([]string{in.Resolved}, args...)
	b := p.EvaluateAny(engine.SurfaceBash, engine.RenderArgv(name), engine.RenderArgv(full))
	if b.Action > d.Result.Action {
		d.Result = b
	}
	return d
}
