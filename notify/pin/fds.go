package pin

import (
	"fmt"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// The supervisor's own file descriptors, as Resolve uses them: opening
// and duplicating without EINTR failures, reading back a descriptor's path
// (d_path) or a symlink's text, and identifying a directory by mount and
// inode.

func openatRetry(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func dupCloexec(fd int) (int, error) {
	nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("pin: dup: %w", err)
	}
	return nfd, nil
}

// selfFdDir is the supervisor's /proc/self/fd, opened once: reading a
// link relative to it skips two procfs lookups ("self", "fd") per call.
var selfFdDir = sync.OnceValue(func() int {
	fd, err := unix.Open("/proc/self/fd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
})

// fdPath is the kernel's d_path of one of the supervisor's own fds.
func fdPath(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	var n int
	var err error
	if dir := selfFdDir(); dir >= 0 {
		n, err = unix.Readlinkat(dir, strconv.Itoa(fd), buf)
	} else {
		n, err = unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf)
	}
	if err != nil {
		return "", fmt.Errorf("pin: readlink /proc/self/fd/%d: %w", fd, err)
	}
	return string(buf[:n]), nil
}

var ownRoot = sync.OnceValues(func() (mntIno, error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return mntIno{}, err
	}
	defer unix.Close(fd)
	return statID(fd)
})

// rootPathOf names a thread's root directory. It is almost always the
// supervisor's own "/", which one statx confirms more cheaply than a
// readlink.
func rootPathOf(fd int) (string, error) {
	if own, err := ownRoot(); err == nil {
		if id, err := statID(fd); err == nil && id == own {
			return "/", nil
		}
	}
	return fdPath(fd)
}

// readlinkFd reads the symlink an O_PATH|O_NOFOLLOW fd refers to.
func readlinkFd(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// statID identifies a directory by mount and inode, as the kernel's
// path_equal does (a bind mount of / elsewhere has the same inode).
func statID(fd int) (mntIno, error) {
	var sx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_MNT_ID, &sx); err != nil {
		return mntIno{}, fmt.Errorf("pin: statx: %w", err)
	}
	return mntIno{mnt: sx.Mnt_id, ino: sx.Ino}, nil
}
