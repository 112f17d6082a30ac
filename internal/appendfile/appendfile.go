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

// Headroom is the room kept on a filesystem for the records that must
// not be lost (asks, answers, denials) once it fills with routine ones:
// an eighth of the filesystem, at most MaxHeadroom.
const MaxHeadroom = 256 << 10

// ErrHeadroom is CheckRoom's error: writing n bytes would eat into the
// headroom. It is a "no space left on device" (errors.Is ENOSPC).
var ErrHeadroom error = headroomError{}

type headroomError struct{}

func (headroomError) Error() string {
	return "no space left on device (the last of it is kept for asks and denials)"
}
func (headroomError) Is(target error) bool { return target == unix.ENOSPC }

// CheckRoom reports ErrHeadroom when writing n bytes to f would leave
// less than the headroom free on its filesystem; nil when there is room
// or the filesystem does not say.
func CheckRoom(f *os.File, n int64) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil || st.Blocks == 0 {
		return nil
	}
	bsize := int64(st.Bsize)
	total, avail := int64(st.Blocks)*bsize, int64(st.Bavail)*bsize
	if avail-n < min(MaxHeadroom, total/8) {
		return &os.PathError{Op: "write", Path: f.Name(), Err: ErrHeadroom}
	}
	return nil
}
