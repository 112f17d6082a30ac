package supervisor

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
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
}

// judge asks the policy about a decoded request. Every path a call
// touches is checked; the most restrictive answer wins.
func (s *supervisor) judge(r *request) verdict {
	p := s.cfg.Policy
	switch r.op {
	case opOpen:
		res := r.res[0]
		if r.noCheck {
			return verdict{result: allowUnchecked(res.Path), access: "stat", value: res.Path}
		}
		if res.Kind == notify.KindAnon {
			// Re-opening a pipe, socket or anonymous file the process
			// already holds (/dev/stdin, /dev/fd/63 from <(...)) gives it
			// nothing it does not have.
			return verdict{result: allowUnchecked(res.Path), access: accessWord(r.access), value: res.Path}
		}
		return verdict{result: p.DecidePath(r.access, res.Path), access: accessWord(r.access), value: res.Path}
	case opExec:
		res := r.res[0]
		r.intent = engine.ExecIntent{Path: r.raw[0], Resolved: res.Path, Argv: r.argv, Cwd: s.cwdOf(r.tid)}
		d := p.DecideExec(r.intent)
		v := verdict{result: d.Result, access: "exec", value: engine.RenderArgv(displayArgv(r)), exec: &d}
		// A #! script runs its interpreter: each one of the chain is an
		// exec too, judged like the script itself.
		// The image's identity is taken here too, for the verification
		// after the exec (one open of the image per exec).
		if f := r.openImage(); f != nil {
			var st unix.Stat_t
			if unix.Fstat(int(f.Fd()), &st) == nil {
				r.image, r.haveImage = devIno{st.Dev, st.Ino}, true
			}
			r.interps, r.imageKind = interpreterChain(r.tid, f)
			f.Close()
		} else {
			r.imageKind = imageOther
		}
		for _, in := range r.interps {
			if ir := p.DecidePath(engine.AccessExec, in.path); ir.Action > v.result.Action {
				v.result = ir
			}
		}
		return v
	case opRename, opLink:
		// Both names are written. (The aliasing rules that keep a rename
		// or link from widening access are checked in aliasing.go.)
		a := p.DecidePath(engine.AccessWrite, r.res[0].Path)
		b := p.DecidePath(engine.AccessWrite, r.res[1].Path)
		v := verdict{access: r.op.String(), value: r.res[0].Path + " -> " + r.res[1].Path}
		v.result = moreRestrictive(a, b)
		if v.result.Action == engine.Allow {
			if w := s.aliasing(r); w.Action != engine.Allow {
				v.result = w
			}
		}
		return v
	case opSymlink:
		return verdict{result: p.DecidePath(engine.AccessWrite, r.res[1].Path), access: "symlink", value: r.res[1].Path}
	case opUnsupported:
		return verdict{result: engine.Result{Action: engine.Deny}, access: r.desc.name}
	case opBind:
		if r.res[0] == nil {
			// Network and abstract addresses name no path (network rules
			// are not part of the policy yet).
			return verdict{result: allowUnchecked(""), access: "bind"}
		}
		return verdict{result: p.DecidePath(engine.AccessWrite, r.res[0].Path), access: "bind", value: r.res[0].Path}
	default:
		res := r.res[0]
		return verdict{result: p.DecidePath(engine.AccessWrite, res.Path), access: r.op.String(), value: res.Path}
	}
}

func moreRestrictive(a, b engine.Result) engine.Result {
	if b.Action > a.Action {
		return b
	}
	return a
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
func displayArgv(r *request) []string {
	name := r.raw[0]
	if name == "" && r.res[0] != nil {
		name = r.res[0].Path
	}
	out := make([]string, 0, len(r.argv))
	out = append(out, baseName(name))
	if len(r.argv) > 1 {
		out = append(out, r.argv[1:]...)
	}
	return out
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 && i < len(p)-1 {
		return p[i+1:]
	}
	return p
}
