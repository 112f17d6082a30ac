package forwarding

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/permwrap/permwrap/internal/procfs"
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

func statInfoOf(s procfs.Stat) statInfo {
	return statInfo{ProcStat: ProcStat{PID: s.PID, PPID: s.PPID, Start: s.StartTime}, state: s.State, threads: s.NumThreads}
}

func (p ProcFS) stat(pid int) (statInfo, error) {
	if pid <= 0 {
		return statInfo{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
	}
	s, err := procfs.ReadStatAt(p.root(), pid)
	if errors.Is(err, procfs.ErrMalformed) {
		return statInfo{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return statInfo{}, fmt.Errorf("pid %d: %w", pid, ErrGone)
		}
		return statInfo{}, err
	}
	return statInfoOf(s), nil
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
		c, err := procfs.ParseChildren(b)
		if err != nil {
			return nil, fmt.Errorf("%s: malformed", t)
		}
		out = append(out, c...)
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
