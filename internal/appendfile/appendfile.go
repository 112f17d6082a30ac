// Package appendfile holds the two kernel calls the review log's file
// needs beyond package os — an exclusive lock, so permwrap processes
// sharing a log take turns to write and rotate it, and a reservation of
// room, so a record that cannot fit is never written in part — kept here
// so authority itself stays free of syscalls.
package appendfile

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive flock on f, waiting at most wait, and returns
// its release. It does not wait longer: whoever can open the file can
// hold its lock (a process permwrap runs may read the log's directory),
// so a lock still held after wait is given up and the caller goes on
// without it (err ErrLockBusy). Between permwrap processes a lock is
// held for one write. An error leaves f unlocked.
func Lock(f *os.File, wait time.Duration) (unlock func(), err error) {
	fd := int(f.Fd())
	deadline := time.Now().Add(wait)
	pause := 100 * time.Microsecond
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { unix.Flock(fd, unix.LOCK_UN) }, nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			return func() {}, err
		}
		if time.Now().After(deadline) {
			return func() {}, ErrLockBusy
		}
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// ErrLockBusy: the lock was held for longer than Lock waits.
var ErrLockBusy = errors.New("the log's lock is held by another process")

// ErrUnsupported: the filesystem cannot reserve room (the caller writes
// and cuts back a short write instead).
var ErrUnsupported = errors.New("reserving room is not supported here")

// Reserve allocates n bytes of f from off without changing its size, so
// that a write of them there cannot fail for want of room. It returns
// the filesystem's error when there is no room (ENOSPC, EDQUOT, EROFS)
// and ErrUnsupported when the filesystem cannot do it.
func Reserve(f *os.File, off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, off, n)
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		case unix.EOPNOTSUPP, unix.ENOSYS, unix.EINVAL, unix.ENODEV:
			return ErrUnsupported
		}
		return &os.PathError{Op: "reserve", Path: f.Name(), Err: err}
	}
}
