package supervisor

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/permwrap/permwrap/engine"
)

// scriptApprovals remembers, when a person allows a shell to run a
// script, the script's units for that shell's process tree: the execs the
// script then makes (`bash -c "make && git push"` → `make`, `git push`)
// were already shown and allowed, so they do not ask again. It only ever
// turns an ask into an allow for exactly a unit's command line in a
// descendant of the approved shell while that shell lives; a deny is never
// touched, and every exec is still judged.
type scriptApprovals struct {
	mu    sync.Mutex
	byPid map[int]*scriptApproval
}

type scriptApproval struct {
	start uint64 // the shell's start time: a reused pid is not the same shell
	units map[string]bool
}

// approve records the units of an allowed exec for the process tgid.
func (a *scriptApprovals) approve(tgid int, d *engine.ExecDecision) {
	if d == nil || len(d.Analysis.Units) < 2 {
		return
	}
	start, ok := procStart(tgid)
	if !ok {
		return
	}
	ap := &scriptApproval{start: start, units: map[string]bool{}}
	for _, u := range d.Analysis.Units[1:] {
		if u.Sentinel == "" && u.Line != "" {
			ap.units[u.Line] = true
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byPid == nil {
		a.byPid = map[int]*scriptApproval{}
	}
	// Forget shells that are gone, so the map stays as small as the tree.
	for pid, old := range a.byPid {
		if s, ok := procStart(pid); !ok || s != old.start {
			delete(a.byPid, pid)
		}
	}
	a.byPid[tgid] = ap
}

// covers reports whether line was approved as a unit of a script run by
// tgid or one of its ancestors.
func (a *scriptApprovals) covers(tgid int, line string) bool {
	a.mu.Lock()
	n := len(a.byPid)
	a.mu.Unlock()
	if n == 0 || line == "" {
		return false
	}
	pid := tgid
	for depth := 0; depth < 64 && pid > 1; depth++ {
		a.mu.Lock()
		ap := a.byPid[pid]
		a.mu.Unlock()
		if ap != nil && ap.units[line] {
			if s, ok := procStart(pid); ok && s == ap.start {
				return true
			}
		}
		ppid, ok := procParent(pid)
		if !ok {
			return false
		}
		pid = ppid
	}
	return false
}

// procStat returns the fields of /proc/PID/stat after the command name.
func procStat(pid int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(s[i+1:]), true
}

// procParent is the parent pid (field 4 of /proc/PID/stat).
func procParent(pid int) (int, bool) {
	f, ok := procStat(pid)
	if !ok || len(f) < 2 {
		return 0, false
	}
	p, err := strconv.Atoi(f[1])
	return p, err == nil
}

// procStart is the start time (field 22 of /proc/PID/stat).
func procStart(pid int) (uint64, bool) {
	f, ok := procStat(pid)
	if !ok || len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return v, err == nil
}
