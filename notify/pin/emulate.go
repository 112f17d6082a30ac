package pin

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Emulation: the supervisor performs an allowed operation itself on exactly
// what Resolve pinned. Names are acted on through the pinned Dir with
// single-component calls that never follow a symlink (openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, *at calls
// that do not follow), so a symlink swapped in after resolution cannot
// redirect them: the call fails (ELOOP for open) and the supervisor may
// resolve again. Metadata operations act on the pinned inode (Object). Errors
// are the kernel's own errnos, returned as bare unix.Errno where the kernel
// produced them.

// OpenValidFlags is the kernel's VALID_OPEN_FLAGS: open() ignores other bits,
// openat2 rejects them.
const OpenValidFlags = unix.O_ACCMODE | unix.O_CREAT | unix.O_EXCL | unix.O_NOCTTY | unix.O_TRUNC |
	unix.O_APPEND | unix.O_NONBLOCK | unix.O_DSYNC | unix.O_ASYNC | unix.O_DIRECT | 0x8000 /* O_LARGEFILE */ |
	unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NOATIME | unix.O_CLOEXEC | unix.O_SYNC | unix.O_PATH | unix.O_TMPFILE

const resolveOne = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func (r *Resolved) name() string {
	if r.TrailingSlash {
		return r.Name + "/"
	}
	return r.Name
}

func (r *Resolved) special() bool { return r.last != lastNorm }

func checkPinned(r *Resolved) error {
	if r == nil {
		return fmt.Errorf("pin: nil Resolved: %w", unix.EINVAL)
	}
	if r.Dir == nil && r.Object == nil {
		return fmt.Errorf("pin: %s was closed: %w", r.Path, unix.EBADF)
	}
	return nil
}

// checkWritable is checkPinned for operations that change something.
func checkWritable(r *Resolved) error {
	if err := checkPinned(r); err != nil {
		return err
	}
	return procGuard(r, false)
}

// hasDefaultACL reports whether directory dir has a default ACL, in which
// case the kernel ignores the umask for new entries.
func hasDefaultACL(dir *File) bool {
	if dir == nil {
		return false
	}
	n, err := unix.Getxattr(selfFd(dir), "system.posix_acl_default", nil)
	return err == nil && n > 0
}

// Open opens what r names as the call with these open flags would,
// and returns the file for the caller to install in the target with ADDFD.
// It honours O_CREAT/O_EXCL/O_TRUNC/O_APPEND/O_DIRECTORY/O_NOFOLLOW/
// O_TMPFILE/O_PATH/O_NONBLOCK…; the returned file is always O_CLOEXEC in the
// supervisor (pass the target's O_CLOEXEC wish to ADDFD) and never becomes
// the supervisor's controlling terminal. New files get mode &^ umask (or the
// directory's default ACL) and are owned as the target would own them.
// Reopening an Object-only result (a magic-link target such as a pipe behind
// /dev/stdin) reopens it through the supervisor's own /proc/self/fd link,
// which is what the kernel does for the target's magic-link reopen.
//
// ELOOP when r's last component was not a symlink at resolution means it was
// replaced by one since: the caller may resolve again.
func Open(r *Resolved, flags int, mode uint32, umask uint32) (*File, error) {
	if err := checkPinned(r); err != nil {
		return nil, err
	}
	readOnly := flags&unix.O_PATH != 0 ||
		(flags&unix.O_ACCMODE == unix.O_RDONLY && flags&(unix.O_CREAT|unix.O_TRUNC) == 0 && flags&unix.O_TMPFILE != unix.O_TMPFILE)
	if err := procGuard(r, readOnly); err != nil {
		return nil, err
	}
	if err := sysctlGuard(r); err != nil {
		return nil, err
	}
	if r.Exists && flags&unix.O_PATH == 0 && isIDMapFile(r) {
		return openInUserNS(r, flags)
	}
	if r.Exists && flags&unix.O_PATH == 0 && isDevTty(&r.Stat) {
		var f *File
		err := asCred(r.Cred, func() error {
			var err error
			f, err = openCtty(r.tid, flags&OpenValidFlags&^unix.O_NOFOLLOW)
			return err
		})
		return f, err
	}
	var f *File
	err := asCred(r.Cred, func() error {
		var err error
		f, err = openPinned(r, flags, mode, umask)
		return err
	})
	return f, err
}

func openPinned(r *Resolved, flags int, mode uint32, umask uint32) (*File, error) {
	flags &= OpenValidFlags
	if flags&unix.O_PATH != 0 {
		// open() ignores every other flag with O_PATH; openat2 would
		// reject them.
		flags &= unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW
		mode = 0
	} else {
		flags |= unix.O_NOCTTY
	}
	flags |= unix.O_CLOEXEC
	tmpfile := flags&unix.O_TMPFILE == unix.O_TMPFILE
	creat := flags&unix.O_CREAT != 0 && !tmpfile
	if creat || tmpfile {
		mode &= 0o7777
	} else {
		mode = 0
	}

	if r.Dir == nil {
		// Only the object itself is pinned: ".", "..", "/", a magic-link
		// target, the AT_EMPTY_PATH dirfd.
		if creat && flags&unix.O_EXCL != 0 {
			return nil, unix.EEXIST
		}
		if creat && r.TrailingSlash {
			return nil, unix.EISDIR
		}
		// O_NOFOLLOW would stop at the supervisor's own magic link; the
		// caller's O_NOFOLLOW was already applied by Resolve.
		oflags := flags &^ unix.O_NOFOLLOW
		if tmpfile {
			return createFile(func(m uint32) (int, error) {
				return openPathRetry(selfFd(r.Object), oflags, m)
			}, r.Object, mode, umask)
		}
		fd, err := reopen(r.Object, oflags, mode)
		if err != nil {
			return nil, err
		}
		return newFile(fd, r.Path), nil
	}

	name := r.name()
	open := func(fl int, m uint32) (int, error) {
		how := unix.OpenHow{Flags: uint64(fl), Mode: uint64(m), Resolve: resolveOne}
		for {
			fd, err := unix.Openat2(int(r.Dir.Fd()), name, &how)
			if err != unix.EINTR {
				return fd, err
			}
		}
	}
	switch {
	case tmpfile:
		// The path names the directory to create the unnamed file in.
		return createFile(func(m uint32) (int, error) { return open(flags, m) }, r.Object, mode, umask)
	case creat && r.TrailingSlash:
		return nil, unix.EISDIR
	case creat && flags&unix.O_DIRECTORY != 0:
		return nil, unix.EINVAL
	case creat:
		excl := flags&unix.O_EXCL != 0
		// Only a file this call creates gets the target's mode, so find
		// out which: open an existing file without O_CREAT, create with
		// O_EXCL, and go round again if the name came or went between.
		// A name that was missing when resolved is tried as a create
		// first (it most likely still is: one call instead of two).
		tryCreate := !r.Exists
		for range 8 {
			if !excl && !tryCreate {
				fd, err := open(flags&^unix.O_CREAT, 0)
				if err != unix.ENOENT {
					if err != nil {
						return nil, err
					}
					// The kernel refuses O_CREAT on a directory
					// even when it only opens it.
					var st unix.Stat_t
					if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
						unix.Close(fd)
						return nil, unix.EISDIR
					}
					return newFile(fd, r.Path), nil
				}
			}
			tryCreate = false
			f, err := createFile(func(m uint32) (int, error) { return open(flags|unix.O_EXCL, m) }, r.Dir, mode, umask)
			if err == unix.EEXIST && !excl {
				continue
			}
			return f, err
		}
		return nil, fmt.Errorf("pin: %s keeps appearing and disappearing: %w", r.Path, unix.EAGAIN)
	default:
		fd, err := open(flags, 0)
		if err != nil {
			return nil, err
		}
		return newFile(fd, r.Path), nil
	}
}

// reopen opens the object of the supervisor's fd f anew with flags,
// through its /proc/self/fd link (relative to the cached /proc/self/fd,
// which skips the lookups of "/proc", "self" and "fd").
func reopen(f *File, flags int, mode uint32) (int, error) {
	dir := selfFdDir()
	if dir < 0 {
		return openPathRetry(selfFd(f), flags, mode)
	}
	name := strconv.Itoa(int(f.Fd()))
	for {
		fd, err := unix.Openat(dir, name, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func openPathRetry(p string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Open(p, flags, mode)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// createFile creates a file with create(mode) and gives it the mode the
// kernel would have given it under the target's umask. The supervisor's own
// umask is process-wide and cannot be the target's, so without a default
// ACL the file is created with mode 0 (never more open than intended, even
// for an instant) and then fchmod'ed.
func createFile(create func(mode uint32) (int, error), aclDir *File, mode, umask uint32) (*File, error) {
	if hasDefaultACL(aclDir) {
		fd, err := create(mode)
		if err != nil {
			return nil, err
		}
		return newFile(fd, "created"), nil
	}
	fd, err := create(0)
	if err != nil {
		return nil, err
	}
	if want := mode &^ umask & 0o7777; want != 0 {
		// The create succeeded, and the kernel's would have: a filesystem
		// that cannot store modes (vfat) refusing fchmod does not undo it.
		// The file then stays mode 0, never more open than asked.
		unix.Fchmod(fd, want)
	}
	return newFile(fd, "created"), nil
}

// Unlink removes what r names: unlinkat, or with removeDir rmdir semantics.
func Unlink(r *Resolved, removeDir bool) error {
	if err := checkWritable(r); err != nil {
		return err
	}
	if err := checkNameOp("unlink", r); err != nil {
		return err
	}
	switch r.last {
	case lastNorm:
	case lastDot:
		if removeDir {
			return unix.EINVAL
		}
		return unix.EISDIR
	case lastDotDot:
		if removeDir {
			return unix.ENOTEMPTY
		}
		return unix.EISDIR
	case lastRoot:
		if removeDir {
			return unix.EBUSY
		}
		return unix.EISDIR
	default:
		return errNeedName("unlink", r)
	}
	fl := 0
	if removeDir {
		fl = unix.AT_REMOVEDIR
	}
	return asCred(r.Cred, func() error {
		return retry(func() error { return unix.Unlinkat(int(r.Dir.Fd()), r.name(), fl) })
	})
}

// checkNameOp checks that r was resolved for a call that handles its last
// name itself. Only a trailing slash after a symlink makes ParentOnly matter,
// and getting it wrong would act on the symlink's target instead of failing
// as the kernel does (rmdir("link-to-dir/") is ENOTDIR), so say so loudly.
func checkNameOp(op string, r *Resolved) error {
	if r.TrailingSlash && r.flags&ParentOnly == 0 && r.lastLink {
		return fmt.Errorf("pin: %s of %q: Resolve was called without ParentOnly: %w", op, r.Path, unix.EINVAL)
	}
	return nil
}

func errNeedName(op string, r *Resolved) error {
	return fmt.Errorf("pin: %s of %s needs the name itself (resolve without FollowLast/AllowEmpty): %w", op, r.Path, unix.EINVAL)
}

func retry(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// parentMnt is the mount the kernel compares for EXDEV: that of the
// directory the last name is looked up in.
func parentMnt(r *Resolved) (uint64, error) {
	f := r.Dir
	if f == nil {
		f = r.Object
	}
	id, err := statID(int(f.Fd()))
	return id.mnt, err
}

// Rename is renameat2(from, to, flags) with RENAME_NOREPLACE, RENAME_EXCHANGE
// and RENAME_WHITEOUT passed to the kernel.
func Rename(from, to *Resolved, flags uint) error {
	if err := checkWritable(from); err != nil {
		return err
	}
	if err := checkWritable(to); err != nil {
		return err
	}
	if err := checkNameOp("rename", from); err != nil {
		return err
	}
	if err := checkNameOp("rename", to); err != nil {
		return err
	}
	if from.special() || to.special() {
		if from.last == lastObject || to.last == lastObject {
			return errNeedName("rename", from)
		}
		// The kernel's order: EXDEV, then EBUSY (EEXIST for a
		// RENAME_NOREPLACE onto a special name).
		m1, err := parentMnt(from)
		if err != nil {
			return err
		}
		m2, err := parentMnt(to)
		if err != nil {
			return err
		}
		if m1 != m2 {
			return unix.EXDEV
		}
		if !from.special() && flags&unix.RENAME_NOREPLACE != 0 {
			return unix.EEXIST
		}
		return unix.EBUSY
	}
	return asCred(from.Cred, func() error {
		return retry(func() error {
			return unix.Renameat2(int(from.Dir.Fd()), from.name(), int(to.Dir.Fd()), to.name(), flags)
		})
	})
}

// checkCreate applies the kernel's filename_create rules for a last
// component that is not an ordinary name.
func checkCreate(op string, r *Resolved) error {
	if err := checkWritable(r); err != nil {
		return err
	}
	if err := checkNameOp(op, r); err != nil {
		return err
	}
	switch r.last {
	case lastNorm:
		return nil
	case lastObject:
		return errNeedName(op, r)
	}
	return unix.EEXIST
}

// fixMode sets the mode of the entry just created at r (not following
// symlinks; keeping a set-group-id bit the kernel inherited from a setgid
// parent directory).
func fixMode(r *Resolved, want uint32, keepSgid bool, typ uint32) error {
	fd, err := openatRetry(int(r.Dir.Fd()), r.Name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC)
	if err != nil {
		// Already gone or replaced by the target itself: its mkdir did
		// happen, so report success as the kernel would have.
		return nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != typ {
		return nil // replaced meanwhile: not ours to change
	}
	if keepSgid {
		want |= st.Mode & unix.S_ISGID
	}
	if st.Mode&0o7777 == want {
		return nil
	}
	if err := unix.Fchmodat(fd, "", want, unix.AT_EMPTY_PATH); err != nil {
		return fmt.Errorf("pin: set mode of new %s: %w", r.Path, err)
	}
	return nil
}

// Mkdir is mkdirat with the target's umask (or the parent's default ACL).
func Mkdir(r *Resolved, mode, umask uint32) error {
	if err := checkCreate("mkdir", r); err != nil {
		return err
	}
	mode &= 0o777 | unix.S_ISVTX
	return asCred(r.Cred, func() error {
		if hasDefaultACL(r.Dir) {
			return retry(func() error { return unix.Mkdirat(int(r.Dir.Fd()), r.name(), mode) })
		}
		if err := retry(func() error { return unix.Mkdirat(int(r.Dir.Fd()), r.name(), 0) }); err != nil {
			return err
		}
		return fixMode(r, mode&^umask, true, unix.S_IFDIR)
	})
}

// Mknod is mknodat with the target's umask (or the parent's default ACL).
func Mknod(r *Resolved, mode uint32, dev uint64, umask uint32) error {
	if err := checkCreate("mknod", r); err != nil {
		return err
	}
	return asCred(r.Cred, func() error {
		mk := func(m uint32) error {
			return retry(func() error { return unix.Mknodat(int(r.Dir.Fd()), r.name(), m, int(dev)) })
		}
		if hasDefaultACL(r.Dir) {
			return mk(mode)
		}
		typ := mode & unix.S_IFMT
		if err := mk(typ); err != nil {
			return err
		}
		if typ == 0 {
			typ = unix.S_IFREG
		}
		return fixMode(r, mode&0o7777&^umask, false, typ)
	})
}

// Symlink is symlinkat(target, r).
func Symlink(target string, r *Resolved) error {
	if err := checkCreate("symlink", r); err != nil {
		return err
	}
	return asCred(r.Cred, func() error {
		return retry(func() error { return unix.Symlinkat(target, int(r.Dir.Fd()), r.name()) })
	})
}

// capDacReadSearch is CAP_DAC_READ_SEARCH's bit in CapEff.
const capDacReadSearch = 1 << 2

// Link is linkat(from, to, flags). When from is an object reached through a
// magic link or AT_EMPTY_PATH (an O_TMPFILE file being given a name), the
// pinned inode is linked through the supervisor's /proc/self/fd link; the
// kernel's rule that AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH is applied to the
// target's capabilities.
func Link(from, to *Resolved, flags int) error {
	if err := checkWritable(from); err != nil {
		return err
	}
	if err := checkCreate("link", to); err != nil {
		return err
	}
	if flags&^(unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return unix.EINVAL
	}
	return asCred(from.Cred, func() error {
		if from.Dir != nil {
			return retry(func() error {
				return unix.Linkat(int(from.Dir.Fd()), from.name(), int(to.Dir.Fd()), to.name(), 0)
			})
		}
		if flags&unix.AT_EMPTY_PATH != 0 {
			st, err := readStatus(from.tid)
			if err != nil {
				return err
			}
			if st.cred.CapEff&capDacReadSearch == 0 {
				return unix.ENOENT
			}
		}
		return retry(func() error {
			return unix.Linkat(unix.AT_FDCWD, selfFd(from.Object), int(to.Dir.Fd()), to.name(), unix.AT_SYMLINK_FOLLOW)
		})
	})
}

// pinnedObject returns the pinned inode a metadata operation acts on.
func pinnedObject(r *Resolved) (*File, error) {
	if err := checkWritable(r); err != nil {
		return nil, err
	}
	if !r.Exists || r.Object == nil {
		return nil, unix.ENOENT
	}
	return r.Object, nil
}

// Truncate is truncate(2) on the pinned inode.
func Truncate(r *Resolved, length int64) error {
	if length < 0 {
		return unix.EINVAL
	}
	obj, err := pinnedObject(r)
	if err != nil {
		return err
	}
	return asCred(r.Cred, func() error {
		var st unix.Stat_t
		if err := unix.Fstat(int(obj.Fd()), &st); err != nil {
			return fmt.Errorf("pin: fstat %s: %w", r.Path, err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			return unix.EISDIR
		case unix.S_IFREG:
		default:
			return unix.EINVAL
		}
		// truncate() through our own magic link: the kernel's permission,
		// append-only, immutable and ETXTBSY checks on exactly this inode.
		return retry(func() error { return unix.Truncate(selfFd(obj), length) })
	})
}

// Chmod is fchmodat on the pinned inode; on a symlink the kernel's answer
// for fchmodat(…, AT_SYMLINK_NOFOLLOW) applies.
func Chmod(r *Resolved, mode uint32) error {
	obj, err := pinnedObject(r)
	if err != nil {
		return err
	}
	fl := unix.AT_EMPTY_PATH
	if r.Stat.Mode&unix.S_IFMT == unix.S_IFLNK {
		fl |= unix.AT_SYMLINK_NOFOLLOW
	}
	return asCred(r.Cred, func() error {
		return retry(func() error { return unix.Fchmodat(int(obj.Fd()), "", mode&0o7777, fl) })
	})
}

// Chown is fchownat on the pinned inode. Whether a symlink in the last
// component was followed (chown) or not (lchown, AT_SYMLINK_NOFOLLOW) was
// decided by Resolve (FollowLast): the pinned inode is the link itself or
// its target, so the call acts on the right one without a flag of its own.
// A symlink reached by a magic link is changed itself, as the kernel does.
// uid or gid -1 leaves that id alone.
func Chown(r *Resolved, uid, gid int) error {
	obj, err := pinnedObject(r)
	if err != nil {
		return err
	}
	return asCred(r.Cred, func() error {
		return retry(func() error { return unix.Fchownat(int(obj.Fd()), "", uid, gid, unix.AT_EMPTY_PATH) })
	})
}

// Utimens is utimensat on the pinned inode (the link itself when Resolve
// did not follow it, as for AT_SYMLINK_NOFOLLOW); nil ts sets both times
// to now (with the same permission rule as the kernel's NULL).
func Utimens(r *Resolved, ts *[2]unix.Timespec) error {
	obj, err := pinnedObject(r)
	if err != nil {
		return err
	}
	t := [2]unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
	if ts != nil {
		t = *ts
	}
	return asCred(r.Cred, func() error {
		return retry(func() error { return unix.UtimesNanoAt(int(obj.Fd()), "", t[:], unix.AT_EMPTY_PATH) })
	})
}

// Setxattr is setxattr on the pinned inode: the target of a followed
// symlink (setxattr), or the link itself when Resolve did not follow it
// (lsetxattr).
func Setxattr(r *Resolved, name string, value []byte, flags int) error {
	obj, err := pinnedObject(r)
	if err != nil {
		return err
	}
	return asCred(r.Cred, func() error {
		// Following our own magic link lands on the object and stops
		// there, even when the object is a symlink.
		return retry(func() error { return unix.Setxattr(selfFd(obj), name, value, flags) })
	})
}

// Removexattr is removexattr on the pinned inode (see Setxattr for
// symlinks).
func Removexattr(r *Resolved, name string) error {
	obj, err := pinnedObject(r)
	if err != nil {
		return err
	}
	return asCred(r.Cred, func() error {
		return retry(func() error { return unix.Removexattr(selfFd(obj), name) })
	})
}

// remoteMagics are the statfs types of file systems where an open waits
// on a server (or a user-space daemon): NFS, SMB/CIFS, FUSE, Ceph, AFS,
// 9P, Coda, GlusterFS (FUSE), OCFS2, GFS2.
var remoteMagics = map[int64]bool{
	0x6969:     true, // NFS
	0xfe534d42: true, // SMB2
	0xff534d42: true, // CIFS
	0x517b:     true, // SMB
	0x65735546: true, // FUSE
	0x65735543: true, // FUSE control
	0x00c36400: true, // Ceph
	0x5346414f: true, // AFS
	0x6b414653: true, // kAFS
	0x01021997: true, // 9P
	0x73757245: true, // Coda
	0x7461636f: true, // OCFS2
	0x01161970: true, // GFS2
}

// RemoteFS reports whether r's object (or, for a missing name, its
// directory) is on a network or FUSE file system.
func RemoteFS(r *Resolved) (bool, error) {
	f := r.Object
	if f == nil {
		f = r.Dir
	}
	if f == nil {
		return false, fmt.Errorf("pin: %s was closed: %w", r.Path, unix.EBADF)
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &sfs); err != nil {
		return false, err
	}
	return remoteMagics[int64(sfs.Type)], nil
}

// OpenFIFOPeer opens, without blocking, the other end of the FIFO r for
// an open with flags: a reader for a writer that waits, a writer for a
// reader (which succeeds only while a reader is there). It releases an
// open of the FIFO blocked in the supervisor whose target is gone.
func OpenFIFOPeer(r *Resolved, flags int) (*File, error) {
	if err := checkPinned(r); err != nil {
		return nil, err
	}
	if r.Object == nil {
		return nil, unix.ENOENT
	}
	mode := unix.O_WRONLY
	if flags&unix.O_ACCMODE == unix.O_WRONLY {
		mode = unix.O_RDONLY
	}
	fd, err := openPathRetry(selfFd(r.Object), mode|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	return newFile(fd, r.Path), nil
}
