package notify

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Everything here is keyed by TID, not PID: threads can have their own cwd,
// fd table and credentials, and seccomp_notif.pid names the calling thread.

// Cred is the identity the kernel would use for a thread's filesystem access:
// its fs uid/gid and supplementary groups. Emulation acts with it (see
// docs/resolution.md, "Credentials").
type Cred struct {
	UID, GID uint32
	Groups   []uint32
	// CapEff is the thread's effective capability set; emulation consults it
	// where the kernel grants something only to a capable caller (linkat with
	// AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH).
	CapEff uint64
}

// rsvStatus is the part of /proc/TID/status resolution and emulation need,
// read in one pass because each read of the file costs a few microseconds and
// runs on every notified syscall.
type rsvStatus struct {
	tgid  int
	umask uint32
	cred  Cred
	same  bool // cred is the supervisor's
}

func rsvReadStatus(tid int) (*rsvStatus, error) {
	if tid <= 0 {
		return nil, fmt.Errorf("notify: invalid tid %d: %w", tid, unix.ESRCH)
	}
	p := "/proc/" + strconv.Itoa(tid) + "/status"
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT {
			err = unix.ESRCH
		}
		return nil, fmt.Errorf("notify: read status of thread %d: %w", tid, err)
	}
	defer unix.Close(fd)
	// One read: the kernel generates the whole file at the first read, and
	// it fits in a page or two.
	buf := make([]byte, 8192)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("notify: read status of thread %d: %w", tid, err)
		}
		if m == 0 {
			break
		}
		n += m
	}
	return rsvParseStatus(tid, buf[:n])
}

func rsvParseStatus(tid int, b []byte) (*rsvStatus, error) {
	st := &rsvStatus{tgid: -1, umask: ^uint32(0)}
	var haveUID, haveGID, haveGroups, haveCap bool
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		key, val, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		fields := bytes.Fields(val)
		switch string(key) {
		case "Tgid":
			if len(fields) == 1 {
				if n, err := strconv.Atoi(string(fields[0])); err == nil && n > 0 {
					st.tgid = n
				}
			}
		case "Umask":
			if len(fields) == 1 {
				if n, err := strconv.ParseUint(string(fields[0]), 8, 32); err == nil && n <= 0o777 {
					st.umask = uint32(n)
				}
			}
		case "Uid", "Gid":
			// real, effective, saved, filesystem: the kernel checks file
			// access with the fourth.
			if len(fields) != 4 {
				continue
			}
			n, err := strconv.ParseUint(string(fields[3]), 10, 32)
			if err != nil {
				continue
			}
			if key[0] == 'U' {
				st.cred.UID, haveUID = uint32(n), true
			} else {
				st.cred.GID, haveGID = uint32(n), true
			}
		case "Groups":
			haveGroups = true
			for _, f := range fields {
				n, err := strconv.ParseUint(string(f), 10, 32)
				if err != nil {
					haveGroups = false
					break
				}
				st.cred.Groups = append(st.cred.Groups, uint32(n))
			}
		case "CapEff":
			if len(fields) == 1 {
				if n, err := strconv.ParseUint(string(fields[0]), 16, 64); err == nil {
					st.cred.CapEff, haveCap = n, true
				}
			}
		}
	}
	if st.tgid < 0 || st.umask == ^uint32(0) || !haveUID || !haveGID || !haveGroups || !haveCap {
		return nil, fmt.Errorf("notify: /proc/%d/status is missing Tgid, Umask, Uid, Gid, Groups or CapEff: %w", tid, unix.EIO)
	}
	return st, nil
}

// credp is the identity to act with: nil when it is the supervisor's.
func (st *rsvStatus) credp() *Cred {
	if st.same {
		return nil
	}
	return &st.cred
}

// rsvQuickStatusPidfd gets what every Resolve needs (tgid, fs uid and gid)
// from PIDFD_GET_INFO, three cheap syscalls, instead of /proc/TID/status, which
// costs ~15µs to generate. Only when the fs ids differ from the supervisor's
// is the full status read, for the groups. A thread that kept the
// supervisor's fs uid and gid but changed its supplementary groups is
// therefore judged with the supervisor's groups (docs/resolution.md).
//
// rsvQuickStatusPidfd is rsvQuickStatus that also hands back the thread's
// pidfd (or -1) for pidfd_getfd; the caller closes it.
func rsvQuickStatusPidfd(tid int) (*rsvStatus, int, error) {
	if tid <= 0 {
		return nil, -1, fmt.Errorf("notify: invalid tid %d: %w", tid, unix.ESRCH)
	}
	pidfd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if err != nil {
		if err == unix.ESRCH || err == unix.ENOENT {
			return nil, -1, fmt.Errorf("notify: thread %d is gone: %w", tid, unix.ESRCH)
		}
		st, err := rsvFullStatus(tid)
		return st, -1, err
	}
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_CREDS}
	err = unix.IoctlPidfdInfo(pidfd, &info)
	if err != nil || info.Mask&unix.PIDFD_INFO_CREDS == 0 || info.Tgid == 0 {
		unix.Close(pidfd)
		if err == unix.ESRCH {
			return nil, -1, fmt.Errorf("notify: thread %d is gone: %w", tid, unix.ESRCH)
		}
		st, err := rsvFullStatus(tid)
		return st, -1, err
	}
	self := rsvSelfCred()
	if info.Fsuid != self.uid || info.Fsgid != self.gid {
		st, err := rsvFullStatus(tid)
		return st, pidfd, err
	}
	return &rsvStatus{tgid: int(info.Tgid), umask: ^uint32(0), cred: Cred{UID: info.Fsuid, GID: info.Fsgid, Groups: self.groups}, same: true}, pidfd, nil
}

func rsvFullStatus(tid int) (*rsvStatus, error) {
	st, err := rsvReadStatus(tid)
	if err != nil {
		return nil, err
	}
	self := rsvSelfCred()
	st.same = st.cred.UID == self.uid && st.cred.GID == self.gid && rsvSameGroups(st.cred.Groups, self.groups)
	return st, nil
}

// Tgid returns the thread group (process) id of thread tid.
func Tgid(tid int) (int, error) {
	st, err := rsvReadStatus(tid)
	if err != nil {
		return 0, err
	}
	return st.tgid, nil
}

// Umask returns the umask of thread tid (threads share it unless one was
// cloned without CLONE_FS, which is why it is read per TID).
func Umask(tid int) (uint32, error) {
	st, err := rsvReadStatus(tid)
	if err != nil {
		return 0, err
	}
	return st.umask, nil
}

// FsCreds returns the credentials the kernel uses for thread tid's file
// access: fs uid, fs gid and supplementary groups.
func FsCreds(tid int) (uid, gid uint32, groups []uint32, err error) {
	st, err := rsvReadStatus(tid)
	if err != nil {
		return 0, 0, nil, err
	}
	return st.cred.UID, st.cred.GID, st.cred.Groups, nil
}

// ThreadCred returns FsCreds plus the effective capabilities, as one value
// emulation can act with.
func ThreadCred(tid int) (*Cred, error) {
	st, err := rsvReadStatus(tid)
	if err != nil {
		return nil, err
	}
	return &st.cred, nil
}

// OpenCwd opens thread tid's working directory as O_PATH. Opening the magic
// link (rather than readlink + open) yields the directory itself even when it
// was deleted, lies outside the supervisor's mount namespace, or the name
// changed meanwhile.
func OpenCwd(tid int) (*os.File, error) {
	fd, err := rsvOpenProcLink(tid, "cwd", unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "cwd of "+strconv.Itoa(tid)), nil
}

// OpenFdPath opens, as O_PATH, what thread tid's file descriptor fd refers
// to. A closed fd gives EBADF, as the kernel would give the target.
func OpenFdPath(tid int, fd int) (*os.File, error) {
	if fd < 0 {
		return nil, unix.EBADF
	}
	nfd, err := rsvOpenProcLink(tid, "fd/"+strconv.Itoa(fd), 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(nfd), "fd "+strconv.Itoa(fd)+" of "+strconv.Itoa(tid)), nil
}

// GetFd duplicates thread tid's open file fd into the supervisor
// (pidfd_getfd), for operations that act on the open file description
// itself (fchmod, ftruncate, ...). PIDFD_THREAD lets a non-leader TID be
// named.
func GetFd(tid int, fd int) (*os.File, error) {
	if fd < 0 {
		return nil, unix.EBADF
	}
	pidfd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if err != nil {
		return nil, fmt.Errorf("notify: pidfd_open(%d): %w", tid, err)
	}
	defer unix.Close(pidfd)
	nfd, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		if err == unix.EBADF {
			return nil, unix.EBADF
		}
		return nil, fmt.Errorf("notify: pidfd_getfd(%d, %d): %w", tid, fd, err)
	}
	return os.NewFile(uintptr(nfd), "fd "+strconv.Itoa(fd)+" of "+strconv.Itoa(tid)), nil
}

// rsvOpenProcLink opens /proc/TID/<name> as O_PATH, following the magic
// link. A missing fd entry is EBADF to the target; a missing thread is ESRCH.
func rsvOpenProcLink(tid int, name string, extra int) (int, error) {
	if tid <= 0 {
		return -1, fmt.Errorf("notify: invalid tid %d: %w", tid, unix.ESRCH)
	}
	p := "/proc/" + strconv.Itoa(tid) + "/" + name
	for {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC|extra, 0)
		if err == unix.EINTR {
			continue
		}
		if err == nil {
			return fd, nil
		}
		if err == unix.ENOENT {
			// Tell "no such fd" from "no such thread".
			if _, serr := os.Stat("/proc/" + strconv.Itoa(tid)); serr != nil {
				return -1, fmt.Errorf("notify: thread %d is gone: %w", tid, unix.ESRCH)
			}
			if name != "cwd" && name != "root" {
				return -1, unix.EBADF
			}
		}
		return -1, fmt.Errorf("notify: open %s: %w", p, err)
	}
}

// rsvErrno extracts the errno from err (os.PathError and friends), keeping
// non-errno errors as they are.
func rsvErrno(err error) error {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return err
}
