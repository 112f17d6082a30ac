package supervisor

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/procfs"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// Calls on other processes that Landlock does not scope: prlimit64,
// setpriority, ioprio_set and the sched_set* family. (Signals and
// everything ptrace-checked — process_vm_readv, /proc/PID/mem, kcmp,
// process_madvise, pidfd_getfd — are scoped by Landlock to the sandbox,
// and ptrace, process_vm_writev and pidfd_getfd are refused in BPF.)
//
// The filter leaves a call on the caller itself (pid 0) alone. Any other
// is notified; the decoder checks that every process it would act on is
// in the sandboxed tree — a descendant of the watchdog, which as a
// subreaper keeps every orphan of the tree beneath it — and the call is
// continued, or refused. The decision reads no memory: the pid and the
// "which" are registers. What it does rely on is the pid naming the same
// process when the continued call runs: a pid is reused only after its
// process was reaped, and the window is the few microseconds between the
// answer and the target's return to the call (docs/security.md, "pid
// reuse"). A raise of RLIMIT_CORE by a caller that could exceed the hard
// limit of 0 the init stage set is refused too (core dumps are files the
// kernel writes in the process's working directory).

// Which-values of setpriority and ioprio_set.
const (
	prioProcess      = 0 // PRIO_PROCESS
	prioPgrp         = 1 // PRIO_PGRP
	ioprioWhoProcess = 1 // IOPRIO_WHO_PROCESS
	ioprioWhoPgrp    = 2 // IOPRIO_WHO_PGRP
)

// capSysResource is CAP_SYS_RESOURCE's bit in CapEff.
const capSysResource = 1 << 24

// tree says which processes are in the sandboxed tree.
type tree struct {
	watchdog int
}

// contains reports whether pid (a process or thread id, in permwrap's
// pid namespace) belongs to the sandboxed tree.
func (t *tree) contains(pid int) bool {
	if t == nil || pid <= 0 || pid == t.watchdog {
		return false
	}
	for depth := 0; depth < 1<<12; depth++ {
		ppid, ok := procParent(pid)
		switch {
		case !ok || ppid <= 1:
			return false
		case ppid == t.watchdog:
			return true
		}
		pid = ppid
	}
	return false
}

// ownPidNS reports whether thread tid is in permwrap's pid namespace, in
// which the pids it passes are the ones permwrap sees. A process in a pid
// namespace the tree created sees only processes of that namespace (and
// those beneath), all of them the tree's.
func ownPidNS(tid int) (bool, error) {
	self, err := os.Stat("/proc/self/ns/pid")
	if err != nil {
		return false, err
	}
	theirs, err := os.Stat("/proc/" + strconv.Itoa(tid) + "/ns/pid")
	if err != nil {
		return false, err
	}
	return os.SameFile(self, theirs), nil
}

// processCall is a call on other processes, decided when decoded.
type processCall struct {
	callDefaults
	name   string
	target string // for messages: "pid 123", "process group 7"
	why    string // "" when allowed: every process it acts on is in the tree
}

func (c *processCall) judge(*engine.Policy) verdict {
	if c.why == "" {
		return verdict{result: allowUnchecked(""), access: c.name, value: c.target}
	}
	res := engine.Result{
		Action: engine.Deny,
		Check:  engine.Check{Surface: engine.SurfacePath, Value: c.target},
		Layer:  engine.LayerBuiltin,
		Rule:   engine.Rule{Surface: engine.SurfacePath, Action: engine.Deny, Origin: engine.OriginBuiltin, Reason: c.why},
	}
	return verdict{result: res, access: c.name, value: c.target}
}

// perform continues the call: what it acts on was checked from registers
// alone (see above).
func (c *processCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	_ = s.l.Continue(id)
}
func (c *processCall) close() {}

// onPid checks a call that names one process (pid, as a register).
func (d *decoder) onPid(name string, pid int) (decoded, error) {
	c := &processCall{name: name, target: "pid " + strconv.Itoa(pid)}
	if pid == 0 {
		return c, nil // the caller itself
	}
	if pid < 0 {
		return nil, kernelErr(unix.EINVAL, "negative pid")
	}
	own, err := ownPidNS(d.tid)
	if err != nil {
		return nil, &refusal{errno: unix.EPERM, why: "reading the caller's pid namespace", err: err}
	}
	if own && !d.tree.contains(pid) {
		c.why = "permwrap lets sandboxed processes change only processes of the sandbox (its own limits and priority included)"
	}
	return c, nil
}

// onPgrp checks a call that names a process group: every member must be
// in the tree. pgrp 0 is the caller's own.
func (d *decoder) onPgrp(name string, pgrp int) (decoded, error) {
	if pgrp < 0 {
		return nil, kernelErr(unix.EINVAL, "negative process group")
	}
	own, err := ownPidNS(d.tid)
	if err != nil {
		return nil, &refusal{errno: unix.EPERM, why: "reading the caller's pid namespace", err: err}
	}
	if pgrp == 0 {
		g, ok := procPgrp(d.tid)
		if !ok {
			return nil, &refusal{errno: unix.EPERM, why: "reading the caller's process group"}
		}
		if !own {
			return &processCall{name: name, target: "its own process group"}, nil
		}
		pgrp = g
	}
	c := &processCall{name: name, target: "process group " + strconv.Itoa(pgrp)}
	if !own {
		return c, nil
	}
	members, err := pgrpMembers(pgrp)
	if err != nil {
		return nil, &refusal{errno: unix.EPERM, why: "listing the process group", err: err}
	}
	for _, m := range members {
		if !d.tree.contains(m) {
			c.why = fmt.Sprintf("process group %d holds process %d, which is not in the sandbox", pgrp, m)
			break
		}
	}
	return c, nil
}

// decodeOtherPid: sched_setaffinity, sched_setscheduler, sched_setparam,
// sched_setattr (pid in argument 0; the filter sends only pid != 0).
func decodeOtherPid(d *decoder) (decoded, error) {
	return d.onPid(notify.SyscallName(d.n.Nr), int(int32(d.arg(0))))
}

// decodeWhich: setpriority and ioprio_set (which, who, value). A user's
// processes are never all the sandbox's.
func decodeWhich(procWhich, pgrpWhich int) decodeFunc {
	return func(d *decoder) (decoded, error) {
		name := notify.SyscallName(d.n.Nr)
		which, who := int(int32(d.arg(0))), int(int32(d.arg(1)))
		switch which {
		case procWhich:
			return d.onPid(name, who)
		case pgrpWhich:
			return d.onPgrp(name, who)
		case pgrpWhich + 1: // PRIO_USER, IOPRIO_WHO_USER
			return &processCall{name: name, target: "user " + strconv.Itoa(who),
				why: "it would change every process of a user, outside the sandbox too"}, nil
		}
		return nil, kernelErr(unix.EINVAL, "bad which")
	}
}

// decodePrlimit: prlimit64(pid, resource, new, old).
func decodePrlimit(d *decoder) (decoded, error) {
	pid := int(int32(d.arg(0)))
	if uint32(d.arg(1)) == unix.RLIMIT_CORE && d.arg(2) != 0 {
		if c, err := d.coreLimit("prlimit64"); c != nil || err != nil {
			return c, err
		}
	}
	return d.onPid("prlimit64", pid)
}

// decodeSetrlimit: setrlimit(RLIMIT_CORE, ...) (the filter sends no other).
func decodeSetrlimit(d *decoder) (decoded, error) {
	if c, err := d.coreLimit("setrlimit"); c != nil || err != nil {
		return c, err
	}
	return &processCall{name: "setrlimit", target: "RLIMIT_CORE"}, nil
}

// coreLimit refuses setting RLIMIT_CORE by a caller with CAP_SYS_RESOURCE,
// which could raise it past the hard limit of 0; for any other caller the
// kernel holds that limit (nil: go on).
func (d *decoder) coreLimit(name string) (decoded, error) {
	capEff, err := pin.CapEff(d.tid)
	if err != nil {
		return nil, &refusal{errno: unix.EPERM, why: "reading the caller's capabilities", err: err}
	}
	if capEff&capSysResource == 0 {
		return nil, nil
	}
	return &processCall{name: name, target: "RLIMIT_CORE",
		why: "core dumps are files the kernel writes where the process runs, past permwrap's checks; their size limit stays 0"}, nil
}

// procPgrp is a process's group (field 5 of /proc/PID/stat).
func procPgrp(pid int) (int, bool) {
	s, err := procfs.ReadStat(pid)
	return s.Pgrp, err == nil
}

// pgrpMembers lists the processes in process group pgrp.
func pgrpMembers(pgrp int) ([]int, error) {
	pids, err := procfs.Pids()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, pid := range pids {
		if g, ok := procPgrp(pid); ok && g == pgrp {
			out = append(out, pid)
		}
	}
	return out, nil
}

// procParent is the parent pid (field 4 of /proc/PID/stat).
func procParent(pid int) (int, bool) {
	s, err := procfs.ReadStat(pid)
	return s.PPID, err == nil
}
