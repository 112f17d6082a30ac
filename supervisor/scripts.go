package supervisor

import (
	"sync"
	"time"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/procfs"
)

// scriptApprovals remembers, when a person (or a reviewer, or a parent
// permwrap) allows an exec, what that exec was seen to do, for the
// process tree that runs it: the commands of its script (`bash -c "make
// && git push"` → `make`, `git push`) and the files the analysis found
// them using (engine.ExecDecision.PathUses: redirect targets, the
// arguments of file commands). Those were shown and allowed together, so
// the exec of such a command, or the open of such a file, made by the
// approved process or a descendant does not ask again: one ask per
// intent.
//
// It only ever answers an ask, and only one the policy made: a deny, a
// hard guard, a protected write or one of permwrap's own files is never
// touched (scriptAnswer), and every request is still judged first. An
// approval lasts while its process lives (pinned by its start time: a
// reused pid is another process), at most approvalLifetime, and a tree
// holds at most maxApprovalsPerTree of them.
type scriptApprovals struct {
	mu    sync.Mutex
	byPid map[int]*scriptApproval
	// now and stat are the clock and /proc, replaced by tests.
	now  func() time.Time
	stat func(pid int) (procInfo, bool)
}

// scriptApproval is what one allowed exec approved.
type scriptApproval struct {
	pid   int
	start uint64 // the process's start time: a reused pid is not the same process
	root  int    // the tree it counts against: the outermost approved ancestor's pid, or its own
	at    time.Time
	by    authority.DecidedBy // the provenance of what it answers (scriptProvenance)
	units map[string]bool
	uses  []engine.PathUse
	// effects are the places whose writes it approved, each with who
	// approved it (a rule grants the effect of its exec's own command).
	effects []grantedEffect
}

// grantedEffect is an effect an approval holds, and who approved it.
type grantedEffect struct {
	engine.Effect
	by authority.DecidedBy
}

// Bounds. An approval answers for a script a person saw: long enough for
// a build, not for the rest of a day-long session; a tree that keeps
// approving scripts (an agent's shell) keeps its latest ones.
const (
	approvalLifetime    = time.Hour
	maxApprovalsPerTree = 32
	maxApprovals        = 512
	maxApprovalItems    = 256 // units, and path uses, of one approval
	maxAncestorWalk     = 64
)

// procInfo is what the approvals need of a process.
type procInfo struct {
	ppid  int
	start uint64
}

func (a *scriptApprovals) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

func (a *scriptApprovals) proc(pid int) (procInfo, bool) {
	if a.stat != nil {
		return a.stat(pid)
	}
	return readProcInfo(pid)
}

// approves reports whether a decision's provenance lets its exec approve
// its script's parts: a person, a reviewer or a parent permwrap allowed
// it. (An exec allowed by a script approval is one of the parts of a
// script already approved.)
func approves(d authority.Decision) bool {
	if d.Action() != engine.Allow {
		return false
	}
	switch b := d.DecidedBy().(type) {
	case authority.ByUser:
		return b.Via != authority.ScriptApprovalVia
	case authority.ByAuthorizer, authority.ByForwarded:
		return true
	}
	return false
}

// scriptProvenance is who decides what an approval answers: the one who
// allowed the script, by way of the script approval.
func scriptProvenance(by authority.DecidedBy, depth int) authority.DecidedBy {
	switch b := by.(type) {
	case authority.ByAuthorizer:
		return authority.ByAuthorizer{Name: b.Name, Verdict: authority.VerdictAllow, Reason: authority.ScriptApprovalVia}
	case authority.ByForwarded:
		if depth < authority.MaxForwardDepth && b.Decision != nil {
			return authority.ByForwarded{Responder: b.Responder, Decision: scriptProvenance(b.Decision, depth+1)}
		}
		return authority.ByForwarded{Responder: b.Responder, Decision: authority.ByUser{Via: authority.ScriptApprovalVia}}
	}
	return authority.ByUser{Via: authority.ScriptApprovalVia}
}

// approve records what the allowed exec d approved, for the process
// tgid and its descendants. by is who allowed it.
func (a *scriptApprovals) approve(tgid int, d *engine.ExecDecision, by authority.DecidedBy) {
	if d == nil {
		return
	}
	ap := &scriptApproval{pid: tgid, at: a.clock(), by: scriptProvenance(by, 0), units: map[string]bool{}}
	if len(d.Analysis.Units) > 1 {
		for _, u := range d.Analysis.Units[1:] {
			if u.Sentinel == "" && u.Line != "" && len(ap.units) < maxApprovalItems {
				ap.units[u.Line] = true
			}
		}
	}
	ap.uses = d.PathUses[:min(len(d.PathUses), maxApprovalItems)]
	for _, e := range d.Effects[:min(len(d.Effects), maxApprovalItems)] {
		ap.effects = append(ap.effects, grantedEffect{e, ap.by})
	}
	a.record(tgid, ap, false)
}

// ruleEffects are the effects a rule's allow of the exec v grants, and
// who granted them: those of the exec's own command line that a rule may
// grant (engine.Effect.ByRule), when a rule (or a session approval)
// allowed it — not audit mode or yolo, which allow what the policy would
// have asked about.
func ruleEffects(v verdict) ([]engine.Effect, authority.DecidedBy) {
	if v.exec == nil || len(v.exec.Effects) == 0 || len(v.exec.Units) == 0 || v.result.Action != engine.Allow {
		return nil, nil
	}
	if _, audit := authority.FromRule(v.result.Rule).DecidedBy().(authority.ByAudit); audit {
		return nil, nil
	}
	u := v.exec.Units[0].Result
	if u.Action != engine.Allow {
		return nil, nil
	}
	by := authority.FromRule(u.Rule).DecidedBy()
	switch by.(type) {
	case authority.ByRule, authority.BySessionApproval:
	default:
		return nil, nil
	}
	var out []engine.Effect
	for _, e := range v.exec.Effects {
		if e.Unit == 0 && e.ByRule {
			out = append(out, e)
		}
	}
	return out, by
}

// approveRule records the effects a rule's allow of the exec v grants,
// for the process tgid and its descendants. The process keeps what an
// earlier approval gave it (the effects are added to it, within its
// time).
func (a *scriptApprovals) approveRule(tgid int, v verdict) {
	effects, by := ruleEffects(v)
	if len(effects) == 0 {
		return
	}
	ap := &scriptApproval{pid: tgid, at: a.clock(), by: by, units: map[string]bool{}}
	for _, e := range effects[:min(len(effects), maxApprovalItems)] {
		ap.effects = append(ap.effects, grantedEffect{e, by})
	}
	a.record(tgid, ap, true)
}

// record stores ap for tgid. keep: an approval the process already holds
// stays, with ap's effects added (and its own time, so nothing it held
// lasts longer); otherwise the exec replaces what the process ran before.
func (a *scriptApprovals) record(tgid int, ap *scriptApproval, keep bool) {
	if len(ap.units) == 0 && len(ap.uses) == 0 && len(ap.effects) == 0 {
		return
	}
	self, ok := a.proc(tgid)
	if !ok {
		return
	}
	ap.start, ap.root = self.start, tgid

	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byPid == nil {
		a.byPid = map[int]*scriptApproval{}
	}
	// Forget processes that are gone and approvals past their time, so
	// the map stays as small as the trees.
	now := a.clock()
	for pid, old := range a.byPid {
		if p, ok := a.proc(pid); !ok || p.start != old.start || now.Sub(old.at) > approvalLifetime {
			delete(a.byPid, pid)
		}
	}
	// The tree it counts against: the outermost approved ancestor's.
	for _, g := range a.heldLocked(self.ppid, now) {
		ap.root = g.root
	}
	if old := a.byPid[tgid]; keep && old != nil && old.start == ap.start {
		// A new value, not a change to the old one: scriptAnswer reads
		// approvals without the lock.
		merged := *old
		merged.effects = append(append([]grantedEffect(nil), old.effects...), ap.effects...)
		merged.effects = merged.effects[:min(len(merged.effects), maxApprovalItems)]
		a.byPid[tgid] = &merged
		return
	}
	delete(a.byPid, tgid) // an exec replaces what the process ran before
	if n := a.countLocked(ap.root); n >= maxApprovalsPerTree {
		a.evictOldestLocked(func(x *scriptApproval) bool { return x.root == ap.root })
	}
	if len(a.byPid) >= maxApprovals {
		a.evictOldestLocked(func(*scriptApproval) bool { return true })
	}
	a.byPid[tgid] = ap
}

func (a *scriptApprovals) countLocked(root int) int {
	n := 0
	for _, x := range a.byPid {
		if x.root == root {
			n++
		}
	}
	return n
}

func (a *scriptApprovals) evictOldestLocked(match func(*scriptApproval) bool) {
	var oldest *scriptApproval
	for _, x := range a.byPid {
		if match(x) && (oldest == nil || x.at.Before(oldest.at)) {
			oldest = x
		}
	}
	if oldest != nil {
		delete(a.byPid, oldest.pid)
	}
}

// held returns the approvals that hold for a request of process tgid:
// those of tgid and its ancestors whose process still lives and whose
// time is not up, nearest first. It reads /proc (the ancestry), so it is
// called only for a request the policy asked about.
func (a *scriptApprovals) held(tgid int) []*scriptApproval {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.heldLocked(tgid, a.clock())
}

func (a *scriptApprovals) heldLocked(pid int, now time.Time) []*scriptApproval {
	if len(a.byPid) == 0 {
		return nil
	}
	var out []*scriptApproval
	for depth := 0; depth < maxAncestorWalk && pid > 1; depth++ {
		p, ok := a.proc(pid)
		if !ok {
			return out
		}
		if ap := a.byPid[pid]; ap != nil && ap.start == p.start && now.Sub(ap.at) <= approvalLifetime {
			out = append(out, ap)
		}
		pid = p.ppid
	}
	return out
}

// scriptAnswer decides, without I/O, whether approvals answer the ask v:
// an exec whose command line is a unit of an approved script, or a call
// whose every path is a use an approved script named, with the access
// it names, or lies in the place of an approved effect and is asked
// about only because no rule names it (unnamed: the policy's
// AsksUnnamed; nil, no effect answers). Only an ask the policy layers
// made is answered (not one only a person may approve, not a deny), so
// nothing a hard guard, a protected write or permwrap's own files decide
// is ever lifted.
func scriptAnswer(v verdict, approvals []*scriptApproval, unnamed func(engine.Access, string) bool) (authority.Decision, bool) {
	if len(approvals) == 0 || v.result.Action != engine.Ask || v.result.HumanOnly {
		return authority.Decision{}, false
	}
	switch v.result.Layer {
	case engine.LayerPolicy, engine.LayerProject, engine.LayerFallback, engine.LayerBuiltin:
	default:
		return authority.Decision{}, false
	}
	if v.exec != nil {
		if len(v.exec.Analysis.Units) == 0 {
			return authority.Decision{}, false
		}
		line := v.exec.Analysis.Units[0].Line
		for _, ap := range approvals {
			if line != "" && ap.units[line] {
				return authority.Allowed(ap.by), true
			}
		}
		return authority.Decision{}, false
	}
	touches := v.touches()
	if len(touches) == 0 {
		return authority.Decision{}, false
	}
	var by authority.DecidedBy
	for _, t := range touches {
		b := coveringApproval(approvals, t, unnamed)
		if b == nil {
			return authority.Decision{}, false
		}
		if by == nil {
			by = b
		}
	}
	return authority.Allowed(by), true
}

// coveringApproval is who approved the touch t: the first approval with
// a use that covers it, or an effect whose place holds it when no rule
// names the place.
func coveringApproval(approvals []*scriptApproval, t touch, unnamed func(engine.Access, string) bool) authority.DecidedBy {
	for _, ap := range approvals {
		for _, u := range ap.uses {
			if u.Covers(t.access, t.path) {
				return ap.by
			}
		}
	}
	if unnamed == nil {
		return nil
	}
	for _, ap := range approvals {
		for _, e := range ap.effects {
			if e.Covers(t.access, t.path) && unnamed(t.access, t.path) {
				return e.by
			}
		}
	}
	return nil
}

// readProcInfo is the parent pid (field 4 of /proc/PID/stat) and the
// start time (field 22), from one read.
func readProcInfo(pid int) (procInfo, bool) {
	s, err := procfs.ReadStat(pid)
	if err != nil {
		return procInfo{}, false
	}
	return procInfo{ppid: s.PPID, start: s.StartTime}, true
}
