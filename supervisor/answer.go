package supervisor

import (
	"encoding/binary"
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
)

// This file is the one place where a notification is answered. An allowed
// call is performed by the supervisor on exactly the paths that were
// resolved and checked (pinned by fds), never continued: a continued call
// would make the kernel re-read pointer arguments a second thread may have
// changed since the check. Three calls are continued, and none of them
// on a decision that read memory:
//   - execve/execveat, which cannot be emulated: continued, then verified
//     (execverify.go);
//   - open/openat with O_PATH in the flags register (opathFastPath): the
//     answer is allow whatever the path, and every use of the fd is judged;
//   - arch_prctl(ARCH_SET_FS), only a stop for exec verification (loop.go).

// opathFastPath answers O_PATH opens. The kernel cannot install an O_PATH
// file with ADDFD (it uses fget(), which refuses them), and an O_PATH fd
// grants no access: every later use of it — as a dirfd, by fchdir, by
// execveat or linkat with AT_EMPTY_PATH, by a reopen through
// /proc/self/fd — is itself resolved and checked. So open/openat/creat
// with O_PATH in the flags *register* are continued without reading any
// argument from memory: the decision (allow) depends on no pointer.
// openat2 keeps its flags in memory that the kernel reads again after a
// continue, so an O_PATH there could be flipped to O_RDWR: it is refused
// with ENOSYS, and callers fall back to openat.
func (s *supervisor) opathFastPath(n *notify.Notif) bool {
	var flags uint64
	switch n.Nr {
	case unix.SYS_OPEN:
		flags = n.Args[1]
	case unix.SYS_OPENAT:
		flags = n.Args[2]
	case unix.SYS_OPENAT2:
		if n.Args[3] < 8 {
			return false
		}
		b, err := notify.ReadBytes(int(n.Pid), n.Args[2], 8)
		if err != nil || binary.LittleEndian.Uint64(b)&unix.O_PATH == 0 {
			return false
		}
		s.respondErr(n.ID, unix.ENOSYS)
		return true
	default:
		return false
	}
	if flags&unix.O_PATH == 0 {
		return false
	}
	_ = s.l.Continue(n.ID)
	return true
}

// perform carries out an allowed request and answers the notification.
func (s *supervisor) perform(r *request) {
	id := r.n.ID
	if r.op == opExec {
		s.continueExec(r)
		return
	}
	var err error
	if r.fdOnly() && r.op != opIoctl {
		// (The attribute ioctls take the fd themselves, in emulate.)
		err = s.emulateOnFd(r)
	} else {
		err = s.emulate(r)
	}
	if r.op == opOpen {
		return // emulate answered (ADDFD) or returned an error below
	}
	if err != nil {
		s.respondErr(id, errnoOf(err))
		return
	}
	s.respondVal(id, 0)
}

// emulate performs the call. For opens it also installs the fd in the
// target and completes the syscall (ADDFD with SEND), answering errors
// itself.
func (s *supervisor) emulate(r *request) error {
	res := r.res[0]
	switch r.op {
	case opOpen:
		// The umask matters only when the open can create; reading it
		// costs a /proc read.
		var umask uint32
		if r.flags&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
			m, err := notify.Umask(r.tid)
			if err != nil {
				s.respondErr(r.n.ID, unix.EACCES)
				return err
			}
			umask = m
		}
		flags := int(r.flags)
		if r.access&engine.AccessWrite == 0 && flags&unix.O_CREAT != 0 {
			// The write check was skipped because the file existed: make
			// sure the open cannot create it if it vanished since.
			flags &^= unix.O_CREAT | unix.O_EXCL
		}
		f, err := notify.OpenResolved(res, flags, r.mode, umask)
		if err != nil {
			s.respondErr(r.n.ID, errnoOf(err))
			return err
		}
		return s.installFD(r, f)
	case opUnlink:
		return notify.Unlink(res, false)
	case opRmdir:
		return notify.Unlink(res, true)
	case opRename:
		return notify.Rename(res, r.res[1], uint(r.flags))
	case opMkdir:
		umask, err := notify.Umask(r.tid)
		if err != nil {
			return err
		}
		return notify.Mkdir(res, r.mode, umask)
	case opMknod:
		umask, err := notify.Umask(r.tid)
		if err != nil {
			return err
		}
		devArg := 2
		if r.n.Nr == unix.SYS_MKNODAT {
			devArg = 3
		}
		return notify.Mknod(res, r.mode, r.n.Args[devArg], umask)
	case opLink:
		return notify.Link(res, r.res[1], int(r.flags))
	case opSymlink:
		return notify.Symlink(r.linkTarget, r.res[1])
	case opTruncate:
		return notify.Truncate(res, int64(r.n.Args[1]))
	case opChmod:
		return notify.Chmod(res, r.mode)
	case opChown:
		a := r.n.Args
		uidArg := 1
		if r.n.Nr == unix.SYS_FCHOWNAT {
			uidArg = 2
		}
		return notify.Chown(res, int(int32(a[uidArg])), int(int32(a[uidArg+1])), r.desc.follow && r.flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	case opUtimes:
		ts, err := s.readTimes(r)
		if err != nil {
			return err
		}
		return notify.Utimens(res, ts, r.desc.follow && r.flags&unix.AT_SYMLINK_NOFOLLOW == 0)
	case opSetxattr:
		value, err := s.readXattrValue(r)
		if err != nil {
			return err
		}
		return notify.Setxattr(res, r.xattrName, value, int(r.n.Args[4]), r.desc.follow)
	case opRemovexattr:
		return notify.Removexattr(res, r.xattrName, r.desc.follow)
	case opIoctl:
		cmd := r.n.Args[1] & 0xffffffff
		arg, err := notify.ReadBytes(r.tid, r.n.Args[2], notify.IoctlArgSize(cmd))
		if err != nil {
			return err
		}
		f, err := notify.GetFd(r.tid, int(int32(r.n.Args[0])))
		if err != nil {
			return err
		}
		defer f.Close()
		return notify.IoctlSetattr(f, cmd, arg, res.Cred)
	case opBind:
		sock, err := notify.GetFd(r.tid, int(int32(r.n.Args[0])))
		if err != nil {
			return err
		}
		defer sock.Close()
		umask, err := notify.Umask(r.tid)
		if err != nil {
			return err
		}
		return notify.Bind(sock, r.sockaddr, res, umask)
	}
	return unix.ENOSYS
}

func (s *supervisor) respondErr(id uint64, errno unix.Errno) {
	_ = s.l.RespondError(id, errno)
}

func (s *supervisor) respondVal(id uint64, v int64) {
	_ = s.l.RespondValue(id, v)
}

// fdOnly reports whether the call names its (first) file by an fd alone
// (fchmod, fchown, fsetxattr, fremovexattr, utimensat(fd, NULL), the
// attribute ioctls).
func (r *request) fdOnly() bool {
	d := r.desc
	if d.dirfd == argNone {
		return false
	}
	return d.path == argNone || (r.op == opUtimes && r.n.Args[d.path] == 0)
}

// readXattrValue reads a set*xattr call's value (args 2 and 3) once,
// within the kernel's bound (XATTR_SIZE_MAX, else E2BIG).
func (s *supervisor) readXattrValue(r *request) ([]byte, error) {
	size := r.n.Args[3]
	if size > 65536 {
		return nil, unix.E2BIG
	}
	if size == 0 {
		return nil, nil
	}
	return notify.ReadBytes(r.tid, r.n.Args[2], int(size))
}

// emulateOnFd performs an fd-only call on the target's own open file
// (pidfd_getfd), with the target's identity, so the kernel's answers hold
// (EBADF for an O_PATH fd). The file must be the one whose path was
// judged: a dup2 onto that fd number since then fails the call.
func (s *supervisor) emulateOnFd(r *request) error {
	res := r.res[0]
	f, err := notify.GetFd(r.tid, int(int32(r.n.Args[r.desc.dirfd])))
	if err != nil {
		return err
	}
	defer f.Close()
	var got unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &got); err != nil {
		return err
	}
	if got.Dev != res.Stat.Dev || got.Ino != res.Stat.Ino {
		return unix.EBADF
	}
	fd := int(f.Fd())
	return notify.WithCred(res.Cred, func() error {
		switch r.op {
		case opChmod:
			return unix.Fchmod(fd, r.mode&0o7777)
		case opChown:
			a := r.n.Args
			return unix.Fchown(fd, int(int32(a[1])), int(int32(a[2])))
		case opUtimes:
			ts, err := s.readTimes(r)
			if err != nil {
				return err
			}
			return notify.Futimens(fd, ts)
		case opSetxattr:
			value, err := s.readXattrValue(r)
			if err != nil {
				return err
			}
			return unix.Fsetxattr(fd, r.xattrName, value, int(r.n.Args[4]))
		case opRemovexattr:
			return unix.Fremovexattr(fd, r.xattrName)
		}
		return unix.ENOSYS
	})
}

// installFD gives the target the file the supervisor opened for it and
// completes its open. With WAIT_KILLABLE_RECV the fd is installed first and
// the call answered after the supervisor's own copy is closed: a program
// that writes a script, closes it and runs it at once must not find the
// supervisor still holding it open for writing (ETXTBSY). Without it, the
// install and the answer must be one step (SEND), or an interrupted target
// could be left with an fd it does not know about.
func (s *supervisor) installFD(r *request, f *os.File) error {
	cloexec := r.flags&unix.O_CLOEXEC != 0
	if !s.waitKillable {
		_, err := s.l.AddFD(r.n.ID, int(f.Fd()), cloexec)
		f.Close()
		if err != nil && !errors.Is(err, unix.ENOENT) {
			// The target is still waiting: fail its call rather than leave
			// it hanging. (ENOENT: it is gone or was interrupted.)
			s.respondErr(r.n.ID, errnoOf(err))
		}
		return err
	}
	fd, err := s.l.InstallFD(r.n.ID, int(f.Fd()), cloexec)
	f.Close()
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			s.respondErr(r.n.ID, errnoOf(err))
		}
		return err
	}
	return s.l.RespondValue(r.n.ID, int64(fd))
}
