package pin

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Following links during a walk: an ordinary symlink (its text read and
// walked on from where it stands, at most maxLinks in one lookup) and a
// /proc magic link (fd/N, cwd, root, exe of the target's own process),
// opened from the supervisor and continued from the fd it yields.

// maxLinks is the kernel's MAXSYMLINKS: symlinks followed in one lookup,
// nested or not.
const maxLinks = 40

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
