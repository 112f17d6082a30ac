package pin

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Pidfd watches one process or thread instance through a pidfd: it
// names that instance for its whole life, so a reused pid can never be
// taken for it. Exited is one poll(2), no /proc read: what a cache keyed
// by pid (the nesting tree's node of a process) checks on every lookup.
//
// It is safe for concurrent use: Close waits for checks in progress, so a
// check never polls a descriptor number that was closed and reused.
type Pidfd struct {
	mu sync.RWMutex
	fd int // -1 once closed
}

// OpenPidfd opens a pidfd for the process pid. It names whatever
// process holds pid at the moment of the call: the caller proves that
// this is the instance it means (by a start time read after the open, or
// a seccomp notification still valid after it).
func OpenPidfd(pid int) (*Pidfd, error) {
	return openPidfd(pid, 0)
}

// OpenThread opens a pidfd for the thread tid and returns its thread
// group (process) id, read from the pidfd itself (PIDFD_GET_INFO, Linux
// 6.13; /proc/TID/status before), so the id and the pidfd name the same
// thread. As for OpenPidfd, the caller proves the instance.
func OpenThread(tid int) (*Pidfd, int, error) {
	p, err := openPidfd(tid, unix.PIDFD_THREAD)
	if err != nil {
		return nil, 0, err
	}
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_PID}
	if err := unix.IoctlPidfdInfo(p.fd, &info); err == nil && info.Tgid != 0 {
		return p, int(info.Tgid), nil
	} else if err == unix.ESRCH {
		p.Close()
		return nil, 0, fmt.Errorf("pin: thread %d is gone: %w", tid, unix.ESRCH)
	}
	// Older kernels: /proc, read after the pidfd was opened. If the tid
	// was reused in between, the caller's proof of the instance fails.
	tgid, err := Tgid(tid)
	if err != nil {
		p.Close()
		return nil, 0, err
	}
	return p, tgid, nil
}

func openPidfd(pid int, flags int) (*Pidfd, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pin: pid %d: %w", pid, unix.ESRCH)
	}
	for {
		fd, err := unix.PidfdOpen(pid, flags)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if errors.Is(err, unix.ESRCH) || errors.Is(err, unix.ENOENT) {
				return nil, fmt.Errorf("pin: process %d is gone: %w", pid, unix.ESRCH)
			}
			return nil, fmt.Errorf("pin: pidfd_open %d: %w", pid, err)
		}
		return &Pidfd{fd: fd}, nil
	}
}

// Exited reports whether the instance has exited: for a process, the
// whole thread group (a zombie has exited); for a thread, that thread.
// An error polling counts as exited, so a caller never keeps trusting an
// entry it cannot check.
func (p *Pidfd) Exited() bool {
	closed, n, _, err := p.poll()
	return closed || err != nil || n != 0
}

// poll is one poll(2) of the pidfd for POLLIN (readable once the instance
// has exited), retried on EINTR; closed when Close has run.
func (p *Pidfd) poll() (closed bool, n int, revents int16, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.fd < 0 {
		return true, 0, 0, nil
	}
	fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return false, n, fds[0].Revents, err
	}
}

// Kill sends SIGKILL to the instance (and only to it); one already gone
// is not an error.
func (p *Pidfd) Kill() error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	err := unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0)
	if err == unix.ESRCH {
		return nil // already gone
	}
	return err
}

// Alive is !Exited (the forwarding tree's Pin interface).
func (p *Pidfd) Alive() bool { return !p.Exited() }

// Close releases the pidfd.
func (p *Pidfd) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd < 0 {
		return nil
	}
	err := unix.Close(p.fd)
	p.fd = -1
	return err
}
