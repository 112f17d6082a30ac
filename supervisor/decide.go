package supervisor

import (
	"strings"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/forwarding"
)

// verdict is the policy's answer for one request, with what it was about,
// for the review log, the denial notice and the prompt.
type verdict struct {
	result engine.Result
	// surface/access/value describe the request for people ("write",
	// "/etc/hosts"); for an exec, the command line.
	access string
	value  string
	exec   *engine.ExecDecision
	argv   []string // for an exec: the command line shown (displayArgv)
	// net is a connection's destination (connect, a send with one).
	net *engine.NetIntent
	// through: a save's temporary file (saves.go); value is then the
	// file the save replaces.
	through string
	// quiet: nothing was judged (a send with no destination, a connect to
	// permwrap's own proxy): not written to the review log.
	quiet bool
	// touched are the paths the call reads or writes, as judged (the
	// first ones; an empty path ends the list): what an approved script
	// must have named for the call to be one of its parts (scripts.go).
	// None for an exec, or a call that names no path. An array, not a
	// slice: judging an allowed call allocates nothing for it.
	touched [2]touch
}

// touch is one path a call uses, and how.
type touch struct {
	access engine.Access
	path   string
}

// touches lists the paths the call uses.
func (v *verdict) touches() []touch {
	n := 0
	for n < len(v.touched) && v.touched[n].path != "" {
		n++
	}
	return v.touched[:n]
}

// allowUnchecked is the result for accesses permwrap lets through without
// consulting the policy; the review log shows them as builtin.
func allowUnchecked(path string) engine.Result {
	return engine.Result{
		Action: engine.Allow,
		Check:  engine.Check{Surface: engine.SurfacePath, Value: path},
		Rule:   engine.Rule{Surface: engine.SurfacePath, Action: engine.Allow, Origin: engine.OriginBuiltin, Reason: "no access to check"},
	}
}

func accessWord(a engine.Access) string {
	var parts []string
	if a&engine.AccessRead != 0 {
		parts = append(parts, "read")
	}
	if a&engine.AccessWrite != 0 {
		parts = append(parts, "write")
	}
	if a&engine.AccessExec != 0 {
		parts = append(parts, "exec")
	}
	if len(parts) == 0 {
		return "open"
	}
	return strings.Join(parts, "+")
}

// displayArgv is the command line shown for an exec: the binary's name as
// invoked, then the arguments (argv[0] is the caller's to choose and is
// not trusted as the name).
func displayArgv(invoked, resolved string, argv []string) []string {
	name := invoked
	if name == "" {
		name = resolved
	}
	out := make([]string, 0, len(argv))
	out = append(out, baseName(name))
	if len(argv) > 1 {
		out = append(out, argv[1:]...)
	}
	return out
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 && i < len(p)-1 {
		return p[i+1:]
	}
	return p
}

// verdictOf is steps 1 of decide: the request judged by this permwrap's
// policy alone for its own processes (exactly as without nesting), else by
// every policy of its node's chain, most restrictive wins (forwarding.go). Per
// policy: the call's judge (pure); when that answer depends on what the
// file holds (a content rule), the call looks at the file it would hand
// over, once for all layers (content.go), and the policy answers again;
// then the policy's own audit mode (--audit lets an ask or deny through,
// logged as would_*): an inner --audit lets through what its own layer
// would refuse, never what a layer above it refuses.
func (s *supervisor) verdictOf(r *request) verdict {
	c := r.call
	byPolicy := func(p *engine.Policy) verdict {
		v := c.judge(p)
		if v.result.DependsOnContent {
			v = c.judgeContent(p, v, c.lookAtContent())
		}
		v.result = p.Audit(v.result)
		return v
	}
	if !r.nested {
		return byPolicy(s.cfg.Policy)
	}
	return forwarding.Strictest(r.m.Layers(), byPolicy, verdictResult)
}
