package supervisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
)

// Bounds on what is read from a target's memory. Past them the call is
// refused (E2BIG/ENAMETOOLONG), never decided on a truncated copy.
const (
	maxPath      = unix.PathMax // including the NUL, as the kernel counts
	maxArgs      = 1 << 16
	maxArgvBytes = 4 << 20
	maxXattrName = 256 // XATTR_NAME_MAX + 1
)

// request is one decoded notification: what the call does, to which
// resolved (and pinned) paths, with which flags.
type request struct {
	n    notify.Notif
	desc sysDesc
	op   op
	tid  int

	// raw[i] is the path string as the target passed it (for messages);
	// res[i] is its resolution. Index 0 is the (first) path, 1 the second
	// (rename/link/symlink new name).
	raw [2]string
	res [2]*notify.Resolved

	flags   uint64 // open flags, or AT_* / RENAME_* flags
	resolve uint64 // openat2 RESOLVE_* flags
	mode    uint32
	access  engine.Access // for opens: what the open grants
	noCheck bool          // an O_PATH open: no access to check

	// exec
	argv      []string
	intent    engine.ExecIntent
	interps   []interpreter // a #! script's interpreters, each judged too
	imageKind imageKind
	image     devIno // the resolved image's identity (when haveImage)
	haveImage bool
	// symlink content; xattr name
	linkTarget string
	xattrName  string
	// bind: the raw sockaddr as read once from the target
	sockaddr []byte
}

func (r *request) close() {
	for _, x := range r.res {
		if x != nil {
			x.Close()
		}
	}
}

// errnoError is a decode failure with the errno the kernel would have
// returned for the same call.
type errnoError struct {
	errno unix.Errno
	why   string
}

func (e *errnoError) Error() string { return fmt.Sprintf("%s: %v", e.why, e.errno) }

func errnoOf(err error) unix.Errno {
	var ee *errnoError
	if errors.As(err, &ee) {
		return ee.errno
	}
	var en unix.Errno
	if errors.As(err, &en) {
		return en
	}
	// Anything else could not be decided: refuse.
	return unix.EACCES
}

// decode reads the call's arguments from the target (each pointer once)
// and resolves its paths. It does not consult the policy.
func (s *supervisor) decode(n *notify.Notif) (*request, error) {
	desc, ok := watched[n.Nr]
	if !ok {
		return nil, &errnoError{unix.ENOSYS, fmt.Sprintf("unexpected syscall %d", n.Nr)}
	}
	r := &request{n: *n, desc: desc, op: desc.op, tid: int(n.Pid)}
	a := n.Args
	arg := func(i int) uint64 { return a[i] }
	if desc.flags != argNone {
		r.flags = arg(desc.flags)
	}
	r.flags |= desc.fixedFlags
	if desc.mode != argNone {
		r.mode = uint32(arg(desc.mode))
	}

	switch desc.op {
	case opUnsupported:
		return r, nil
	case opBind:
		return s.decodeBind(r)
	case opIoctl:
		cmd := r.n.Args[1] & 0xffffffff
		if notify.IoctlArgSize(cmd) == 0 {
			return nil, &errnoError{unix.EPERM, fmt.Sprintf("unexpected ioctl %#x", cmd)}
		}
	case opOpen:
		if n.Nr == unix.SYS_OPENAT2 {
			if err := s.readOpenHow(r); err != nil {
				return nil, err
			}
		}
		r.flags &= 0xffffffff // open flags are an int
	case opUnlink:
		if r.flags&unix.AT_REMOVEDIR != 0 {
			r.op = opRmdir
		}
	case opSymlink:
		target, err := s.readString(r.tid, arg(0), maxPath)
		if err != nil {
			return nil, err
		}
		r.linkTarget = target
	case opSetxattr, opRemovexattr:
		name, err := s.readString(r.tid, arg(1), maxXattrName)
		if err != nil {
			return nil, err
		}
		r.xattrName = name
	case opExec:
		argvArg := 1 // execve(path, argv, envp)
		if n.Nr == unix.SYS_EXECVEAT {
			argvArg = 2 // execveat(dirfd, path, argv, envp, flags)
		}
		argv, err := notify.ReadArgv(r.tid, arg(argvArg), maxArgs, maxArgvBytes)
		if err != nil {
			return nil, &errnoError{unix.E2BIG, "reading argv: " + err.Error()}
		}
		r.argv = argv
	}

	// The paths.
	for i, pos := range [2][2]int{{desc.dirfd, desc.path}, {desc.dirfd2, desc.path2}} {
		dirArg, pathArg := pos[0], pos[1]
		if dirArg == argNone && pathArg == argNone {
			continue
		}
		dirfd := unix.AT_FDCWD
		if dirArg != argNone {
			dirfd = int(int32(arg(dirArg)))
		}
		flags := s.resolveFlags(r, i)
		var path string
		if i == 0 && r.fdOnly() {
			// fd-only calls (fchmod, fchown, f*xattr, utimensat(fd, NULL)).
			flags |= notify.AllowEmpty
		} else {
			p, err := s.readString(r.tid, arg(pathArg), maxPath)
			if err != nil {
				return nil, err
			}
			path = p
		}
		r.raw[i] = path
		res, err := notify.Resolve(r.tid, dirfd, path, flags)
		if err != nil {
			r.close()
			return nil, &errnoError{errnoOf(err), fmt.Sprintf("resolving %q", path)}
		}
		r.res[i] = res
	}
	s.computeAccess(r)
	return r, nil
}

func (s *supervisor) readString(tid int, addr uint64, max int) (string, error) {
	if addr == 0 {
		return "", &errnoError{unix.EFAULT, "NULL path"}
	}
	str, err := notify.ReadString(tid, addr, max)
	if err != nil {
		return "", &errnoError{errnoOf(err), "reading an argument"}
	}
	return str, nil
}

// readOpenHow reads openat2's struct open_how {u64 flags; u64 mode; u64 resolve}.
func (s *supervisor) readOpenHow(r *request) error {
	size := r.n.Args[3]
	if size < 24 {
		return &errnoError{unix.EINVAL, "open_how too small"}
	}
	if size > 4096 {
		return &errnoError{unix.E2BIG, "open_how too large"}
	}
	b, err := notify.ReadBytes(r.tid, r.n.Args[2], int(size))
	if err != nil {
		return &errnoError{errnoOf(err), "reading open_how"}
	}
	// Unknown trailing fields must be zero, as the kernel requires.
	for _, c := range b[24:] {
		if c != 0 {
			return &errnoError{unix.E2BIG, "open_how has unknown fields"}
		}
	}
	r.flags = binary.LittleEndian.Uint64(b[0:8])
	r.mode = uint32(binary.LittleEndian.Uint64(b[8:16]))
	r.resolve = binary.LittleEndian.Uint64(b[16:24])
	if r.flags>>32 != 0 {
		return &errnoError{unix.EINVAL, "open_how flags out of range"}
	}
	return nil
}

// resolveFlags maps the call's flags to how its i-th path resolves.
func (s *supervisor) resolveFlags(r *request, i int) notify.ResolveFlags {
	desc := r.desc
	follow := desc.follow
	var f notify.ResolveFlags
	if desc.atFlags {
		if r.flags&unix.AT_SYMLINK_NOFOLLOW != 0 {
			follow = false
		}
		if r.flags&unix.AT_EMPTY_PATH != 0 && i == 0 {
			f |= notify.AllowEmpty
		}
		if desc.op == opLink && i == 0 {
			// linkat follows the old name only with AT_SYMLINK_FOLLOW.
			follow = r.flags&unix.AT_SYMLINK_FOLLOW != 0
		}
	}
	switch desc.op {
	case opOpen:
		if r.flags&unix.O_NOFOLLOW != 0 {
			follow = false
		}
		if r.flags&unix.O_CREAT != 0 && r.flags&unix.O_EXCL != 0 {
			follow = false // O_EXCL: a symlink in the last component is EEXIST
		}
		if r.flags&unix.O_DIRECTORY != 0 && r.flags&unix.O_CREAT == 0 {
			f |= notify.MustBeDir
		}
		if r.resolve&unix.RESOLVE_NO_SYMLINKS != 0 {
			f |= notify.NoSymlinks
		}
		if r.resolve&unix.RESOLVE_NO_MAGICLINKS != 0 {
			f |= notify.NoMagicLinks
		}
		if r.resolve&unix.RESOLVE_BENEATH != 0 {
			f |= notify.Beneath
		}
		if r.resolve&unix.RESOLVE_IN_ROOT != 0 {
			f |= notify.InRoot
		}
		if r.resolve&unix.RESOLVE_NO_XDEV != 0 {
			f |= notify.NoXdev
		}
	case opMkdir, opRmdir:
		f |= notify.MustBeDir
	}
	// Calls that handle the last name themselves look up only its parent
	// (a trailing slash does not follow a symlink there).
	switch desc.op {
	case opUnlink, opRmdir, opRename, opMkdir, opMknod, opSymlink:
		f |= notify.ParentOnly
	case opLink:
		if i == 1 {
			f |= notify.ParentOnly
		}
	case opOpen:
		if r.flags&unix.O_CREAT != 0 {
			f |= notify.ParentOnly
		}
	}
	if follow {
		f |= notify.FollowLast
	}
	return f
}

// computeAccess sets what an open grants. The rules are the kernel's
// (O_ACCMODE, O_TRUNC, O_CREAT, O_TMPFILE), read conservatively.
func (s *supervisor) computeAccess(r *request) {
	if r.op != opOpen {
		return
	}
	f := r.flags
	if f&unix.O_PATH != 0 {
		// An O_PATH fd can only be used for fstat, fchdir, as a dirfd or
		// for execveat, and every later use through it is resolved and
		// checked again; it reveals what stat() does. No access to check.
		r.noCheck = true
		return
	}
	var a engine.Access
	switch f & unix.O_ACCMODE {
	case unix.O_RDONLY:
		a = engine.AccessRead
	case unix.O_WRONLY:
		a = engine.AccessWrite
	default:
		a = engine.AccessRead | engine.AccessWrite
	}
	if f&unix.O_TRUNC != 0 {
		a |= engine.AccessWrite
	}
	if f&unix.O_TMPFILE == unix.O_TMPFILE {
		a |= engine.AccessWrite
	}
	if f&unix.O_CREAT != 0 && !r.res[0].Exists {
		a |= engine.AccessWrite
	}
	r.access = a
}

// openImage opens (O_PATH) the file an exec request resolved to, or nil.
func (r *request) openImage() *os.File {
	res := r.res[0]
	if res == nil {
		return nil
	}
	if res.Object != nil {
		fd, err := unix.FcntlInt(res.Object.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		return os.NewFile(uintptr(fd), res.Path)
	}
	if res.Dir == nil {
		return nil
	}
	fd, err := unix.Openat(int(res.Dir.Fd()), res.Name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), res.Path)
}

// decodeBind reads bind's sockaddr once. Only an AF_UNIX pathname names
// a path; it is resolved like the new name of mknod (parent only).
func (s *supervisor) decodeBind(r *request) (*request, error) {
	n := r.n.Args[2]
	if n > unix.SizeofSockaddrAny || n < 2 {
		return nil, &errnoError{unix.EINVAL, "bind: bad address length"}
	}
	b, err := notify.ReadBytes(r.tid, r.n.Args[1], int(n))
	if err != nil {
		return nil, &errnoError{errnoOf(err), "bind: reading the address"}
	}
	r.sockaddr = b
	path, isPath, err := notify.SockaddrUnixPath(b)
	if err != nil {
		return nil, &errnoError{errnoOf(err), "bind: bad address"}
	}
	if !isPath {
		return r, nil
	}
	r.raw[0] = path
	res, err := notify.Resolve(r.tid, unix.AT_FDCWD, path, notify.ParentOnly)
	if err != nil {
		return nil, &errnoError{errnoOf(err), fmt.Sprintf("resolving %q", path)}
	}
	r.res[0] = res
	return r, nil
}
