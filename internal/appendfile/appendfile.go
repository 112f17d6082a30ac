// Package appendfile holds the two kernel calls the review log's file
// needs beyond package os — an exclusive lock, so permwrap processes
// sharing a log take turns to write and rotate it, and a reservation of
// room, so a record that cannot fit is never written in part — kept here
// so authority itself stays free of syscalls.
package appendfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Lock waits for an exclusive flock on f and returns its release. An
// error (a filesystem without locks) leaves f unlocked.
func Lock(f *os.File) (unlock func(), err error) {
	fd := int(f.Fd())
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return func() {}, err
	}
	return func() { unix.Flock(fd, unix.LOCK_UN) }, nil
}

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
