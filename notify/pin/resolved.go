package pin

import (
	"errors"

	"golang.org/x/sys/unix"
)

// What a resolution yields: the Resolved with its pinned descriptors, the
// kind of object it names, and the errno an error of this package gives
// the target.

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
