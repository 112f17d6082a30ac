package pin

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

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
	isCwd := dirfd == unix.AT_FDCWD
	switch {
	case isCwd && w.th != nil:
		// The thread cache's cwd (cwd.go), duplicated: the walk owns
		// what it starts from. One fcntl where /proc/TID/cwd is a procfs
		// lookup.
		fd, err = w.cachedCwd()
	case isCwd:
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
	if !isCwd {
		// A working directory is one: chdir and fchdir take nothing else.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("pin: fstat start dir: %w", err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return unix.ENOTDIR
		}
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

// cachedCwd is a new fd of the thread's working directory, from the
// thread cache.
func (w *walker) cachedCwd() (int, error) {
	fd, done, err := w.th.cwd()
	if err != nil {
		return -1, err
	}
	defer done()
	return dupCloexec(fd)
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
