package pin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/procfs"
)

// Objects whose meaning depends on who opens them. The supervisor opening
// them would act as itself, not as the target, so they get special care.

// procMounts lists where procfs is mounted, read once: a sandboxed
// process cannot mount (Landlock forbids mount changes, the filter denies
// the mount calls), so the list only grows by the supervisor's own doing.
var procMounts = sync.OnceValue(func() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return []string{"/proc"}
	}
	var out []string
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		pre, post, ok := bytes.Cut(line, []byte(" - "))
		if !ok {
			continue
		}
		if f := bytes.Fields(post); len(f) == 0 || string(f[0]) != "proc" {
			continue
		}
		f := bytes.Fields(pre)
		if len(f) < 5 {
			continue
		}
		out = append(out, unescapeMount(string(f[4])))
	}
	if len(out) == 0 {
		out = []string{"/proc"}
	}
	return out
})

// unescapeMount decodes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// procEntry splits a path inside a procfs /proc/<pid> directory into the
// pid and the rest ("" for the directory itself).
func procEntry(p string) (pid int, rest string, ok bool) {
	for _, m := range procMounts() {
		var after string
		if m == "/" {
			after = strings.TrimPrefix(p, "/")
		} else if strings.HasPrefix(p, m+"/") {
			after = p[len(m)+1:]
		} else {
			continue
		}
		head, tail, _ := strings.Cut(after, "/")
		n, err := strconv.Atoi(head)
		if err != nil || n <= 0 {
			continue
		}
		return n, tail, true
	}
	return 0, "", false
}

// procSafe are /proc/<pid> files any process may read, whose open does no
// ptrace_may_access check on the opener. Everything else (mem, environ,
// auxv, maps, fd/, …) is checked against whoever opens it, which for an
// emulated open is the supervisor.
var procSafe = map[string]bool{
	"stat": true, "statm": true, "status": true, "cmdline": true, "comm": true,
	"cgroup": true, "limits": true, "loginuid": true, "sessionid": true,
	"oom_score": true, "oom_score_adj": true, "wchan": true, "schedstat": true,
	"cpuset": true, "task": true,
}

// procGuard refuses to act, as the supervisor, on another process's
// /proc entries beyond what any process may read: otherwise a target allowed
// to read /proc could be handed the supervisor's /proc/PID/mem.
func procGuard(r *Resolved, readOnly bool) error {
	if r.Kind != KindPath {
		return nil
	}
	pid, rest, ok := procEntry(r.Path)
	if !ok || pid == r.Tgid {
		return nil
	}
	if tg, err := Tgid(pid); err == nil && tg == r.Tgid {
		return nil // a thread of the target, named by its TID
	}
	if tracedBy(r, r.Tgid) {
		// The target traces that process: ptrace already gave it the
		// process's memory and registers, so its /proc entries give it
		// nothing more (gdb reads and writes /proc/PID/mem).
		return nil
	}
	if isIDMapFile(r) && statusField(r, "PPid:") == r.Tgid {
		// The user-namespace maps of the target's own child, which a
		// parent writes for a child it started in a new user namespace
		// (Go's SysProcAttr.UidMappings, newuidmap). They are opened as
		// the target opens them (nsopen.go), and the kernel checks the
		// target's right to write them as it would bare.
		return nil
	}
	if readOnly {
		parts := strings.Split(rest, "/")
		// /proc/N, /proc/N/task, /proc/N/task/T and the safe files of
		// either.
		if len(parts) >= 2 && parts[0] == "task" {
			if _, err := strconv.Atoi(parts[1]); err == nil {
				parts = parts[2:]
			}
		}
		switch {
		case len(parts) == 0, len(parts) == 1 && parts[0] == "":
			return nil
		case len(parts) == 1 && procSafe[parts[0]]:
			return nil
		}
	}
	return fmt.Errorf("pin: refusing to open %s of another process on the target's behalf: %w", r.Path, unix.EACCES)
}

// tracedBy reports whether the process (or thread) whose /proc directory
// holds r's last component is ptrace-traced by a thread of process tgid.
func tracedBy(r *Resolved, tgid int) bool {
	tracer := statusField(r, "TracerPid:")
	if tracer <= 0 {
		return false
	}
	tg, err := Tgid(tracer)
	return err == nil && tg == tgid
}

// statusField reads a numeric field (name with its colon) of the status
// file in the /proc directory that holds r's last component; -1 when it
// cannot be read. The file is read through the pinned directory, so it
// describes the very process instance whose entry was pinned (a pid
// reused since has another directory).
func statusField(r *Resolved, name string) int {
	if r.Dir == nil {
		return -1
	}
	fd, err := unix.Openat(int(r.Dir.Fd()), "status", unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1
	}
	f := os.NewFile(uintptr(fd), "status")
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := io.ReadFull(f, b)
	for line := range bytes.SplitSeq(b[:n], []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(name)); ok {
			if x, err := strconv.Atoi(string(bytes.TrimSpace(v))); err == nil {
				return x
			}
			return -1
		}
	}
	return -1
}

// isDevTty reports the /dev/tty device (5:0), which names the opener's
// controlling terminal.
func isDevTty(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && unix.Major(st.Rdev) == 5 && unix.Minor(st.Rdev) == 0
}

// openCtty opens thread tid's controlling terminal, which is what the
// target's open of /dev/tty would give it (the supervisor's own open would
// give the supervisor's terminal, or ENXIO).
func openCtty(tid int, flags int) (*File, error) {
	st, err := procfs.ReadStat(tid)
	if errors.Is(err, procfs.ErrMalformed) {
		return nil, fmt.Errorf("pin: /proc/%d/stat: %v: %w", tid, err, unix.EIO)
	}
	if err != nil {
		return nil, fmt.Errorf("pin: read stat of %d: %w", tid, errnoOf(err))
	}
	if st.TTYNr < 0 || st.TTYNr > math.MaxUint32 {
		return nil, fmt.Errorf("pin: malformed tty_nr in /proc/%d/stat: %w", tid, unix.EIO)
	}
	nr := uint64(st.TTYNr)
	if nr == 0 {
		return nil, unix.ENXIO // no controlling terminal
	}
	major := uint32(nr>>8) & 0xfff
	minor := uint32(nr&0xff) | uint32(nr>>12)&0xfff00
	want := unix.Mkdev(major, minor)
	candidates := []string{fmt.Sprintf("/dev/char/%d:%d", major, minor)}
	if major >= 136 && major <= 143 {
		candidates = append(candidates, "/dev/pts/"+strconv.Itoa(int(minor+(major-136)*256)))
	}
	for _, p := range candidates {
		fd, err := openPathRetry(p, flags|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			if err == unix.ENOENT {
				continue
			}
			return nil, err
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == want {
			return newFile(fd, "/dev/tty"), nil
		}
		unix.Close(fd)
	}
	return nil, fmt.Errorf("pin: controlling terminal %d:%d of %d has no device node here: %w", major, minor, tid, unix.ENXIO)
}

// Sysctls under /proc/sys are looked up in the opener's namespaces: the
// kernel picks the set of net.*, user.* and the IPC tables by the
// namespaces of the process that looks the name up (net_ctl_header_lookup
// and its twins use current->nsproxy), and checks the opener's rights in
// that namespace's owner. Opened by the supervisor for a target in a
// network namespace of its own (`unshare -rn`, a container), the file
// would be the supervisor's namespace's — the host's — and a write the
// target meant for its own namespace would change the host's, with
// permwrap's rights. Until such files are opened as the target (issue
// 28), they are refused when the target's namespace for them is not the
// supervisor's. The uts names (kernel.hostname) and pid files are read
// and written in the writer's namespaces, which is the target's.

// GuardError is an open the supervisor refuses because it could not make
// it as the target's own: the errno is EACCES, and Why says why, for the
// person.
type GuardError struct {
	Path, Why string
}

func (e *GuardError) Error() string { return "pin: refusing " + e.Path + ": " + e.Why }
func (e *GuardError) Unwrap() error { return unix.EACCES }

// ipcSysctls are the kernel.* sysctls of the IPC namespace.
var ipcSysctls = map[string]bool{
	"shmmax": true, "shmall": true, "shmmni": true, "shm_rmid_forced": true,
	"msgmax": true, "msgmni": true, "msgmnb": true, "auto_msgmni": true,
	"sem": true, "sem_next_id": true, "msg_next_id": true, "shm_next_id": true,
}

// sysctlNamespace is the namespace whose table holds the /proc/sys entry
// rest ("net/ipv4/ip_forward"): "net", "user" or "ipc", or "" for the
// tables every namespace shares.
func sysctlNamespace(rest string) string {
	top, sub, _ := strings.Cut(rest, "/")
	name, _, _ := strings.Cut(sub, "/")
	switch {
	case top == "net":
		return "net"
	case top == "user":
		return "user"
	case top == "fs" && name == "mqueue":
		return "ipc"
	case top == "kernel" && ipcSysctls[name]:
		return "ipc"
	}
	return ""
}

// procSysEntry splits a path inside a procfs mount's sys directory into
// what follows "sys/" ("" for the directory itself).
func procSysEntry(p string) (string, bool) {
	for _, m := range procMounts() {
		dir := m + "/sys"
		if m == "/" {
			dir = "/sys"
		}
		if p == dir {
			return "", true
		}
		if rest, ok := strings.CutPrefix(p, dir+"/"); ok {
			return rest, true
		}
	}
	return "", false
}

// likeSupervisor reports whether the /proc entry link ("root", "ns/net")
// of thread or process tid is the supervisor's own: the same directory,
// the same namespace. False when either cannot be looked at.
func likeSupervisor(tid int, link string) bool {
	var a, b unix.Stat_t
	return unix.Stat("/proc/"+strconv.Itoa(tid)+"/"+link, &a) == nil && unix.Stat("/proc/self/"+link, &b) == nil &&
		a.Dev == b.Dev && a.Ino == b.Ino
}

// sysctlGuard refuses a /proc/sys entry of a namespace the target does
// not share with the supervisor (or whose namespace cannot be told: it is
// then taken as its own).
func sysctlGuard(r *Resolved) error {
	if r.Kind != KindPath {
		return nil
	}
	rest, ok := procSysEntry(r.Path)
	if !ok {
		return nil
	}
	ns := sysctlNamespace(rest)
	if ns == "" {
		return nil
	}
	if likeSupervisor(r.tid, "ns/"+ns) {
		return nil
	}
	return &GuardError{Path: r.Path, Why: "the process is in a " + ns + " namespace of its own, and permwrap would open its own namespace's (the host's) in its place"}
}
