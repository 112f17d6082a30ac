package forwarding

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ProcFS reads processes from /proc. Its pins re-read the process's start
// time and state: exact, but a /proc read per check; the supervisor can
// supply pidfd pins instead (one poll per check).
type ProcFS struct {
	// Root is the proc mount, "" meaning /proc.
	Root string
}

func (p ProcFS) root() string {
	if p.Root == "" {
		return "/proc"
	}
	return p.Root
}

// statInfo is what /proc/PID/stat says that the tree uses.
type statInfo struct {
	ProcStat
	state   byte
	threads int
}

// parseStat reads a /proc/PID/stat line. The command name (field 2) is in
// parentheses and may hold anything, parentheses and spaces included, so
// the fields are counted from the last ')'.
func parseStat(b []byte) (statInfo, error) {
	var s statInfo
	open := bytes.IndexByte(b, '(')
	close := bytes.LastIndexByte(b, ')')
	if open <= 0 || close < open {
		return s, errors.New("malformed stat")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil || pid <= 0 {
		return s, errors.New("malformed stat pid")
	}
	f := strings.Fields(string(b[close+1:]))
	// f[0] is field 3 (state), so field k is f[k-3].
	const (
		fState   = 3
		fPPid    = 4
		fThreads = 20
		fStart   = 22
	)
	if len(f) < fStart-2 {
		return s, errors.New("short stat")
	}
	if len(f[0]) != 1 {
		return s, errors.New("malformed stat state")
	}
	ppid, err := strconv.Atoi(f[fPPid-3])
	if err != nil || ppid < 0 {
		return s, errors.New("malformed stat ppid")
	}
	threads, err := strconv.Atoi(f[fThreads-3])
	if err != nil || threads < 0 {
		return s, errors.New("malformed stat threads")
	}
	start, err := strconv.ParseUint(f[fStart-3], 10, 64)
	if err != nil {
		return s, errors.New("malformed stat starttime")
	}
	s.PID, s.PPID, s.Start, s.state, s.threads = pid, ppid, start, f[0][0], threads
	return s, nil
}

func (p ProcFS) stat(pid int) (statInfo, error) {
	if pid <= 0 {
		return statInfo{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	b, err := os.ReadFile(filepath.Join(p.root(), strconv.Itoa(pid), "stat"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return statInfo{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
		}
		return statInfo{}, err
	}
	s, err := parseStat(b)
	if err != nil {
		return statInfo{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return s, nil
}

// exited reports whether a process in this state has ended: a dead
// process, or a zombie whose other threads are gone too (a zombie leader
// with live threads is a running process).
func (s statInfo) exited() bool {
	return s.state == 'X' || s.state == 'x' || (s.state == 'Z' && s.threads <= 1)
}

// Stat reads pid's parent and start time.
func (p ProcFS) Stat(pid int) (ProcStat, error) {
	s, err := p.stat(pid)
	if err != nil {
		return ProcStat{}, err
	}
	if s.exited() {
		return ProcStat{}, fmt.Errorf("pid %d has exited: %w", pid, ErrGone)
	}
	return s.ProcStat, nil
}

// Pin watches the process st names.
func (p ProcFS) Pin(st ProcStat) (Pin, error) {
	pin := statPin{fs: p, pid: st.PID, start: st.Start}
	if !pin.Alive() {
		return nil, fmt.Errorf("pid %d: %w", st.PID, ErrGone)
	}
	return pin, nil
}

// Children lists pid's children, from /proc/PID/task/*/children.
func (p ProcFS) Children(pid int) ([]int, error) {
	tasks, err := filepath.Glob(filepath.Join(p.root(), strconv.Itoa(pid), "task", "*", "children"))
	if err != nil {
		return nil, err
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // the thread exited
			}
			return nil, err
		}
		for _, f := range strings.Fields(string(b)) {
			n, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("%s: malformed", t)
			}
			out = append(out, n)
		}
	}
	return out, nil
}

type statPin struct {
	fs    ProcFS
	pid   int
	start uint64
}

func (s statPin) Alive() bool {
	st, err := s.fs.stat(s.pid)
	return err == nil && st.Start == s.start && !st.exited()
}

func (statPin) Close() error { return nil }
