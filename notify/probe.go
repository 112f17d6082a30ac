package notify

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify/abiprobe"
)

// Tri is a probe result that admits not knowing.
type Tri int8

const (
	Unknown Tri = iota
	No
	Yes
)

func (t Tri) String() string {
	switch t {
	case Yes:
		return "yes"
	case No:
		return "no"
	}
	return "unknown"
}

// Features is what the running kernel offers permwrap. Every field is
// probed without installing a filter in the calling process; where that is
// impossible the field is inferred from the kernel version and Notes says
// so.
type Features struct {
	Kernel      string // uname release
	LandlockABI int    // 0: no Landlock (Notes says why)

	UserNotif     Tri // SECCOMP_RET_USER_NOTIF (5.0)
	TsyncESRCH    Tri // TSYNC together with NEW_LISTENER (5.7)
	AddFD         Tri // SECCOMP_IOCTL_NOTIF_ADDFD (5.9)
	AddFDSend     Tri // SECCOMP_ADDFD_FLAG_SEND (5.14)
	WaitKillable  Tri // SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (5.19)
	SyncWakeUp    Tri // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (6.6)
	PidfdThread   Tri // pidfd_open(tid, PIDFD_THREAD) (6.9)
	IA32Emulation Tri // a 64-bit process can make i386 syscalls (int 0x80), as tried in a child

	Notes []string
}

// pidfdThread is PIDFD_THREAD (= O_EXCL), missing from x/sys.
const pidfdThread = unix.O_EXCL

// Probe inspects the running kernel.
func Probe() Features {
	var f Features
	var uts unix.Utsname
	if err := unix.Uname(&uts); err == nil {
		f.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	major, minor, verOK := parseKernelVersion(f.Kernel)
	since := func(maj, min int) Tri {
		if !verOK {
			return Unknown
		}
		if major > maj || (major == maj && minor >= min) {
			return Yes
		}
		return No
	}

	f.probeLandlock()

	switch err := sysSeccompActionAvail(unix.SECCOMP_RET_USER_NOTIF); {
	case err == nil:
		f.UserNotif = Yes
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		f.UserNotif = No
		f.note("seccomp user notification unavailable (%v): permwrap cannot supervise syscalls", err)
	default:
		f.note("SECCOMP_GET_ACTION_AVAIL: %v (already inside a seccomp sandbox?)", err)
	}
	if f.UserNotif == Yes {
		if s, err := sysSeccompNotifSizes(); err != nil {
			f.note("SECCOMP_GET_NOTIF_SIZES: %v", err)
		} else if uintptr(s.Notif) < sizeofSeccompNotif || uintptr(s.NotifResp) < sizeofSeccompNotifResp || uintptr(s.Data) < sizeofSeccompData {
			f.UserNotif = No
			f.note("kernel notification structs (%d/%d/%d bytes) are smaller than permwrap's (%d/%d/%d)",
				s.Notif, s.NotifResp, s.Data, sizeofSeccompNotif, sizeofSeccompNotifResp, sizeofSeccompData)
		}
	}

	f.TsyncESRCH = probeFilterFlags(&f, "TSYNC_ESRCH", unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_TSYNC|unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH)
	f.WaitKillable = probeFilterFlags(&f, "WAIT_KILLABLE_RECV", unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)

	// These are listener ioctls: probing them needs a live listener, which
	// means a filter, which Probe must not install.
	f.AddFD = since(5, 9)
	f.AddFDSend = since(5, 14)
	f.SyncWakeUp = since(6, 6)
	f.note("ADDFD, ADDFD_SEND and SYNC_WAKE_UP are inferred from the kernel version (%s), not probed", f.Kernel)
	if f.UserNotif == No {
		f.AddFD, f.AddFDSend, f.SyncWakeUp = No, No, No
	}

	f.PidfdThread = probePidfdThread(&f)
	f.IA32Emulation = probeIA32(&f)
	return f
}

func (f *Features) note(format string, args ...any) {
	f.Notes = append(f.Notes, fmt.Sprintf(format, args...))
}

func (f *Features) probeLandlock() {
	r, _, errno := unix.RawSyscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch errno {
	case 0:
		f.LandlockABI = int(r)
	case unix.ENOSYS:
		f.note("Landlock: not built into this kernel (ENOSYS)")
	case unix.EOPNOTSUPP:
		f.note("Landlock: built in but disabled at boot (add landlock to the lsm= kernel parameter)")
	default:
		f.note("Landlock: version query failed: %v", errno)
	}
}

// probeFilterFlags asks seccomp(SET_MODE_FILTER) to validate flags with a
// NULL program: the kernel checks the flags before it copies the program,
// so EFAULT means they are known and nothing is ever installed.
func probeFilterFlags(f *Features, name string, flags uintptr) Tri {
	err := sysSeccompProbeFlags(flags)
	switch {
	case errors.Is(err, unix.EFAULT):
		return Yes
	case errors.Is(err, unix.EINVAL):
		return No
	case err == nil:
		// Cannot happen with a NULL program; refuse to guess.
		f.note("seccomp flag probe %s: accepted a NULL program", name)
	default:
		f.note("seccomp flag probe %s: %v", name, err)
	}
	return Unknown
}

func probePidfdThread(f *Features) Tri {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fd, err := unix.PidfdOpen(unix.Gettid(), pidfdThread)
	switch {
	case err == nil:
		unix.Close(fd)
		return Yes
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
		// Older kernels reject the flag (EINVAL) or a non-leader tid (ENOENT).
		return No
	}
	f.note("pidfd_open(PIDFD_THREAD): %v", err)
	return Unknown
}

// probeIA32 tries an i386 syscall in a child process: the kernel's
// configuration does not say whether the running kernel accepts them.
func probeIA32(f *Features) Tri {
	r, err := abiprobe.I386()
	switch {
	case err != nil:
		f.note("i386 syscalls: %v; the filter kills them either way", err)
		return Unknown
	case r.Filtered:
		f.note("i386 syscalls: %s (already sandboxed?); the filter kills them either way", r.Why)
		return Unknown
	case r.Works:
		return Yes
	}
	f.note("i386 syscalls: %s", r.Why)
	return No
}

// parseKernelVersion reads "6.18.44-foo" as (6, 18).
func parseKernelVersion(rel string) (major, minor int, ok bool) {
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	m := parts[1]
	if i := strings.IndexFunc(m, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		m = m[:i]
	}
	minor, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return major, minor, true
}
