package supervisor

import (
	"path"
	"sync"
	"time"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
)

// Saves through a temporary file. Programs save a file by writing a new
// one beside it and renaming it over the file (Claude Code's Write and
// Edit: F.tmp.<pid>.<hex>; write-file-atomic; editors). Under a rule that
// asks for the directory, that was one ask for the temporary file, one
// for its chmod, one for the rename, each naming a file nobody cares
// about. So the creation of a temporary file of F (engine.SaveTarget)
// that the policy asks about is asked as what it is, a write of F, named
// F, with the temporary file beside it; and once allowed, the rest of that
// save — writes to the temporary file, its chmod, and the rename over F
// by the same process — needs nothing more (saveApprovals). A save the
// policy denies for F is denied as such.
//
// The approval covers exactly that save: the two names, for the process
// that asked (any of its threads), until the rename or saveLifetime. It
// only ever answers an ask the policy made (never a deny, a hard guard or
// a protected write), like a script's approval.

// saveVerdict turns the verdict of a creating open into the save it is
// part of, when the file is a temporary file of another one and the
// policy asks about it; v otherwise.
func saveVerdict(p *engine.Policy, v verdict, temp string) verdict {
	if v.result.Action != engine.Ask {
		return v
	}
	name, ok := engine.SaveTarget(path.Base(temp))
	if !ok {
		return v
	}
	target := path.Join(path.Dir(temp), name)
	return verdict{result: p.DecidePath(engine.AccessWrite, target), access: "save", value: target, through: temp,
		touched: [2]touch{{engine.AccessWrite, temp}, {engine.AccessWrite, target}}}
}

// saveLifetime bounds an approved save that is never finished.
const saveLifetime = 10 * time.Minute

// maxSaves bounds the saves awaiting their rename.
const maxSaves = 256

type saveApproval struct {
	tgid         int
	temp, target string
	at           time.Time
	by           authority.DecidedBy
}

// saveApprovals are the approved saves not finished yet.
type saveApprovals struct {
	mu   sync.Mutex
	list []*saveApproval
	now  func() time.Time // replaced by tests
}

func (a *saveApprovals) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

// approve records that the save of target through temp by process tgid
// was allowed by by.
func (a *saveApprovals) approve(tgid int, temp, target string, by authority.DecidedBy) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pruneLocked()
	if len(a.list) >= maxSaves {
		a.list = a.list[1:]
	}
	a.list = append(a.list, &saveApproval{tgid: tgid, temp: temp, target: target, at: a.clock(), by: saveProvenance(by)})
}

// saveProvenance is who decides the rest of a save: whoever allowed it —
// the rule that did, or the person, reviewer or parent by way of the
// save's approval.
func saveProvenance(by authority.DecidedBy) authority.DecidedBy {
	switch b := by.(type) {
	case authority.ByRule, authority.BySessionApproval:
		return b
	case authority.ByUser:
		return authority.ByUser{Via: authority.SaveApprovalVia}
	}
	return scriptProvenance(by, 0)
}

func (a *saveApprovals) pruneLocked() {
	now := a.clock()
	kept := a.list[:0]
	for _, s := range a.list {
		if now.Sub(s.at) <= saveLifetime {
			kept = append(kept, s)
		}
	}
	a.list = kept
}

// answer decides, without I/O, whether an approved save of process tgid
// answers the ask v: a call that touches only the save's temporary file
// and its target, by the process that was allowed the save. A rename of
// the temporary file finishes the save.
func (a *saveApprovals) answer(v verdict, tgid int) (authority.Decision, bool) {
	if v.result.Action != engine.Ask || v.result.HumanOnly || v.exec != nil || v.net != nil {
		return authority.Decision{}, false
	}
	switch v.result.Layer {
	case engine.LayerPolicy, engine.LayerProject, engine.LayerFallback, engine.LayerBuiltin:
	default:
		return authority.Decision{}, false
	}
	touches := v.touches()
	if len(touches) == 0 {
		return authority.Decision{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pruneLocked()
	for i, s := range a.list {
		if s.tgid != tgid {
			continue
		}
		covered := true
		for _, t := range touches {
			// Anything on the temporary file; a write of the target.
			if t.path != s.temp && (t.path != s.target || t.access&^engine.AccessWrite != 0) {
				covered = false
				break
			}
		}
		if !covered {
			continue
		}
		if v.access == "rename" && touches[0].path == s.temp {
			a.list = append(a.list[:i], a.list[i+1:]...) // the save is done
		}
		return authority.Allowed(s.by), true
	}
	return authority.Decision{}, false
}
