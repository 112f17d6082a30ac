package pin

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Facts about a pinned path that the kernel would consult before the
// policy matters: whether the target's own credentials let it do what it
// asks at all, and what a symlink's target is. The supervisor asks them
// only when its policy would not simply allow a call, so it can answer as
// the kernel would instead of asking a person about a call that cannot
// change anything.

// Access modes for Permitted (access(2)'s).
const (
	MayRead  = unix.R_OK
	MayWrite = unix.W_OK
	MayExec  = unix.X_OK
)

// Permitted reports whether the thread that made the call could access
// the object r pinned with mode (MayRead|MayWrite|MayExec), by the
// kernel's own check made with the thread's filesystem identity:
// faccessat2(AT_EACCESS) on the pinned inode, so DAC, ACLs, read-only
// mounts (EROFS) and immutable files (EPERM) count. It returns nil when
// the access is permitted and the kernel's errno when it is not.
//
// The check runs with the target's uid, gid and groups; a target that
// holds capabilities of its own (a non-root process with CAP_DAC_OVERRIDE)
// may be refused here where the kernel would let it through, never the
// other way round.
func Permitted(r *Resolved, mode uint32) error {
	if err := checkPinned(r); err != nil {
		return err
	}
	if r.Object == nil {
		return fmt.Errorf("pin: %s does not exist: %w", r.Path, unix.ENOENT)
	}
	return accessAs(r.Cred, r.Object, mode)
}

// ParentPermitted reports whether the thread could create or remove a
// name in the directory holding r's last component: write and search on
// that directory (may_create and may_delete's first check; the sticky
// bit's ownership rule is not applied, so a nil here may still end in
// EPERM from the kernel).
func ParentPermitted(r *Resolved) error {
	if err := checkPinned(r); err != nil {
		return err
	}
	if r.Dir == nil {
		return fmt.Errorf("pin: %s has no pinned parent: %w", r.Path, unix.EINVAL)
	}
	return accessAs(r.Cred, r.Dir, MayWrite|MayExec)
}

func accessAs(c *Cred, f *File, mode uint32) error {
	return asCred(c, func() error {
		return retry(func() error {
			return unix.Faccessat2(int(f.Fd()), "", mode, unix.AT_EACCESS|unix.AT_EMPTY_PATH)
		})
	})
}

// SymlinkTarget stats what a symlink with this target text, created as
// r's last component, would lead to now: target resolved against the
// directory holding the link (or from the root when absolute), following
// symlinks, with the thread's identity. It says only what is there at
// this moment; a caller must not rely on it staying so.
func SymlinkTarget(r *Resolved, target string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := checkPinned(r); err != nil {
		return st, err
	}
	if r.Dir == nil || target == "" {
		return st, unix.ENOENT
	}
	err := asCred(r.Cred, func() error {
		return retry(func() error { return unix.Fstatat(int(r.Dir.Fd()), target, &st, 0) })
	})
	return st, err
}

// ReadHead reads at most n bytes from the start of f with pread (the
// file's offset, which the target will inherit with the fd, is left
// where it is). A short read ends it.
func ReadHead(f *File, buf []byte) ([]byte, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(int(f.Fd()), buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return buf[:n], err
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
	}
	return buf[:n], nil
}

// FSUID is the filesystem uid the thread acted with when r was resolved
// (the uid the kernel compares with a file's owner).
func (r *Resolved) FSUID() uint32 {
	if r.Cred != nil {
		return r.Cred.UID
	}
	return selfCred().uid
}
