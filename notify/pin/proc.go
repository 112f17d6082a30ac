package pin

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/procfs"
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

// procStatus is the part of /proc/TID/status resolution and emulation need,
// read in one pass because each read of the file costs a few microseconds and
// runs on every notified syscall.
type procStatus struct {
	tgid  int
	umask uint32
	cred  Cred
	same  bool // cred is the supervisor's
	// uids, gids: real, effective, saved and filesystem ids.
	uids, gids [4]uint32
}

func readStatus(tid int) (*procStatus, error) {
	if tid <= 0 {
		return nil, fmt.Errorf("pin: invalid tid %d: %w", tid, unix.ESRCH)
	}
	p := "/proc/" + strconv.Itoa(tid) + "/status"
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT {
			err = unix.ESRCH
		}
		return nil, fmt.Errorf("pin: read status of thread %d: %w", tid, err)
	}
	defer unix.Close(fd)
	return readStatusFd(fd, tid)
}

// readStatusFd reads an open /proc/TID/status.
func readStatusFd(fd, tid int) (*procStatus, error) {
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
			return nil, fmt.Errorf("pin: read status of thread %d: %w", tid, err)
		}
		if m == 0 {
			break
		}
		n += m
	}
	return parseStatus(tid, buf[:n])
}

func parseStatus(tid int, b []byte) (*procStatus, error) {
	st := &procStatus{tgid: -1, umask: ^uint32(0)}
	var haveUID, haveGID, haveGroups, haveCap bool
	for key, val := range procfs.StatusFields(b) {
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
			var ids [4]uint32
			ok := true
			for i, f := range fields {
				n, err := strconv.ParseUint(string(f), 10, 32)
				ok = ok && err == nil
				ids[i] = uint32(n)
			}
			if !ok {
				continue
			}
			if key[0] == 'U' {
				st.uids, st.cred.UID, haveUID = ids, ids[3], true
			} else {
				st.gids, st.cred.GID, haveGID = ids, ids[3], true
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
		return nil, fmt.Errorf("pin: /proc/%d/status is missing Tgid, Umask, Uid, Gid, Groups or CapEff: %w", tid, unix.EIO)
	}
	return st, nil
}

// credp is the identity to act with: nil when it is the supervisor's.
func (st *procStatus) credp() *Cred {
	if st.same {
		return nil
	}
	return &st.cred
}

// quickStatus gets what every Resolve needs (tgid, fs uid and gid)
// from PIDFD_GET_INFO, three cheap syscalls, instead of /proc/TID/status, which
// costs ~15µs to generate. Only when the fs ids differ from the supervisor's
// is the full status read, for the groups. A thread that kept the
// supervisor's fs uid and gid but changed its supplementary groups is
// therefore judged with the supervisor's groups (docs/resolution.md).
//
// quickStatus is quickStatus that also hands back the thread's
// pidfd (or -1) for pidfd_getfd; the caller closes it.
func quickStatus(tid int) (*procStatus, int, error) {
	if tid <= 0 {
		return nil, -1, fmt.Errorf("pin: invalid tid %d: %w", tid, unix.ESRCH)
	}
	pidfd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if err != nil {
		if err == unix.ESRCH || err == unix.ENOENT {
			return nil, -1, fmt.Errorf("pin: thread %d is gone: %w", tid, unix.ESRCH)
		}
		st, err := fullStatus(tid)
		return st, -1, err
	}
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_CREDS}
	err = unix.IoctlPidfdInfo(pidfd, &info)
	if err != nil || info.Mask&unix.PIDFD_INFO_CREDS == 0 || info.Tgid == 0 {
		unix.Close(pidfd)
		if err == unix.ESRCH {
			return nil, -1, fmt.Errorf("pin: thread %d is gone: %w", tid, unix.ESRCH)
		}
		st, err := fullStatus(tid)
		return st, -1, err
	}
	self := selfCred()
	if info.Fsuid != self.uid || info.Fsgid != self.gid {
		st, err := fullStatus(tid)
		return st, pidfd, err
	}
	return &procStatus{tgid: int(info.Tgid), umask: ^uint32(0), cred: Cred{UID: info.Fsuid, GID: info.Fsgid, Groups: self.groups}, same: true}, pidfd, nil
}

func fullStatus(tid int) (*procStatus, error) {
	st, err := readStatus(tid)
	if err != nil {
		return nil, err
	}
	self := selfCred()
	st.same = st.cred.UID == self.uid && st.cred.GID == self.gid && sameGroups(st.cred.Groups, self.groups)
	return st, nil
}

// Tgid returns the thread group (process) id of thread tid.
func Tgid(tid int) (int, error) {
	st, err := readStatus(tid)
	if err != nil {
		return 0, err
	}
	return st.tgid, nil
}

// Umask returns the umask of thread tid (threads share it unless one was
// cloned without CLONE_FS, which is why it is read per TID).
func Umask(tid int) (uint32, error) {
	st, err := readStatus(tid)
	if err != nil {
		return 0, err
	}
	return st.umask, nil
}

// openProcLink opens /proc/TID/<name> as O_PATH, following the magic
// link. A missing fd entry is EBADF to the target; a missing thread is ESRCH.
func openProcLink(tid int, name string, extra int) (int, error) {
	if tid <= 0 {
		return -1, fmt.Errorf("pin: invalid tid %d: %w", tid, unix.ESRCH)
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
				return -1, fmt.Errorf("pin: thread %d is gone: %w", tid, unix.ESRCH)
			}
			if name != "cwd" && name != "root" {
				return -1, unix.EBADF
			}
		}
		return -1, fmt.Errorf("pin: open %s: %w", p, err)
	}
}

// errnoOf extracts the errno from err (os.PathError and friends), keeping
// non-errno errors as they are.
func errnoOf(err error) error {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return err
}

// CapEff returns thread tid's effective capability set.
func CapEff(tid int) (uint64, error) {
	st, err := readStatus(tid)
	if err != nil {
		return 0, err
	}
	return st.cred.CapEff, nil
}
