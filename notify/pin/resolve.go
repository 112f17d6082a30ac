package pin

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ResolveFlags say which lookup semantics the intercepted call asked for.
// OpenResolveFlags and AtResolveFlags translate a call's own flags.
type ResolveFlags uint32

const (
	// FollowLast follows a symlink in the last component (open without
	// O_NOFOLLOW, stat, chmod, truncate, ...).
	FollowLast ResolveFlags = 1 << iota
	// AllowEmpty is AT_EMPTY_PATH: an empty path names the dirfd itself.
	AllowEmpty
	// MustBeDir is O_DIRECTORY: an existing, non-symlink last component that
	// is not a directory is ENOTDIR.
	MustBeDir
	// NoMagicLinks is openat2's RESOLVE_NO_MAGICLINKS, asked by the caller.
	NoMagicLinks
	// NoSymlinks is openat2's RESOLVE_NO_SYMLINKS, asked by the caller.
	NoSymlinks
	// Beneath is openat2's RESOLVE_BENEATH, asked by the caller.
	Beneath
	// InRoot is openat2's RESOLVE_IN_ROOT, asked by the caller.
	InRoot
	// NoXdev is openat2's RESOLVE_NO_XDEV, asked by the caller.
	NoXdev
	// ObjectOnly says the caller acts only on the object reached (an
	// open without O_CREAT: it is reopened through Object) and needs no
	// Dir and name. Resolve may then answer from one openat2 (fast.go);
	// the result has Dir == nil, like a magic-link target.
	ObjectOnly
	// ParentOnly marks calls that look up only the parent and handle the
	// last component themselves: unlink, rmdir, rename, mkdir, mknod, the new
	// name of link and symlink, and open with O_CREAT. For every other call
	// the kernel treats a trailing slash as "follow the last symlink and
	// require a directory" (lstat("link/") follows); for these it does not
	// (unlink("link-to-dir/") is ENOTDIR).
	ParentOnly
)

// OpenResolveFlags returns the ResolveFlags an open/openat/creat with these
// open flags needs. O_CREAT|O_EXCL never follows the last symlink (the kernel
// fails with EEXIST on it), O_NOFOLLOW does not either.
func OpenResolveFlags(openFlags int) ResolveFlags {
	var f ResolveFlags
	creat := openFlags&unix.O_CREAT != 0 && openFlags&unix.O_TMPFILE != unix.O_TMPFILE
	if openFlags&unix.O_NOFOLLOW == 0 && !(creat && openFlags&unix.O_EXCL != 0) {
		f |= FollowLast
	}
	if creat {
		f |= ParentOnly
	} else if openFlags&unix.O_TMPFILE != unix.O_TMPFILE {
		f |= ObjectOnly
	}
	if openFlags&unix.O_DIRECTORY != 0 {
		f |= MustBeDir
	}
	return f
}

// OpenHowResolveFlags adds openat2's how.resolve bits to OpenResolveFlags.
func OpenHowResolveFlags(openFlags int, resolve uint64) ResolveFlags {
	f := OpenResolveFlags(openFlags)
	if resolve&unix.RESOLVE_NO_MAGICLINKS != 0 {
		f |= NoMagicLinks
	}
	if resolve&unix.RESOLVE_NO_SYMLINKS != 0 {
		f |= NoSymlinks | NoMagicLinks
	}
	if resolve&unix.RESOLVE_BENEATH != 0 {
		f |= Beneath
	}
	if resolve&unix.RESOLVE_IN_ROOT != 0 {
		f |= InRoot
	}
	if resolve&unix.RESOLVE_NO_XDEV != 0 {
		f |= NoXdev
	}
	return f
}

// AtResolveFlags returns the ResolveFlags of an *at call with these AT_*
// flags: AT_SYMLINK_NOFOLLOW clears FollowLast, AT_SYMLINK_FOLLOW (linkat)
// sets it, AT_EMPTY_PATH sets AllowEmpty. followByDefault says whether the
// call follows without flags (fchmodat, fchownat, utimensat: yes; linkat:
// no).
func AtResolveFlags(atFlags int, followByDefault bool) ResolveFlags {
	var f ResolveFlags
	if followByDefault && atFlags&unix.AT_SYMLINK_NOFOLLOW == 0 {
		f |= FollowLast
	}
	if atFlags&unix.AT_SYMLINK_FOLLOW != 0 {
		f |= FollowLast
	}
	if atFlags&unix.AT_EMPTY_PATH != 0 {
		f |= AllowEmpty
	}
	return f
}

// Kind tells what a Resolved names.
type Kind uint8

const (
	// KindPath is a filesystem object named by Path.
	KindPath Kind = iota
	// KindAnon is an object that never had a name, reached through a
	// /proc magic link or AT_EMPTY_PATH: pipe:[…], socket:[…],
	// anon_inode:…, a memfd or other file of a kernel-internal mount.
	// Path holds the readlink text. (An object whose name was removed is
	// KindPath, with Deleted set: see classify.)
	KindAnon
)

// lastType is the kernel's last_type, which decides several errnos
// (rmdir("x/.") is EINVAL, rename("x/..", …) EBUSY, mkdir("/") EEXIST).
type lastType uint8

const (
	lastNorm   lastType = iota // an ordinary name in Dir
	lastDot                    // "."
	lastDotDot                 // ".."
	lastRoot                   // "/" (or a followed symlink to it)
	lastObject                 // reached through a magic link or AT_EMPTY_PATH
)

// Resolved is a path resolved for one thread, pinned by file descriptors so
// nothing the thread does afterwards can redirect it. Close it when done.
type Resolved struct {
	// Path is the canonical absolute path the policy judges: symlinks
	// resolved as the call would, magic links replaced by their target's
	// path. It is the supervisor's view of the path, which equals the
	// target's unless the target is chrooted. For KindAnon it is the
	// readlink text.
	Path string
	Kind Kind
	// Dir is an O_PATH fd of the directory holding the last component. It
	// is nil when the object is only reachable as Object: the root, ".",
	// "..", a magic-link target or an AT_EMPTY_PATH dirfd.
	Dir *File
	// Name is the last component inside Dir, without a trailing slash; ""
	// for the root; "." or ".." when the path ended so.
	Name string
	// Exists reports whether the last component existed at resolution.
	Exists bool
	// Stat is the lstat of the last component (the fstat of Object) when
	// Exists.
	Stat unix.Stat_t
	// Object is an O_PATH fd of the object itself. Unlike the first API
	// sketch it is set whenever Exists, so metadata operations act on the
	// inode that was checked, not on whatever has the name later. Dir == nil
	// marks the cases where Object is the only handle.
	Object *File
	// TrailingSlash reports a trailing slash after the last component.
	TrailingSlash bool
	// Cred is the thread's filesystem identity at resolution when it
	// differs from the supervisor's; the emulation primitives act with it.
	// Nil means the thread's fs uid and gid are the supervisor's.
	Cred *Cred
	// Tgid is the thread's process id.
	Tgid int
	// Deleted: the object (reached by its fd) had a name that has been
	// removed since; Path is the name it had (d_path without the
	// " (deleted)" the kernel appends), by which it is judged.
	Deleted bool

	last  lastType
	tid   int
	flags ResolveFlags
	// lastLink: a symlink in the last position was followed, which for a
	// name operation is only right with ParentOnly semantics.
	lastLink bool
}

// Close releases the pinned descriptors.
func (r *Resolved) Close() error {
	if r == nil {
		return nil
	}
	var err error
	if r.Dir != nil {
		err = r.Dir.Close()
		r.Dir = nil
	}
	if r.Object != nil {
		if e := r.Object.Close(); err == nil {
			err = e
		}
		r.Object = nil
	}
	return err
}

// maxLinks is the kernel's MAXSYMLINKS: symlinks followed in one lookup,
// nested or not.
const maxLinks = 40

// Errno returns the errno to give the target for an error from this package:
// the unix.Errno inside err, or EACCES when there is none (a failure that is
// not the target's own still denies, never allows).
func Errno(err error) unix.Errno {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) && e != 0 {
		return e
	}
	return unix.EACCES
}

// Resolve resolves path for the thread tid relative to dirfd (unix.AT_FDCWD
// = the thread's cwd) exactly as the kernel would for flags.
//
// It walks component by component with O_PATH|O_NOFOLLOW fds (no string is
// ever re-resolved), follows symlinks itself (at most 40, else ELOOP), keeps
// ".." at the thread's root, substitutes /proc/self and /proc/thread-self
// with the target's ids, and follows /proc/PID/{fd/N,cwd,root,exe} magic
// links (of the target's own process only) by opening them from the
// supervisor, continuing from that fd with the path read back from it.
// Target-visible failures are bare unix.Errno values to return as they are;
// other failures wrap an errno (see Errno) and a readable reason.
func Resolve(tid int, dirfd int, path string, flags ResolveFlags) (*Resolved, error) {
	th, err := LookupThread(tid)
	if err != nil {
		return nil, err
	}
	defer th.Release()
	return ResolveThread(th, dirfd, path, flags)
}

// ResolveThread is Resolve for a thread already looked up (LookupThread),
// so one notification validates its thread once whatever it resolves.
func ResolveThread(th *Thread, dirfd int, path string, flags ResolveFlags) (*Resolved, error) {
	if len(path) >= unix.PathMax {
		return nil, unix.ENAMETOOLONG
	}
	if strings.IndexByte(path, 0) >= 0 {
		return nil, fmt.Errorf("pin: path %q contains NUL: %w", path, unix.EINVAL)
	}
	if path == "" && flags&AllowEmpty == 0 {
		return nil, unix.ENOENT
	}
	tid := th.TID
	st := &procStatus{tgid: th.Tgid, umask: ^uint32(0), same: th.Cred == nil}
	if th.Cred != nil {
		st.cred = *th.Cred
	}
	if r, ok, err := fastResolve(th, st, dirfd, path, flags); ok {
		if err != nil {
			return nil, err
		}
		r.Cred, r.Tgid, r.tid, r.flags = st.credp(), st.tgid, tid, flags
		return r, nil
	}
	w := &walker{tid: tid, st: st, flags: flags, root: -1, cur: -1, pidfd: th.Pidfd(), th: th}
	defer w.release()
	// The target's own handles (cwd, fds, root) are opened as the
	// supervisor: the target needs no permission to use them, and a
	// non-dumpable target would refuse a /proc open done with its creds.
	if err := w.start(dirfd, path); err != nil {
		return nil, err
	}
	var r *Resolved
	err := asCred(st.credp(), func() error {
		var err error
		r, err = w.walk(path)
		return err
	})
	if err != nil {
		return nil, err
	}
	r.Cred = st.credp()
	r.Tgid = st.tgid
	r.tid = tid
	r.flags = flags
	r.lastLink = w.lastLink
	return r, nil
}

type walker struct {
	tid   int
	th    *Thread // the thread, validated for this resolution
	pidfd int     // the thread's pidfd, or -1
	st    *procStatus
	flags ResolveFlags
	links int

	root     int // -1 until needed
	rootPath string
	rootID   mntIno
	haveRoot bool

	startMnt uint64 // NoXdev

	cur         int
	curBorrowed bool // cur is w.root, not a separate fd
	curPath     string
	curIsRt     bool // cur was reached as the root itself (cheap ".." test)
	noFast      bool // the fast prefix lookup failed once; walk the rest
	// rootSet mirrors the kernel's nd->root being set (absolute start,
	// scoped lookup, or a ".." seen): before that, RESOLVE_NO_XDEV treats
	// any jump to the root as crossing a mount.
	rootSet bool
	// lastLink records following a symlink in the last position.
	lastLink bool
}

type mntIno struct{ mnt, ino uint64 }

func (w *walker) release() {
	if w.cur >= 0 && !w.curBorrowed {
		unix.Close(w.cur)
		w.cur = -1
	}
	if w.root >= 0 {
		unix.Close(w.root)
		w.root = -1
	}
}

func (w *walker) scoped() bool { return w.flags&(Beneath|InRoot) != 0 }

// start pins the directory the walk begins in (or, for an empty path, the
// object itself) and, for scoped lookups, the root.
func (w *walker) start(dirfd int, path string) error {
	abs := strings.HasPrefix(path, "/")
	w.rootSet = abs || w.scoped()
	if abs && !w.scoped() {
		return w.ensureRoot()
	}
	var fd int
	var err error
	switch {
	case dirfd == unix.AT_FDCWD:
		fd, err = w.procLink("cwd", 0)
	case dirfd < 0:
		return unix.EBADF
	case path != "" && w.pidfd >= 0:
		// A start directory: pidfd_getfd is one syscall where opening
		// /proc/TID/fd/N is a procfs lookup several times dearer. (For
		// AT_EMPTY_PATH the object itself is pinned as O_PATH below,
		// rather than holding the target's open file.)
		fd, err = unix.PidfdGetfd(w.pidfd, dirfd, 0)
		if err == unix.EBADF {
			return unix.EBADF
		}
		if err != nil {
			fd, err = w.procLink("fd/"+strconv.Itoa(dirfd), 0)
		}
	default:
		fd, err = w.procLink("fd/"+strconv.Itoa(dirfd), 0)
	}
	if err != nil {
		return err
	}
	w.cur = fd
	p, err := fdPath(fd)
	if err != nil {
		return err
	}
	w.curPath = p
	if path == "" {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("pin: fstat start dir: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.ENOTDIR
	}
	if w.scoped() {
		// RESOLVE_BENEATH / RESOLVE_IN_ROOT: the dirfd is the root.
		if abs && w.flags&InRoot == 0 {
			return unix.EXDEV
		}
		rfd, err := dupCloexec(fd)
		if err != nil {
			return err
		}
		w.root, w.rootPath = rfd, p
		if abs {
			w.curIsRt = true
		}
	}
	if w.flags&NoXdev != 0 {
		id, err := statID(fd)
		if err != nil {
			return err
		}
		w.startMnt = id.mnt
	}
	return nil
}

// procLink opens /proc/TID/<name> (through the thread's cached /proc/TID
// when there is one).
func (w *walker) procLink(name string, extra int) (int, error) {
	if w.th != nil {
		return w.th.openProc(name, extra)
	}
	return openProcLink(w.tid, name, extra)
}

// ensureRoot pins the thread's root directory (/proc/TID/root) and, for an
// absolute start, makes it the current directory.
func (w *walker) ensureRoot() error {
	if w.root < 0 {
		fd, err := w.procLink("root", unix.O_DIRECTORY)
		if err != nil {
			return err
		}
		w.root = fd
		p, err := rootPathOf(fd)
		if err != nil {
			return err
		}
		w.rootPath = p
	}
	if w.cur < 0 {
		w.cur, w.curPath, w.curIsRt, w.curBorrowed = w.root, w.rootPath, true, true
		if w.flags&NoXdev != 0 {
			id, err := statID(w.root)
			if err != nil {
				return err
			}
			w.startMnt = id.mnt
		}
	}
	return nil
}

func (w *walker) rootIdent() (mntIno, error) {
	if !w.haveRoot {
		if w.root < 0 {
			fd, err := w.procLink("root", unix.O_DIRECTORY)
			if err != nil {
				return mntIno{}, err
			}
			w.root = fd
			p, err := rootPathOf(fd)
			if err != nil {
				return mntIno{}, err
			}
			w.rootPath = p
		}
		id, err := statID(w.root)
		if err != nil {
			return mntIno{}, err
		}
		w.rootID, w.haveRoot = id, true
	}
	return w.rootID, nil
}

// setCur replaces the current directory. A borrowed fd (the root) stays
// owned by w.root.
func (w *walker) setCur(fd int, p string, isRoot, borrowed bool) error {
	if w.flags&NoXdev != 0 {
		id, err := statID(fd)
		if err == nil && id.mnt != w.startMnt {
			err = unix.EXDEV
		}
		if err != nil {
			if !borrowed {
				unix.Close(fd)
			}
			return err
		}
	}
	if w.cur >= 0 && !w.curBorrowed {
		unix.Close(w.cur)
	}
	w.cur, w.curPath, w.curIsRt, w.curBorrowed = fd, p, isRoot, borrowed
	return nil
}

func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

func parentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func (w *walker) walk(path string) (*Resolved, error) {
	if path == "" {
		return w.finishObject(w.takeCur(), w.curPath, false)
	}
	rest := path
	for {
		i := 0
		for i < len(rest) && rest[i] == '/' {
			i++
		}
		rest = rest[i:]
		if rest == "" {
			// The path (or a followed trailing symlink) ended at a
			// directory with no last name: "/", "a/b/" after "a/b" was a
			// link to "/".
			return w.finishSpecial(lastRoot, "", false)
		}
		if !w.noFast {
			if err := w.fastPrefix(&rest); err != nil {
				return nil, err
			}
		}
		name, after := rest, ""
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			name, after = rest[:j], rest[j:]
		}
		last := strings.TrimLeft(after, "/") == ""
		slash := last && after != ""
		rest = after

		switch name {
		case ".":
			if last {
				return w.finishSpecial(lastDot, ".", slash)
			}
			continue
		case "..":
			if err := w.dotdot(); err != nil {
				return nil, err
			}
			if last {
				return w.finishSpecial(lastDotDot, "..", slash)
			}
			continue
		}

		// A trailing slash makes lookup_last follow and want a directory,
		// except for calls that handle the last name themselves.
		follow := !last || w.flags&FollowLast != 0 || (slash && w.flags&ParentOnly == 0)
		wantDir := !last || (slash && w.flags&ParentOnly == 0)

		oflags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if !last {
			// Fast path: one syscall for an intermediate directory. A
			// symlink or non-directory fails with ENOTDIR and is sorted
			// out below.
			fd, err := openatRetry(w.cur, name, oflags|unix.O_DIRECTORY)
			if err == nil {
				if err := w.setCur(fd, joinPath(w.curPath, name), false, false); err != nil {
					return nil, err
				}
				continue
			}
			if err != unix.ENOTDIR {
				return nil, err
			}
		}
		fd, err := openatRetry(w.cur, name, oflags)
		if err != nil {
			if err == unix.ENOENT && last {
				return w.finishAbsent(name, slash)
			}
			return nil, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("pin: fstat %s: %w", joinPath(w.curPath, name), err)
		}
		isLink := st.Mode&unix.S_IFMT == unix.S_IFLNK
		if isLink && follow {
			res, next, err := w.followLink(fd, name, after, last, slash)
			if err != nil || res != nil {
				return res, err
			}
			rest = next
			continue
		}
		if !last {
			unix.Close(fd)
			return nil, unix.ENOTDIR
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		if !isDir && !isLink && (wantDir || w.flags&(MustBeDir|ParentOnly) == MustBeDir) {
			unix.Close(fd)
			return nil, unix.ENOTDIR
		}
		if w.flags&NoXdev != 0 {
			if id, err := statID(fd); err != nil || id.mnt != w.startMnt {
				unix.Close(fd)
				if err != nil {
					return nil, err
				}
				return nil, unix.EXDEV
			}
		}
		r := &Resolved{
			Path:          joinPath(w.curPath, name),
			Kind:          KindPath,
			Dir:           newFile(w.takeCur(), "dir"),
			Name:          name,
			Exists:        true,
			Stat:          st,
			Object:        newFile(fd, name),
			TrailingSlash: slash,
			last:          lastNorm,
		}
		return r, nil
	}
}

// fastPrefix opens every directory before the last component of rest in one
// openat2 with RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS when that prefix has
// no "..": without symlinks and "..", the kernel's walk is exactly ours and
// the canonical path is lexical. Anything else (a symlink, a missing or
// forbidden component) falls back to the component walk, which gives the
// precise result and errno.
func (w *walker) fastPrefix(rest *string) error {
	trimmed := strings.TrimRight(*rest, "/")
	i := strings.LastIndexByte(trimmed, '/')
	if i <= 0 {
		return nil
	}
	prefix := trimmed[:i]
	p := w.curPath
	for c := range strings.SplitSeq(prefix, "/") {
		switch c {
		case "", ".":
		case "..":
			return nil
		default:
			p = joinPath(p, c)
		}
	}
	res := uint64(unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS)
	if w.flags&NoXdev != 0 {
		res |= unix.RESOLVE_NO_XDEV
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: res}
	fd, err := unix.Openat2(w.cur, prefix, &how)
	if err != nil {
		w.noFast = true
		return nil
	}
	if err := w.setCur(fd, p, false, false); err != nil {
		return err
	}
	*rest = (*rest)[i+1:]
	return nil
}

// takeCur hands the current directory to the result; a borrowed root
// moves with it.
func (w *walker) takeCur() int {
	fd := w.cur
	if w.curBorrowed {
		w.root, w.haveRoot, w.curBorrowed = -1, false, false
	}
	w.cur = -1
	return fd
}

// dotdot moves to the parent, staying put at the thread's root (the kernel's
// follow_dotdot) or failing with EXDEV for RESOLVE_BENEATH.
func (w *walker) dotdot() error {
	w.rootSet = true
	atRoot := w.curIsRt
	if !atRoot {
		rid, err := w.rootIdent()
		if err != nil {
			return err
		}
		id, err := statID(w.cur)
		if err != nil {
			return err
		}
		atRoot = id == rid
	}
	if atRoot {
		if w.flags&Beneath != 0 {
			return unix.EXDEV
		}
		return nil
	}
	fd, err := openatRetry(w.cur, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return err
	}
	return w.setCur(fd, parentPath(w.curPath), false, false)
}

// followLink handles a symlink at cur/name (fd is its O_PATH fd, consumed).
// It returns either a final result, or the rest of the path to walk next.
func (w *walker) followLink(fd int, name, after string, last, slash bool) (*Resolved, string, error) {
	defer func() {
		if fd >= 0 {
			unix.Close(fd)
		}
	}()
	if w.flags&NoSymlinks != 0 {
		return nil, "", unix.ELOOP
	}
	if last {
		w.lastLink = true
	}
	w.links++
	if w.links > maxLinks {
		return nil, "", unix.ELOOP
	}
	text, err := readlinkFd(fd)
	if err != nil {
		return nil, "", fmt.Errorf("pin: readlink %s: %w", joinPath(w.curPath, name), err)
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(w.cur, &sfs); err != nil {
		return nil, "", fmt.Errorf("pin: statfs %s: %w", w.curPath, err)
	}
	if sfs.Type == unix.PROC_SUPER_MAGIC {
		var dst unix.Stat_t
		procRoot := unix.Fstat(w.cur, &dst) == nil && dst.Ino == 1 // PROC_ROOT_INO
		switch {
		case procRoot && name == "self":
			// readlink in the supervisor names the supervisor.
			text = strconv.Itoa(w.st.tgid)
		case procRoot && name == "thread-self":
			text = strconv.Itoa(w.st.tgid) + "/task/" + strconv.Itoa(w.tid)
		case strings.HasPrefix(text, "/") || strings.Contains(text, ":"):
			return w.followMagic(name, after, last, slash)
		}
	}
	if text == "" {
		return nil, "", unix.ENOENT
	}
	if strings.HasPrefix(text, "/") {
		if w.flags&Beneath != 0 || (w.flags&NoXdev != 0 && !w.rootSet) {
			return nil, "", unix.EXDEV
		}
		if w.flags&InRoot == 0 {
			if err := w.ensureRoot(); err != nil {
				return nil, "", err
			}
		}
		if err := w.setCur(w.root, w.rootPath, true, true); err != nil {
			return nil, "", err
		}
	}
	return nil, text + after, nil
}

// magicOwner extracts the process a /proc magic link belongs to from its
// path: …/PID/{fd/N,cwd,root,exe,ns/X} or …/PID/task/TID/….
func magicOwner(linkPath string) (pid int, ok bool) {
	parts := strings.Split(strings.TrimPrefix(linkPath, "/"), "/")
	n := len(parts)
	var k int // index of the component right after the pid
	switch {
	case n >= 2 && (parts[n-1] == "cwd" || parts[n-1] == "root" || parts[n-1] == "exe"):
		k = n - 1
	case n >= 3 && (parts[n-2] == "fd" || parts[n-2] == "ns"):
		k = n - 2
	default:
		return 0, false
	}
	if k < 1 {
		return 0, false
	}
	id, err := strconv.Atoi(parts[k-1])
	if err != nil || id <= 0 {
		return 0, false
	}
	return id, true
}

// followMagic opens the magic link cur/name from the supervisor, which yields
// the real object, after checking that the target could have followed it.
func (w *walker) followMagic(name, after string, last, slash bool) (*Resolved, string, error) {
	if w.flags&(NoMagicLinks|NoSymlinks) != 0 {
		return nil, "", unix.ELOOP
	}
	if w.scoped() {
		return nil, "", unix.EXDEV
	}
	linkPath := joinPath(w.curPath, name)
	// The supervisor may open any process's links; the target only its
	// own and those ptrace_may_access allows. Following only the target's
	// own process keeps the supervisor's fds (and everyone else's) out of
	// reach, at the price of refusing a sibling's links the kernel would
	// have allowed.
	pid, ok := magicOwner(linkPath)
	if !ok {
		return nil, "", fmt.Errorf("pin: refusing unrecognised /proc magic link %s: %w", linkPath, unix.EACCES)
	}
	if pid != w.st.tgid && pid != w.tid {
		tg, err := Tgid(pid)
		if err != nil || tg != w.st.tgid {
			return nil, "", fmt.Errorf("pin: refusing magic link %s of another process: %w", linkPath, unix.EACCES)
		}
	}
	ofd, err := openatRetry(w.cur, name, unix.O_PATH|unix.O_CLOEXEC)
	if err != nil {
		return nil, "", err
	}
	text, err := fdPath(ofd)
	if err != nil {
		unix.Close(ofd)
		return nil, "", err
	}
	if w.flags&NoXdev != 0 {
		id, err := statID(ofd)
		if err != nil || id.mnt != w.startMnt {
			unix.Close(ofd)
			if err != nil {
				return nil, "", err
			}
			return nil, "", unix.EXDEV
		}
	}
	if last {
		if slash && w.flags&ParentOnly == 0 {
			var st unix.Stat_t
			if err := unix.Fstat(ofd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
				unix.Close(ofd)
				return nil, "", unix.ENOTDIR
			}
		}
		r, err := w.finishObject(ofd, text, slash)
		return r, "", err
	}
	var st unix.Stat_t
	if err := unix.Fstat(ofd, &st); err != nil {
		unix.Close(ofd)
		return nil, "", fmt.Errorf("pin: fstat %s: %w", linkPath, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(ofd)
		return nil, "", unix.ENOTDIR
	}
	if err := w.setCur(ofd, text, false, false); err != nil {
		return nil, "", err
	}
	return nil, after, nil
}

// finishObject builds a result for an object only reachable by its fd (a
// magic-link target or the AT_EMPTY_PATH dirfd). fd is consumed.
func (w *walker) finishObject(fd int, text string, slash bool) (*Resolved, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pin: fstat %s: %w", text, err)
	}
	kind, p, deleted := w.classify(fd, text, &st)
	r := &Resolved{
		Path:          p,
		Kind:          kind,
		Deleted:       deleted,
		Exists:        true,
		Stat:          st,
		Object:        newFile(fd, text),
		TrailingSlash: slash,
		last:          lastObject,
	}
	if r.Kind == KindPath {
		r.Name = p[strings.LastIndexByte(p, '/')+1:]
	}
	return r, nil
}

// finishSpecial builds the result for a path ending in ".", ".." or at the
// root: the object is the current directory.
func (w *walker) finishSpecial(last lastType, name string, slash bool) (*Resolved, error) {
	fd := w.takeCur()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pin: fstat %s: %w", w.curPath, err)
	}
	if w.flags&NoXdev != 0 {
		if id, err := statID(fd); err != nil || id.mnt != w.startMnt {
			unix.Close(fd)
			if err != nil {
				return nil, err
			}
			return nil, unix.EXDEV
		}
	}
	kind, p, deleted := w.classify(fd, w.curPath, &st)
	return &Resolved{
		Path:          p,
		Kind:          kind,
		Deleted:       deleted,
		Exists:        true,
		Stat:          st,
		Object:        newFile(fd, w.curPath),
		Name:          name,
		TrailingSlash: slash,
		last:          last,
	}, nil
}

// finishAbsent builds the result for a last component that does not exist.
func (w *walker) finishAbsent(name string, slash bool) (*Resolved, error) {
	var st unix.Stat_t
	if err := unix.Fstat(w.cur, &st); err != nil {
		return nil, fmt.Errorf("pin: fstat %s: %w", w.curPath, err)
	}
	if st.Nlink == 0 {
		// Nothing can be created or found in a removed directory.
		return nil, unix.ENOENT
	}
	return &Resolved{
		Path:          joinPath(w.curPath, name),
		Kind:          KindPath,
		Dir:           newFile(w.takeCur(), "dir"),
		Name:          name,
		TrailingSlash: slash,
		last:          lastNorm,
	}, nil
}

// deletedSuffix is what d_path appends to the path of an object whose
// name was removed.
const deletedSuffix = " (deleted)"

// classify says what the kernel's d_path text of an object the walk
// reached by its fd (fd, stat st) names:
//   - not an absolute path (pipe:[…], socket:[…], anon_inode:…): an
//     object that never had a name, KindAnon;
//   - a path ending in " (deleted)" that is not the object's real name:
//     the name it had was removed (unlinked, renamed over), with other
//     hard links or none. It is judged by that name, whatever became of
//     it, so keeping an O_PATH handle to a read-denied file and removing
//     the name gains nothing. Only an object on a mount that is in no
//     mount namespace (a memfd, SysV or anonymous shared memory: made
//     without a name) is KindAnon. An O_TMPFILE file reads as
//     "DIR/#INO (deleted)" and is judged as that name in DIR, where its
//     creation was judged as a write;
//   - any other path: the object's current name, KindPath.
func (w *walker) classify(fd int, text string, st *unix.Stat_t) (Kind, string, bool) {
	if !strings.HasPrefix(text, "/") {
		return KindAnon, text, false
	}
	if !strings.HasSuffix(text, deletedSuffix) {
		return KindPath, text, false
	}
	// A name that really ends in " (deleted)" leads back to the object.
	var real unix.Stat_t
	if unix.Fstatat(unix.AT_FDCWD, text, &real, unix.AT_SYMLINK_NOFOLLOW) == nil && real.Dev == st.Dev && real.Ino == st.Ino {
		return KindPath, text, false
	}
	if internal, err := onInternalMount(w.tid, fd); err == nil && internal {
		return KindAnon, text, false
	}
	return KindPath, strings.TrimSuffix(text, deletedSuffix), true
}

// onInternalMount reports whether fd's object is on a mount that is not
// in thread tid's mount namespace: the kernel's internal mounts (shmem for
// memfd and shared anonymous memory), which no name can reach. Any doubt
// (mountinfo unreadable) says no, so the object is judged by its old name.
func onInternalMount(tid, fd int) (bool, error) {
	var sx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &sx); err != nil {
		return false, err
	}
	if sx.Mask&unix.STATX_MNT_ID == 0 {
		return false, unix.ENOTSUP
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/mountinfo")
	if err != nil {
		return false, err
	}
	want := strconv.FormatUint(sx.Mnt_id, 10) + " "
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, want) {
			return false, nil
		}
	}
	return true, nil
}

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
