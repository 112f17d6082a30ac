package supervisor

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/forwarding"
	"github.com/permwrap/permwrap/internal/bpftest"
	"github.com/permwrap/permwrap/notify"
)

// maxSyscallNr is past the highest x86_64 syscall number (469 on 6.18).
const maxSyscallNr = 600

// TestFilterIsTheTable runs the filter built from the table in x/net/bpf's
// VM for every syscall number: a row without conditions is notified on any
// arguments, a row refused in BPF fails with its errno, a conditional row
// is notified exactly when its condition holds, a row never notified and
// every number without a row are allowed. So the filter and the table
// cannot drift apart.
func TestFilterIsTheTable(t *testing.T) {
	for _, fc := range []filterChoice{{}, {freeListings: true}, {skipReads: true}, {skipReads: true, freeListings: true}} {
		skipReads := fc.skipReads
		prog, err := notify.BuildFilter(filterOptions(fc))
		if err != nil {
			t.Fatal(err)
		}
		vm, err := bpftest.New(prog.Insns)
		if err != nil {
			t.Fatal(err)
		}
		run := func(nr int32, args [6]uint64) uint32 {
			t.Helper()
			ret, err := vm.Run(nr, unix.AUDIT_ARCH_X86_64, args)
			if err != nil {
				t.Fatal(err)
			}
			return ret
		}
		want := func(what string, nr int32, args [6]uint64, action uint32) {
			t.Helper()
			if got := run(nr, args); got != action {
				t.Errorf("%+v: %s (%d) args %#x: filter says %s, the table %s",
					fc, what, nr, args, bpftest.Action(got), bpftest.Action(action))
			}
		}
		const notif, allow = unix.SECCOMP_RET_USER_NOTIF, unix.SECCOMP_RET_ALLOW
		for nr := int32(0); nr < maxSyscallNr; nr++ {
			row := rowOf(nr)
			switch {
			case row == nil:
				want("no row", nr, [6]uint64{}, allow)
			case row.never != "":
				want(row.name+" (never notified)", nr, [6]uint64{}, allow)
			case refusedAll(row):
				errno, _ := row.refusesAll()
				want(row.name, nr, [6]uint64{}, unix.SECCOMP_RET_ERRNO|uint32(errno))
				want(row.name+" (any arguments)", nr, [6]uint64{^uint64(0), 1, 2, 3, 4, 5}, unix.SECCOMP_RET_ERRNO|uint32(errno))
			case row.decode == nil:
				// Refused in BPF under conditions (the cases below), never
				// notified, allowed otherwise: some arguments get through.
				allowed := false
				for _, args := range [][6]uint64{{^uint64(0), ^uint64(0), ^uint64(0)}, {}, {1, 1, 1, 1, 1, 1}} {
					got := run(nr, args)
					if got == notif {
						t.Errorf("%s (%d) args %#x: notified, and it has no decoder", row.name, nr, args)
					}
					allowed = allowed || got == allow
				}
				if !allowed {
					t.Errorf("%s (%d): refused on every argument tried, and its refusals have conditions", row.name, nr)
				}
			case row.when == nil || row.when(fc) == nil:
				want(row.name, nr, [6]uint64{}, notif)
				want(row.name+" (any arguments)", nr, [6]uint64{^uint64(0), 1, 2, 3, 4, 5}, notif)
			}
		}
		// The conditional rows.
		for cmd := range ioctlClasses {
			want("ioctl of a file system type", unix.SYS_IOCTL, [6]uint64{3, uint64(cmd)}, notif)
			want("ioctl of a file system type, garbage above the int", unix.SYS_IOCTL, [6]uint64{3, 0xdead_0000_0000_0000 | uint64(cmd)}, notif)
		}
		for _, typ := range ioctlTypes {
			want("unknown ioctl of a file system type", unix.SYS_IOCTL, [6]uint64{3, uint64(ioc(iocWrite, typ, 0xee, 8))}, notif)
		}
		want("ioctl TCGETS", unix.SYS_IOCTL, [6]uint64{0, unix.TCGETS}, allow)
		want("ioctl FIONREAD", unix.SYS_IOCTL, [6]uint64{0, 0x541b}, allow)
		want("ioctl TIOCSTI", unix.SYS_IOCTL, [6]uint64{0, unix.TIOCSTI}, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM))
		want("ioctl TIOCSTI, garbage above the int", unix.SYS_IOCTL, [6]uint64{0, 0xdead_0000_0000_0000 | unix.TIOCSTI}, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM))
		want("fanotify_init with fids", unix.SYS_FANOTIFY_INIT, [6]uint64{0x200}, allow)
		want("fanotify_init with fds", unix.SYS_FANOTIFY_INIT, [6]uint64{0x4}, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM))
		for _, nr := range []int32{unix.SYS_SCHED_SETAFFINITY, unix.SYS_SCHED_SETSCHEDULER, unix.SYS_SCHED_SETPARAM, unix.SYS_SCHED_SETATTR, unix.SYS_PRLIMIT64} {
			want(rowOf(nr).name+" on itself", nr, [6]uint64{0, 7, 0}, allow)
			want(rowOf(nr).name+" on another", nr, [6]uint64{1234}, notif)
		}
		want("prlimit64 RLIMIT_CORE set on itself", unix.SYS_PRLIMIT64, [6]uint64{0, unix.RLIMIT_CORE, 0x1000}, notif)
		want("prlimit64 RLIMIT_CORE get on itself", unix.SYS_PRLIMIT64, [6]uint64{0, unix.RLIMIT_CORE, 0, 0x1000}, allow)
		want("setrlimit RLIMIT_CORE", unix.SYS_SETRLIMIT, [6]uint64{unix.RLIMIT_CORE, 0x1000}, notif)
		want("setrlimit RLIMIT_NOFILE", unix.SYS_SETRLIMIT, [6]uint64{unix.RLIMIT_NOFILE, 0x1000}, allow)
		want("setpriority self", unix.SYS_SETPRIORITY, [6]uint64{0, 0, 10}, allow)
		want("setpriority pid", unix.SYS_SETPRIORITY, [6]uint64{0, 1234, 10}, notif)
		want("setpriority pgrp", unix.SYS_SETPRIORITY, [6]uint64{1, 0, 10}, notif)
		want("setpriority user", unix.SYS_SETPRIORITY, [6]uint64{2, 0, 10}, notif)
		want("ioprio_set self", unix.SYS_IOPRIO_SET, [6]uint64{1, 0, 0x6000}, allow)
		want("ioprio_set pid", unix.SYS_IOPRIO_SET, [6]uint64{1, 1234, 0x6000}, notif)
		want("ioprio_set pgrp", unix.SYS_IOPRIO_SET, [6]uint64{2, 0, 0x6000}, notif)
		want("arch_prctl SET_FS", unix.SYS_ARCH_PRCTL, [6]uint64{archSetFS}, notif)
		want("arch_prctl GET_FS", unix.SYS_ARCH_PRCTL, [6]uint64{0x1003}, allow)
		for _, c := range []struct {
			nr   int32
			arg  int
			name string
		}{{unix.SYS_OPEN, 1, "open"}, {unix.SYS_OPENAT, 2, "openat"}} {
			args := func(flags uint64) (a [6]uint64) { a[c.arg] = flags; return a }
			readOnly := uint32(notif)
			if skipReads {
				readOnly = allow
			}
			// A listing: read-only with O_DIRECTORY, whatever harmless
			// flags come with it.
			listing := readOnly
			if fc.freeListings {
				listing = allow
			}
			want(c.name+" O_RDONLY", c.nr, args(unix.O_RDONLY), readOnly)
			want(c.name+" O_RDONLY, garbage above the int", c.nr, args(0xffff_ffff_0000_0000), readOnly)
			want(c.name+" O_RDONLY|O_CLOEXEC|O_NOFOLLOW|O_NONBLOCK", c.nr, args(unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK), readOnly)
			for _, f := range []uint64{unix.O_DIRECTORY, unix.O_CLOEXEC | unix.O_DIRECTORY | unix.O_NOFOLLOW,
				unix.O_DIRECTORY | unix.O_NONBLOCK | unix.O_LARGEFILE | unix.O_CLOEXEC, unix.O_DIRECTORY | 0xffff_ffff_0000_0000} {
				want(c.name+" listing", c.nr, args(f), listing)
			}
			// Everything that writes or creates is notified, with
			// O_DIRECTORY too (O_TMPFILE is __O_TMPFILE|O_DIRECTORY).
			for _, f := range []uint64{unix.O_WRONLY, unix.O_RDWR, unix.O_ACCMODE, unix.O_CREAT, unix.O_TRUNC,
				unix.O_TMPFILE | unix.O_RDWR, unix.O_TMPFILE | unix.O_WRONLY, unix.O_TMPFILE, oTmpfileBit, unix.O_WRONLY | 0xffff_ffff_0000_0000} {
				want(c.name+" writing/creating", c.nr, args(f), notif)
				want(c.name+" writing/creating with O_DIRECTORY", c.nr, args(f|unix.O_DIRECTORY), notif)
			}
			// An inner permwrap's knock must reach the supervisor under
			// every filter (it is O_RDWR, never a listing).
			want(c.name+" knock", c.nr, args(forwarding.KnockFlags), notif)
			want(c.name+" knock, O_LARGEFILE", c.nr, args(forwarding.KnockFlags|unix.O_LARGEFILE), notif)
			// O_PATH makes the kernel drop every other flag: answered in
			// BPF, whatever else is set (the garbage above the int too).
			for _, f := range []uint64{unix.O_PATH, unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
				unix.O_PATH | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC, unix.O_PATH | unix.O_TMPFILE | unix.O_WRONLY,
				unix.O_PATH | 0xffff_ffff_0000_0000} {
				want(c.name+" O_PATH", c.nr, args(f), allow)
			}
		}
		want("unshare CLONE_NEWNS", unix.SYS_UNSHARE, [6]uint64{unix.CLONE_NEWNS | unix.CLONE_NEWUSER}, notif)
		want("unshare CLONE_NEWNS, garbage above the int", unix.SYS_UNSHARE, [6]uint64{0xdead_0000_0000_0000 | unix.CLONE_NEWNS}, notif)
		want("unshare CLONE_NEWUSER|CLONE_FS", unix.SYS_UNSHARE, [6]uint64{unix.CLONE_NEWUSER | unix.CLONE_FS}, allow)
		want("openat2 O_RDONLY (flags in memory)", unix.SYS_OPENAT2, [6]uint64{}, notif)

		// Network: where a datagram goes is judged, sockets that could
		// send past that are refused.
		want("sendto with a destination", unix.SYS_SENDTO, [6]uint64{3, 0x1000, 10, 0, 0x2000, 16}, notif)
		want("sendto with a destination above 4 GiB", unix.SYS_SENDTO, [6]uint64{3, 0x1000, 10, 0, 0x7f00_0000_0000, 16}, notif)
		want("send (sendto without a destination)", unix.SYS_SENDTO, [6]uint64{3, 0x1000, 10, 0, 0, 0}, allow)
		want("send with a length but no pointer", unix.SYS_SENDTO, [6]uint64{3, 0x1000, 10, 0, 0, 16}, allow)
		errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
		for _, c := range []struct {
			what             string
			family, typ, pro uint64
			action           uint32
		}{
			{"unix stream", unix.AF_UNIX, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, 0, allow},
			{"tcp", unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_NONBLOCK, 0, allow},
			{"tcp6", unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_TCP, allow},
			{"mptcp", unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP, allow},
			{"udp", unix.AF_INET, unix.SOCK_DGRAM, 0, allow},
			{"ping", unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP, allow},
			{"netlink", unix.AF_NETLINK, unix.SOCK_RAW | unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE, allow},
			{"raw ip", unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP, errno(unix.EPERM)},
			{"raw ipv6 with flags", unix.AF_INET6, unix.SOCK_RAW | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK, unix.IPPROTO_ICMPV6, errno(unix.EPERM)},
			{"raw ip, garbage above the int", 0xdead_0000_0000_0000 | unix.AF_INET, 0xdead_0000_0000_0000 | unix.SOCK_RAW, 1, errno(unix.EPERM)},
			{"inet SOCK_PACKET (an old packet socket)", unix.AF_INET, unix.SOCK_PACKET, 0, errno(unix.EPERM)},
			{"packet", unix.AF_PACKET, unix.SOCK_RAW, 0x300, errno(unix.EPERM)},
			{"sctp stream", unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_SCTP, errno(unix.EPROTONOSUPPORT)},
			{"sctp seqpacket", unix.AF_INET, unix.SOCK_SEQPACKET, 0, errno(unix.EPROTONOSUPPORT)},
			{"vsock", unix.AF_VSOCK, unix.SOCK_STREAM, 0, errno(unix.EAFNOSUPPORT)},
			{"bluetooth", unix.AF_BLUETOOTH, unix.SOCK_STREAM, 0, errno(unix.EAFNOSUPPORT)},
			{"alg", unix.AF_ALG, unix.SOCK_SEQPACKET, 0, errno(unix.EAFNOSUPPORT)},
			{"xdp", unix.AF_XDP, unix.SOCK_RAW, 0, errno(unix.EAFNOSUPPORT)},
		} {
			want("socket "+c.what, unix.SYS_SOCKET, [6]uint64{c.family, c.typ, c.pro}, c.action)
		}
		for _, c := range []struct {
			what        string
			level, name uint64
			action      uint32
		}{
			{"IP_OPTIONS", unix.SOL_IP, unix.IP_OPTIONS, errno(unix.EPERM)},
			{"IPV6_RTHDR", unix.SOL_IPV6, unix.IPV6_RTHDR, errno(unix.EPERM)},
			{"IPV6_2292RTHDR", unix.SOL_IPV6, unix.IPV6_2292RTHDR, errno(unix.EPERM)},
			{"IPV6_2292PKTOPTIONS", unix.SOL_IPV6, unix.IPV6_2292PKTOPTIONS, errno(unix.EPERM)},
			{"IP_TOS", unix.SOL_IP, unix.IP_TOS, allow},
			{"TCP_NODELAY", unix.SOL_TCP, unix.TCP_NODELAY, allow},
			{"SO_REUSEADDR", unix.SOL_SOCKET, unix.SO_REUSEADDR, allow},
			{"IPV6_V6ONLY", unix.SOL_IPV6, unix.IPV6_V6ONLY, allow},
		} {
			want("setsockopt "+c.what, unix.SYS_SETSOCKOPT, [6]uint64{3, c.level, c.name}, c.action)
		}
		want("creat", unix.SYS_CREAT, [6]uint64{}, notif)

		// Side doors refused only for some arguments.
		const hi = 0xdead_beef_0000_0000
		eperm := errno(unix.EPERM)
		want("seccomp NEW_LISTENER", unix.SYS_SECCOMP, [6]uint64{unix.SECCOMP_SET_MODE_FILTER, 8}, eperm)
		want("seccomp TSYNC|NEW_LISTENER|WAIT_KILLABLE", unix.SYS_SECCOMP, [6]uint64{unix.SECCOMP_SET_MODE_FILTER, 0x39}, eperm)
		want("seccomp NEW_LISTENER with high garbage", unix.SYS_SECCOMP, [6]uint64{unix.SECCOMP_SET_MODE_FILTER, hi | 8}, eperm)
		want("seccomp flags 0", unix.SYS_SECCOMP, [6]uint64{unix.SECCOMP_SET_MODE_FILTER, 0}, allow)
		want("seccomp TSYNC", unix.SYS_SECCOMP, [6]uint64{unix.SECCOMP_SET_MODE_FILTER, 1}, allow)
		want("ptrace", unix.SYS_PTRACE, [6]uint64{}, allow)
		want("PTRACE_ATTACH", unix.SYS_PTRACE, [6]uint64{unix.PTRACE_ATTACH, 1}, allow)
		want("PTRACE_POKEDATA", unix.SYS_PTRACE, [6]uint64{unix.PTRACE_POKEDATA, 1, 0x1000, ptraceOSuspendSeccomp}, allow)
		want("PTRACE_SEIZE with TRACESYSGOOD|EXITKILL", unix.SYS_PTRACE, [6]uint64{unix.PTRACE_SEIZE, 1, 0, unix.PTRACE_O_TRACESYSGOOD | unix.PTRACE_O_EXITKILL}, allow)
		want("PTRACE_SEIZE with SUSPEND_SECCOMP", unix.SYS_PTRACE, [6]uint64{unix.PTRACE_SEIZE, 1, 0, ptraceOSuspendSeccomp}, eperm)
		want("PTRACE_SEIZE with every option", unix.SYS_PTRACE, [6]uint64{unix.PTRACE_SEIZE, 1, 0, ^uint64(0)}, eperm)
		want("PTRACE_SETOPTIONS with SUSPEND_SECCOMP", unix.SYS_PTRACE, [6]uint64{unix.PTRACE_SETOPTIONS, 1, 0, ptraceOSuspendSeccomp | unix.PTRACE_O_TRACESYSGOOD}, eperm)
		want("PTRACE_SETOPTIONS with SUSPEND_SECCOMP in the high half", unix.SYS_PTRACE, [6]uint64{unix.PTRACE_SETOPTIONS, 1, 0, hi | ptraceOSuspendSeccomp}, eperm)
		want("PTRACE_SETOPTIONS without it", unix.SYS_PTRACE, [6]uint64{unix.PTRACE_SETOPTIONS, 1, 0, unix.PTRACE_O_TRACESYSGOOD}, allow)
		// The kernel's switch is on a long: a request with high bits set
		// is no request it knows (EIO), so the filter need not stop it.
		want("PTRACE_SETOPTIONS with a high request half", unix.SYS_PTRACE, [6]uint64{hi | unix.PTRACE_SETOPTIONS, 1, 0, ptraceOSuspendSeccomp}, allow)
		want("unshare allowed (docs/kernel.md)", unix.SYS_UNSHARE, [6]uint64{unix.CLONE_NEWUSER}, allow)
		want("clone plain", unix.SYS_CLONE, [6]uint64{unix.CLONE_VM | unix.CLONE_THREAD}, allow)
	}
}

// refusedAll reports whether the filter refuses every call of row.
func refusedAll(row *sysRow) bool {
	_, all := row.refusesAll()
	return all
}

// TestTableRowsAreComplete: every row names its syscall as the kernel
// does and has a decoder or says why it is refused.
func TestTableRowsAreComplete(t *testing.T) {
	for _, r := range syscalls {
		if got := notify.SyscallName(r.nr); got != r.name {
			t.Errorf("row %q is syscall %d, which is %q", r.name, r.nr, got)
		}
	}
	indexed := 0
	for _, r := range rows {
		if r != nil {
			indexed++
		}
	}
	if indexed != len(syscalls) {
		t.Errorf("%d rows indexed, %d in the table", indexed, len(syscalls))
	}
	if rowOf(-1) != nil || rowOf(int32(len(rows))) != nil || rowOf(1<<30) != nil {
		t.Error("rowOf out of the table's range found a row")
	}
}

// TableRefusals are the syscalls the table refuses whole, with their
// errnos, in the table's order (for the external kernel test).
func TableRefusals() (nrs []int32, errnos []unix.Errno) {
	for _, r := range syscalls {
		if errno, all := r.refusesAll(); all {
			nrs = append(nrs, r.nr)
			errnos = append(errnos, errno)
		}
	}
	return nrs, errnos
}
