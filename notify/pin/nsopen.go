package pin

// #cgo CFLAGS: -Wall -Werror
import "C"

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The user-namespace files of a process — /proc/PID/uid_map, gid_map,
// projid_map and setgroups — are checked by the kernel against the
// credentials of whoever *opened* them, not only of whoever writes: the
// opener's user namespace must be the map's or its parent
// (seq_user_ns), mapping uid 0 needs CAP_SETFCAP in the opener's view
// (verify_root_map), and a one-id mapping must name the opener's euid.
// Opened by the supervisor, the file would carry the supervisor's
// credentials: in the initial namespace, and, when permwrap runs as root,
// with all of root's capabilities. Then a nested namespace's map could
// not be written at all (`unshare -Ur unshare -Ur` fails), while a root
// process that had given up CAP_SETFCAP could map root anyway — which
// the kernel refuses it on its own (it would let it plant file
// capabilities valid outside the namespace).
//
// So these files are opened as the target opens them: by a helper
// process that takes the target's ids, joins the target's user namespace
// and opens the pinned file there (nsopen.c: joining a user namespace
// needs a single-threaded process, which a Go program never is, so the
// helper runs as a C constructor of this very binary, before Go starts).
// The fd it sends back carries exactly the credentials the target's own
// open would have.

const nsopenArg = "__permwrap_nsopen"

// idMapFiles are the /proc/PID files whose open is judged by the opener.
var idMapFiles = map[string]bool{"uid_map": true, "gid_map": true, "projid_map": true, "setgroups": true}

// isIDMapFile reports whether r names one of the idMapFiles: the target's
// own or its child's (procGuard refuses any other process's).
func isIDMapFile(r *Resolved) bool {
	if r.Kind != KindPath || r.Object == nil {
		return false
	}
	_, rest, ok := procEntry(r.Path)
	if !ok {
		return false
	}
	parts := strings.Split(rest, "/")
	if len(parts) == 3 && parts[0] == "task" {
		parts = parts[2:]
	}
	return len(parts) == 1 && idMapFiles[parts[0]]
}

// nsopenTimeout bounds the helper: opening a proc file does not block.
const nsopenTimeout = 10 * time.Second

// openInUserNS opens r, an id-map file of the target's own process, in the
// target's user namespace with its ids (nsopen.c), and returns the file.
func openInUserNS(r *Resolved, flags int) (*File, error) {
	ns, err := os.Open("/proc/" + strconv.Itoa(r.tid) + "/ns/user")
	if err != nil {
		return nil, fmt.Errorf("pin: the user namespace of %d: %w", r.tid, errnoOf(err))
	}
	defer ns.Close()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("pin: socketpair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "nsopen"), os.NewFile(uintptr(pair[1]), "nsopen-helper")
	defer ours.Close()

	self := selfCred()
	uid, gid, groups := self.uid, self.gid, self.groups
	if r.Cred != nil {
		uid, gid, groups = r.Cred.UID, r.Cred.GID, r.Cred.Groups
	}
	gs := "-"
	if len(groups) > 0 {
		s := make([]string, len(groups))
		for i, g := range groups {
			s[i] = strconv.FormatUint(uint64(g), 10)
		}
		gs = strings.Join(s, ",")
	}
	// exec.Cmd takes *os.File: lend it a duplicate of the pin, closed
	// once the helper has started.
	objFd, err := dupCloexec(int(r.Object.Fd()))
	if err != nil {
		return nil, err
	}
	obj := os.NewFile(uintptr(objFd), r.Path)
	defer obj.Close()
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{"permwrap", nsopenArg, strconv.Itoa(flags &^ (unix.O_CREAT | unix.O_EXCL | unix.O_TMPFILE)), strconv.FormatUint(uint64(uid), 10), strconv.FormatUint(uint64(gid), 10), gs},
		Env:        []string{},
		ExtraFiles: []*os.File{theirs, ns, obj},
	}
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		return nil, fmt.Errorf("pin: starting the namespace opener: %w", unix.EACCES)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	_ = ours.SetReadDeadline(time.Now().Add(nsopenTimeout))
	fd, errno, rerr := recvOpened(ours)
	if rerr != nil {
		_ = cmd.Process.Kill()
	}
	<-done
	switch {
	case rerr != nil:
		return nil, fmt.Errorf("pin: the namespace opener for %s: %v: %w", r.Path, rerr, unix.EACCES)
	case errno != 0:
		return nil, errno
	}
	return newFile(fd, r.Path), nil
}

// recvOpened reads the helper's one message: an errno and, on success,
// the fd.
func recvOpened(sock *os.File) (fd int, errno unix.Errno, err error) {
	rc, err := sock.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	buf := make([]byte, 4)
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn int
	var rerr error
	err = rc.Read(func(s uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(s), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return -1, 0, err
	}
	if n != 4 {
		return -1, 0, fmt.Errorf("a %d-byte answer", n)
	}
	fd = -1
	if oobn > 0 {
		msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
		if perr != nil {
			return -1, 0, perr
		}
		for _, m := range msgs {
			fds, perr := unix.ParseUnixRights(&m)
			if perr != nil {
				continue
			}
			for _, f := range fds {
				if fd < 0 {
					fd = f
				} else {
					unix.Close(f)
				}
			}
		}
	}
	e := unix.Errno(uint32(buf[0]) | uint32(buf[1])<<8 | uint32(buf[2])<<16 | uint32(buf[3])<<24)
	switch {
	case e == 0 && fd < 0:
		return -1, 0, fmt.Errorf("no fd in the answer")
	case e != 0 && fd >= 0:
		unix.Close(fd)
		fd = -1
	}
	return fd, e, nil
}
