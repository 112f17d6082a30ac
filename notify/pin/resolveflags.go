package pin

import (
	"golang.org/x/sys/unix"
)

// The lookup semantics a call asks for (ResolveFlags), translated from its
// open, openat2 and *at flags.

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
