package pin

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/procfs"
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

// switches reports whether acting with c changes the thread's identity.
func switches(c *Cred) bool {
	self := selfCred()
	return c != nil && !(c.UID == self.uid && c.GID == self.gid && sameGroups(c.Groups, self.groups))
}

// asCred runs fn with the filesystem identity c (nil: the supervisor's own).
func asCred(c *Cred, fn func() error) error {
	self := selfCred()
	if !switches(c) {
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

// Ucred is SCM_CREDENTIALS: a process id, a user and a group id, as a
// process sends them over a Unix socket (and as the kernel attaches them
// for a receiver with SO_PASSCRED when the sender sends none).
type Ucred struct {
	Pid      int32
	UID, GID uint32
}

// Capability bits of CapEff that SCM_CREDENTIALS depends on.
const (
	capSetgid   = 1 << 6
	capSetuid   = 1 << 7
	capSysAdmin = 1 << 21
)

// ErrForeignNamespace: a process's credentials are in another user or
// pid namespace than the supervisor's, where the numbers mean other ids.
var ErrForeignNamespace = errors.New("pin: the process is in another user or pid namespace than permwrap")

// SenderUcred is what the kernel attaches for thread tid when it sends
// on a Unix socket without SCM_CREDENTIALS: its process id and real ids.
func SenderUcred(tid int) (Ucred, error) {
	st, err := readStatus(tid)
	if err != nil {
		return Ucred{}, err
	}
	if !sameNamespaces(tid) {
		return Ucred{}, ErrForeignNamespace
	}
	return Ucred{Pid: int32(st.tgid), UID: st.uids[0], GID: st.gids[0]}, nil
}

// CheckUcred checks SCM_CREDENTIALS that thread tid sends as the kernel
// checks them against the sender (scm_check_creds): the pid is the
// sender's own process unless it has CAP_SYS_ADMIN, the uid one of its
// real, effective or saved uids unless it has CAP_SETUID, the gid the
// same with CAP_SETGID. EPERM (or EINVAL for an id no namespace maps)
// when the kernel would refuse them.
func CheckUcred(tid int, u Ucred) error {
	if u.UID == ^uint32(0) || u.GID == ^uint32(0) {
		return unix.EINVAL
	}
	st, err := readStatus(tid)
	if err != nil {
		return err
	}
	if !sameNamespaces(tid) {
		return ErrForeignNamespace
	}
	capEff := st.cred.CapEff
	pidOK := u.Pid == int32(st.tgid) || capEff&capSysAdmin != 0
	uidOK := slices.Contains(st.uids[:3], u.UID) || capEff&capSetuid != 0
	gidOK := slices.Contains(st.gids[:3], u.GID) || capEff&capSetgid != 0
	if !pidOK || !uidOK || !gidOK {
		return unix.EPERM
	}
	return nil
}

// CanClaimUcred reports whether the supervisor, acting as itself, may
// send any credentials a target may send: the kernel checks them against
// whoever sends, and only CAP_SYS_ADMIN lets a sender name another
// process's pid (with CAP_SETUID and CAP_SETGID for other ids). True when
// permwrap runs as root; a supervisor acting with a target's identity
// (asCred) has dropped them.
//
// The permitted set is read, not the effective one: a thread that acts
// for a target at the moment has dropped its effective capabilities, and
// regains them from the permitted set when it switches back.
var CanClaimUcred = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	v, ok := procfs.StatusField(b, "CapPrm")
	if !ok {
		return false
	}
	prm, err := strconv.ParseUint(string(v), 16, 64)
	const need = capSysAdmin | capSetuid | capSetgid
	return err == nil && prm&need == need
})

// sameNamespaces reports whether thread tid is in the supervisor's user
// and pid namespaces.
func sameNamespaces(tid int) bool {
	return likeSupervisor(tid, "ns/user") && likeSupervisor(tid, "ns/pid")
}
