package notify

import (
	"fmt"
	"runtime"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Credentials. A target may have dropped to another uid (no-new-privs stops
// gaining privilege, not dropping it), and the supervisor may be root. The
// kernel would check the target's fs uid/gid and groups, and would make
// anything the target creates owned by them, so resolution and emulation
// run on a locked OS thread whose fs uid, fs gid and groups are switched to
// the target's (setfsuid/setfsgid/setgroups act on the calling thread only
// when issued as raw syscalls, which is what x/sys/unix does). A supervisor
// that cannot switch (not root) refuses with EPERM.

type rsvSelf struct {
	uid, gid uint32
	groups   []uint32
}

var rsvSelfCred = sync.OnceValue(func() rsvSelf {
	s := rsvSelf{uid: uint32(unix.Geteuid()), gid: uint32(unix.Getegid())}
	gs, _ := unix.Getgroups()
	for _, g := range gs {
		s.groups = append(s.groups, uint32(g))
	}
	slices.Sort(s.groups)
	return s
})

func rsvSameGroups(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	if slices.IsSorted(a) {
		return slices.Equal(a, b)
	}
	c := slices.Clone(a)
	slices.Sort(c)
	return slices.Equal(c, b)
}

// WithCred runs fn with the filesystem identity c (a Resolved's Cred; nil:
// the supervisor's own), for operations on a target's open file that have no
// primitive here: fchmod, fchown, fsetxattr, ftruncate, futimens on the file
// GetFd returned. Those act on the open file description, so they keep the
// kernel's own answers (EBADF on an O_PATH fd, EINVAL for ftruncate on a
// read-only one) without any path being involved.
func WithCred(c *Cred, fn func() error) error { return rsvAs(c, fn) }

// rsvAs runs fn with the filesystem identity c (nil: the supervisor's own).
func rsvAs(c *Cred, fn func() error) error {
	self := rsvSelfCred()
	if c == nil || (c.UID == self.uid && c.GID == self.gid && rsvSameGroups(c.Groups, self.groups)) {
		return fn()
	}
	runtime.LockOSThread()
	if err := rsvSwitch(c.UID, c.GID, c.Groups); err != nil {
		if rerr := rsvSwitch(self.uid, self.gid, self.groups); rerr != nil {
			// The thread's identity is unknown: keep it locked so the
			// runtime retires it when this goroutine ends.
			return fmt.Errorf("notify: cannot act as uid %d gid %d (%v), and restoring failed (%v): %w", c.UID, c.GID, err, rerr, unix.EPERM)
		}
		runtime.UnlockOSThread()
		return fmt.Errorf("notify: cannot act as uid %d gid %d: %v: %w", c.UID, c.GID, err, unix.EPERM)
	}
	ferr := fn()
	if rerr := rsvSwitch(self.uid, self.gid, self.groups); rerr != nil {
		return fmt.Errorf("notify: restoring supervisor credentials failed (%v): %w", rerr, unix.EPERM)
	}
	runtime.UnlockOSThread()
	return ferr
}

// rsvSwitch sets this thread's groups, fs gid and fs uid, in the order that
// keeps CAP_SETGID usable (setfsuid away from 0 drops only fs capabilities),
// and verifies each: setfsuid/setfsgid report failure only by not changing.
func rsvSwitch(uid, gid uint32, groups []uint32) error {
	gs := make([]int, len(groups))
	for i, g := range groups {
		gs[i] = int(g)
	}
	// Back to the supervisor's fs uid first so the capabilities needed
	// below are effective again.
	if cur, _ := unix.SetfsuidRetUid(-1); uint32(cur) != uid {
		unix.SetfsuidRetUid(int(rsvSelfCred().uid))
	}
	if err := unix.Setgroups(gs); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	unix.SetfsgidRetGid(int(gid))
	if cur, _ := unix.SetfsgidRetGid(-1); uint32(cur) != gid {
		return fmt.Errorf("setfsgid(%d) did not take", gid)
	}
	unix.SetfsuidRetUid(int(uid))
	if cur, _ := unix.SetfsuidRetUid(-1); uint32(cur) != uid {
		return fmt.Errorf("setfsuid(%d) did not take", uid)
	}
	return nil
}
