package pin

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
// run on a locked OS thread whose effective (and so fs) uid, gid and groups
// are switched to the target's fs ids: credentials are per thread in Linux
// when changed with raw syscalls. A supervisor that cannot switch (not root)
// refuses with EPERM.

type selfIDs struct {
	uid, gid uint32
	groups   []uint32
}

var selfCred = sync.OnceValue(func() selfIDs {
	s := selfIDs{uid: uint32(unix.Geteuid()), gid: uint32(unix.Getegid())}
	gs, _ := unix.Getgroups()
	for _, g := range gs {
		s.groups = append(s.groups, uint32(g))
	}
	slices.Sort(s.groups)
	return s
})

func sameGroups(a, b []uint32) bool {
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

// asCred runs fn with the filesystem identity c (nil: the supervisor's own).
func asCred(c *Cred, fn func() error) error {
	self := selfCred()
	if c == nil || (c.UID == self.uid && c.GID == self.gid && sameGroups(c.Groups, self.groups)) {
		return fn()
	}
	runtime.LockOSThread()
	if err := switchCred(c.UID, c.GID, c.Groups); err != nil {
		if rerr := switchCred(self.uid, self.gid, self.groups); rerr != nil {
			// The thread's identity is unknown: keep it locked so the
			// runtime retires it when this goroutine ends.
			return fmt.Errorf("pin: cannot act as uid %d gid %d (%v), and restoring failed (%v): %w", c.UID, c.GID, err, rerr, unix.EPERM)
		}
		runtime.UnlockOSThread()
		return fmt.Errorf("pin: cannot act as uid %d gid %d: %v: %w", c.UID, c.GID, err, unix.EPERM)
	}
	ferr := fn()
	if rerr := switchCred(self.uid, self.gid, self.groups); rerr != nil {
		return fmt.Errorf("pin: restoring supervisor credentials failed (%v): %w", rerr, unix.EPERM)
	}
	runtime.UnlockOSThread()
	return ferr
}

// switchCred makes this thread act as uid/gid/groups. It sets the thread's
// effective ids (fs ids follow them), not only the fs ids: moving the
// effective uid away from 0 clears the effective capabilities, so the
// kernel's permission checks and the credentials recorded in files opened
// here (f_cred, which some later checks consult) are the target's, not
// root's. The saved uid stays the supervisor's, which is what lets it switch
// back. Raw syscalls act on this thread only (Go's syscall.Setresuid would
// change every thread).
func switchCred(uid, gid uint32, groups []uint32) error {
	self := selfCred()
	// Back to the supervisor's effective uid first, regaining the
	// capabilities the calls below need.
	if uint32(unix.Geteuid()) != self.uid {
		if err := setresuid(self.uid); err != nil {
			return fmt.Errorf("setresuid(-1, %d, -1): %w", self.uid, err)
		}
	}
	gs := make([]int, len(groups))
	for i, g := range groups {
		gs[i] = int(g)
	}
	if err := unix.Setgroups(gs); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(gid), ^uintptr(0)); e != 0 {
		return fmt.Errorf("setresgid(-1, %d, -1): %w", gid, e)
	}
	if uint32(unix.Getegid()) != gid {
		return fmt.Errorf("setresgid(-1, %d, -1) did not take", gid)
	}
	if err := setresuid(uid); err != nil {
		return fmt.Errorf("setresuid(-1, %d, -1): %w", uid, err)
	}
	if uint32(unix.Geteuid()) != uid {
		return fmt.Errorf("setresuid(-1, %d, -1) did not take", uid)
	}
	return nil
}

func setresuid(euid uint32) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(euid), ^uintptr(0)); e != 0 {
		return e
	}
	return nil
}
