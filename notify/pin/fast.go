package pin

import (
	"path"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// The fast path of Resolve, for callers that act only on the object
// reached (ObjectOnly: an open without O_CREAT). Instead of walking
// component by component, the kernel resolves the whole path in one
// openat2(O_PATH) from the thread's own start directory — the
// supervisor's "/" when the thread's root is the same (checked per
// thread, see threads.go), its cwd from /proc/TID/cwd, or its dirfd from
// pidfd_getfd — with the target's credentials. The policy then judges the
// path of the object actually reached and Open reopens that very object
// through /proc/self/fd: what is installed is what was judged, whatever
// the target does to the names meanwhile.
//
// Two tries:
//  1. RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS. Without symlinks the
//     kernel's walk is lexical, so for an absolute path the canonical
//     path is the cleaned string itself (no readlink), and a failure
//     (ENOENT, ENOTDIR, EACCES, ENAMETOOLONG) is exactly the target's:
//     the walk met no symlink before it, so no /proc/self (which would
//     name the supervisor) was involved.
//  2. On ELOOP (a symlink on the way), the same with symlinks followed
//     but magic links refused. The path is read back from the fd. If it
//     lies in procfs (a symlink such as /proc/self may have meant the
//     supervisor), or anything fails, the walk decides instead.
//
// The walk (resolve.go) remains for everything the fast path cannot
// express: creating and name calls (ParentOnly: they need the directory
// and the name), AT_EMPTY_PATH, openat2's RESOLVE_BENEATH, _IN_ROOT,
// _NO_XDEV and _NO_SYMLINKS asked by the caller, magic links
// (/proc/PID/fd/N, /dev/stdin), a result in procfs reached through a
// symlink, a last component that is a symlink not to be followed
// (O_NOFOLLOW), any error of the second try, and threads whose root is
// not the supervisor's.

// fastFlags are the ResolveFlags the fast path handles.
const fastFlags = ObjectOnly | FollowLast | MustBeDir | NoMagicLinks

// ownRootFd is an O_PATH fd of the supervisor's "/", opened once.
var ownRootFd = sync.OnceValue(func() int {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
})

// fastResolve tries the fast path. ok false: use the walk.
func fastResolve(t *Thread, st *procStatus, dirfd int, p string, flags ResolveFlags) (r *Resolved, ok bool, err error) {
	if flags&ObjectOnly == 0 || flags&^fastFlags != 0 || p == "" {
		return nil, false, nil
	}
	abs := p[0] == '/'
	if (abs || dirfd == unix.AT_FDCWD) && !t.rootIsOurs() {
		return nil, false, nil
	}
	start := -1
	switch {
	case abs:
		if start = ownRootFd(); start < 0 {
			return nil, false, nil
		}
	case dirfd == unix.AT_FDCWD:
		fd, done, err := t.cwd()
		if err != nil {
			return nil, false, nil
		}
		defer done()
		start = fd
	case dirfd >= 0:
		fd, err := unix.PidfdGetfd(t.Pidfd(), dirfd, 0)
		if err == unix.EBADF {
			return nil, true, unix.EBADF
		}
		if err != nil {
			return nil, false, nil
		}
		defer unix.Close(fd)
		start = fd
	default:
		return nil, false, nil
	}
	oflags := unix.O_PATH | unix.O_CLOEXEC
	if flags&FollowLast == 0 {
		oflags |= unix.O_NOFOLLOW
	}
	if flags&MustBeDir != 0 {
		oflags |= unix.O_DIRECTORY
	}
	how := unix.OpenHow{Flags: uint64(oflags), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd := -1
	open := func() error {
		for {
			var err error
			fd, err = unix.Openat2(start, p, &how)
			if err != unix.EINTR && err != unix.EAGAIN {
				return err
			}
		}
	}
	lexical := true
	err = asCred(st.credp(), open)
	if err == unix.ELOOP {
		lexical = false
		how.Resolve = unix.RESOLVE_NO_MAGICLINKS
		err = asCred(st.credp(), open)
	}
	if err != nil {
		switch {
		case lexical && (err == unix.ENOENT || err == unix.ENOTDIR || err == unix.EACCES || err == unix.ENAMETOOLONG):
			return nil, true, err
		}
		return nil, false, nil
	}
	keep := false
	defer func() {
		if !keep {
			unix.Close(fd)
		}
	}()
	var sb unix.Stat_t
	if unix.Fstat(fd, &sb) != nil || sb.Mode&unix.S_IFMT == unix.S_IFLNK {
		// A symlink itself (O_NOFOLLOW): the walk gives the kernel's
		// answer for opening one.
		return nil, false, nil
	}
	var canon string
	if abs && lexical {
		canon = path.Clean(p)
	} else {
		if canon, err = fdPath(fd); err != nil || !strings.HasPrefix(canon, "/") || strings.HasSuffix(canon, deletedSuffix) {
			// Not a current name (anonymous, or removed): the walk classifies it.
			return nil, false, nil
		}
	}
	if inProc(canon) {
		// /proc entries need the walk: it pins the /proc/PID directory
		// the guard reads (procGuard: whether the target traces that
		// process, as gdb does before it opens /proc/PID/mem and auxv),
		// and resolves the magic links /proc is made of.
		return nil, false, nil
	}
	keep = true
	return &Resolved{
		Path:          canon,
		Kind:          KindPath,
		Name:          canon[strings.LastIndexByte(canon, '/')+1:],
		Exists:        true,
		Stat:          sb,
		Object:        newFile(fd, canon),
		TrailingSlash: strings.HasSuffix(p, "/"),
		last:          lastObject,
	}, true, nil
}

// inProc reports a path inside a procfs mount.
func inProc(p string) bool {
	for _, m := range procMounts() {
		if m == "/" || p == m || strings.HasPrefix(p, m+"/") {
			return true
		}
	}
	return false
}
