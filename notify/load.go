package notify

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// InstallFlags reports which optional flags the kernel accepted.
type InstallFlags struct {
	// WaitKillable: once the supervisor has received a notification, the
	// target ignores non-fatal signals until it is answered, so an ask a
	// person is deliberating on is not torn down and re-raised.
	WaitKillable bool
}

const installFlagsBase = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER |
	unix.SECCOMP_FILTER_FLAG_TSYNC |
	unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH

// Install loads p into the calling process, on all its threads, and returns
// the listener fd (O_CLOEXEC: hand it over before exec). It sets
// no-new-privs first, then tries WAIT_KILLABLE_RECV and falls back without
// it only when the kernel refuses that flag (EINVAL).
//
// After Install returns, every watched syscall of this process blocks until
// someone serves the listener: the caller must pass the fd on with calls
// the filter does not watch (sendmsg, write, close) and must not open a
// file first.
func Install(p *Program) (listenerFd int, used InstallFlags, err error) {
	if err := p.validate(); err != nil {
		return -1, used, err
	}
	// NNP is per thread; seccomp TSYNC copies it to the other threads, so
	// set it and load on the same thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, used, fmt.Errorf("notify: setting no-new-privs: %w", err)
	}
	fd, err := sysSeccompSetFilter(installFlagsBase|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, p.Insns)
	if err == nil {
		return fd, InstallFlags{WaitKillable: true}, nil
	}
	if !errors.Is(err, unix.EINVAL) {
		return -1, used, installError(err)
	}
	// EINVAL also covers a bad program; if the retry fails the same way the
	// flag was not the reason, and the error says so.
	fd, err = sysSeccompSetFilter(installFlagsBase, p.Insns)
	if err != nil {
		return -1, used, installError(err)
	}
	return fd, InstallFlags{}, nil
}

func installError(err error) error {
	switch {
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("notify: loading seccomp filter: another seccomp listener is already active in this process tree (nested supervisor?): %w", err)
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("notify: loading seccomp filter: a thread of this process could not be synchronised: %w", err)
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("notify: loading seccomp filter: refused (an outer filter denies new listeners, or no-new-privs is unset): %w", err)
	}
	return fmt.Errorf("notify: loading seccomp filter: %w", err)
}
