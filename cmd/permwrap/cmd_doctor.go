package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
	"golang.org/x/sys/unix"
)

// cmdDoctor reports what this kernel and build support, what permwrap
// will therefore enforce, and what it cannot. Exit 0 when permwrap can
// run here with its full guarantees, 1 when it runs with less, 125 when
// it cannot run at all.
func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("permwrap doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return exitInternal
	}
	w := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	w("permwrap %s (%s/%s, %s)", version(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	if !doctorManaged(w) {
		return exitInternal
	}
	if nestingReport(w) {
		// Inside a permwrap: that one enforces, and a permwrap started
		// here hands it its policy. What this kernel offers a root is its
		// doctor's to say (probes from inside see the outer filter).
		return exitOK
	}
	f := notify.Probe()
	child := doctorKernelSupport(w, f)
	missing, weaker := doctorGaps(f, child)
	w("permwrap enforces:")
	if len(missing) > 0 {
		w("  nothing: permwrap cannot run here; missing %s", strings.Join(missing, ", "))
		return exitInternal
	}
	doctorEnforces(w)
	w("")
	doctorDoesNotEnforce(w, weaker)
	doctorReviewers(w)
	if len(weaker) > 0 {
		return exitFailure
	}
	return exitOK
}

// doctorKernelSupport prints the kernel section: each feature permwrap
// uses, whether this kernel has it, and what it is for. It returns what
// the probes on a child found, which decide whether permwrap can run.
func doctorKernelSupport(w func(string, ...any), f notify.Features) childProbes {
	w("kernel %s", f.Kernel)
	w("")
	w("kernel support:")
	lab := func(name string, t notify.Tri, why string) {
		w("  %-34s %-8s %s", name, t, why)
	}
	landlock := notify.No
	if f.LandlockABI > 0 {
		landlock = notify.Yes
	}
	lab(fmt.Sprintf("Landlock (ABI %d)", f.LandlockABI), landlock, "static floor; signal scoping needs ABI 6")
	lab("seccomp user notification", f.UserNotif, "the dynamic layer: every file and exec syscall is judged")
	lab("TSYNC with NEW_LISTENER", f.TsyncESRCH, "filter on every thread of the init stage")
	lab("ADDFD", f.AddFD, "opens are performed by permwrap and the fd installed")
	lab("ADDFD SEND", f.AddFDSend, "install and return in one atomic step")
	lab("WAIT_KILLABLE_RECV", f.WaitKillable, "a pending question is not torn down by signals")
	lab("SYNC_WAKE_UP", f.SyncWakeUp, "not used: measured slower with emulated opens")
	lab("pidfd for threads", f.PidfdThread, "fd-based calls (fchmod, fsetxattr) from non-leader threads")
	lab("i386 syscalls (int 0x80)", f.IA32Emulation, "killed by the filter's arch check either way")
	sockDiag, sockDiagWhy := probeSockDiag()
	lab("Unix socket diagnostics", sockDiag, sockDiagWhy)
	recv, recvWhy := probeReceivers()
	lab("Local connection receivers", recv, recvWhy)
	child := probeChild()
	lab("pidfd_getfd of a child's fd", child.getFd, "takes the seccomp listener at launch, and the target's sockets and fds")
	lab("process_vm_readv of a child", child.memRead, "reads the paths and argv a target's calls point to")
	for _, n := range f.Notes {
		w("  note: %s", n)
	}
	w("")
	return child
}

// doctorGaps lists what this kernel lacks: missing, without which
// permwrap cannot run, and weaker, without which it runs with less.
func doctorGaps(f notify.Features, child childProbes) (missing, weaker []string) {
	if f.UserNotif != notify.Yes || f.AddFD != notify.Yes || f.AddFDSend != notify.Yes || f.TsyncESRCH != notify.Yes {
		missing = append(missing, "seccomp user notification with ADDFD/SEND and TSYNC_ESRCH (Linux ≥ 5.14)")
	}
	if child.getFd == notify.No {
		missing = append(missing, fmt.Sprintf("pidfd_getfd on its own child (%v): refused by a container's seccomp profile without CAP_SYS_PTRACE, or by Yama ptrace_scope %s", child.getFdErr, yamaScope()))
	}
	if child.memRead == notify.No {
		missing = append(missing, fmt.Sprintf("process_vm_readv of its own child (%v): refused by a container's seccomp profile without CAP_SYS_PTRACE, or by Yama ptrace_scope %s; every call that names a path or a command would be refused as undecidable", child.memReadErr, yamaScope()))
	}
	if f.LandlockABI == 0 {
		weaker = append(weaker, "no Landlock: no static floor (--require-landlock refuses to start); signals to permwrap are not scoped")
	} else if f.LandlockABI < 6 {
		weaker = append(weaker, "Landlock ABI < 6: sandboxed processes can signal permwrap itself (and kill it and its watchdog at once, so that what they started outlives it)")
	}
	if f.WaitKillable != notify.Yes {
		weaker = append(weaker, "no WAIT_KILLABLE_RECV: a signal to a waiting process re-raises its question")
	}
	return missing, weaker
}

// doctorEnforces prints the items of "permwrap enforces:".
func doctorEnforces(w func(string, ...any)) {
	w("  - every open, create, remove, rename, link, chmod/chown, utimes, xattr change, AF_UNIX bind,")
	w("    chattr-style ioctl and exec, judged by the policy")
	w("    with paths resolved by permwrap and allowed operations performed by permwrap on exactly what was checked")
	w("  - exec is continued and verified afterwards (/proc/PID/exe and argv); a mismatch is killed")
	w("  - no io_uring, no nested seccomp listener, no open_by_handle_at, no mount/chroot/pivot_root,")
	w("    no process_vm_writev or pidfd_getfd, no keyctl, no userfaultfd; i386 and x32 syscalls kill the process")
	w("  - ptrace only within the sandbox (Landlock), and never PTRACE_O_SUSPEND_SECCOMP")
	w("  - outbound network (docs/network.md): every connect, and every sendto/sendmsg/sendmmsg with a destination")
	w("    (TCP, UDP, ICMP, Unix sockets), judged by the net rules and performed by permwrap on the process's own")
	w("    socket with the address it judged; HTTP(S) through permwrap's proxy is judged by host name;")
	w("    raw and packet sockets, SCTP, other socket families and IP source routes are refused")
	w("  - an object reached through a handle after its name was removed is judged by the name it had")
	w("  - filesystem ioctls by type: queries continue, attribute changes are judged, the rest is refused")
	w("  - no fanotify event fds, acct, swapon, quotactl; no core dumps (RLIMIT_CORE 0)")
	w("  - resource limits, priorities and affinity only of processes of the sandbox (permwrap's own are out of reach)")
	w("  - opens that can block (FIFOs, devices, network file systems) are made off the receiving pool")
	if h := pin.BinfmtMiscHandlers(); len(h) > 0 {
		w("  - binfmt_misc handlers registered here (%s): an exec only one of them could run is refused", strings.Join(h, ", "))
		w("    with ENOEXEC (permwrap does not follow them; run the interpreter explicitly)")
	}
}

// doctorDoesNotEnforce prints "permwrap does not enforce:": the limits
// every run has, those of this host, and the weaker guarantees.
func doctorDoesNotEnforce(w func(string, ...any), weaker []string) {
	w("permwrap does not enforce (see docs/security.md):")
	w("  - what a process does with file descriptors it already holds (read, write, mmap)")
	w("  - stat/access/readlink/getdents of paths (metadata and names are visible)")
	w("  - what flows over a connection once it is allowed (a tunnel through an allowed host), DNS queries")
	w("    through the system's resolver, sockets passed in from outside the tree")
	w("  - a window of instructions a verified exec runs before its verification")
	w("  - a program rebuilt or changed by a byte is not recognised as the program it was copied from")
	if os.Geteuid() == 0 {
		w("  - running as root: the command keeps root's capabilities for everything permwrap does not watch")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/core_pattern"); err == nil && strings.HasPrefix(string(b), "|") {
		helper := strings.Fields(strings.TrimPrefix(string(b), "|") + " ?")[0]
		w("  - core_pattern pipes to a helper (%s): a crash's memory goes to it, RLIMIT_CORE notwithstanding", helper)
	}
	for _, x := range weaker {
		w("  - %s", x)
	}
}

// childProbes is what permwrap must be able to do to a child it started,
// tried on one.
type childProbes struct {
	getFd, memRead       notify.Tri
	getFdErr, memReadErr error
}

// probeChild tries, on a sleep it starts, what permwrap's launch does
// first — take a file descriptor from a child (pin.GetFd, pidfd_getfd),
// here its fd 0 — and what every decision does: read a target's memory
// (process_vm_readv), here the start of its first mapping. A container's
// seccomp profile may refuse either (Docker's allows both only with
// CAP_SYS_PTRACE).
func probeChild() (c childProbes) {
	c.getFd, c.memRead = notify.Unknown, notify.Unknown
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		c.getFdErr, c.memReadErr = err, err
		return c
	}
	cmd := exec.Command(sleep, "10")
	r, w, err := os.Pipe()
	if err != nil {
		c.getFdErr, c.memReadErr = err, err
		return c
	}
	defer w.Close()
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		r.Close()
		c.getFdErr, c.memReadErr = err, err
		return c
	}
	r.Close()
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if f, err := pin.GetFd(cmd.Process.Pid, 0); err != nil {
		c.getFd, c.getFdErr = notify.No, err
	} else {
		f.Close()
		c.getFd = notify.Yes
	}
	c.memRead, c.memReadErr = probeMemRead(cmd.Process.Pid)
	return c
}

// probeMemRead reads 16 bytes at the start of pid's first mapping.
func probeMemRead(pid int) (notify.Tri, error) {
	var addr uint64
	// Until the child's exec is over, its maps are the parent's copy;
	// either has a first mapping to read.
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return notify.Unknown, err
	}
	start, _, _ := strings.Cut(string(maps), "-")
	if addr, err = strconv.ParseUint(start, 16, 64); err != nil {
		return notify.Unknown, fmt.Errorf("reading /proc/%d/maps: %q", pid, start)
	}
	if _, err := notify.ReadBytes(pid, addr, 16); err != nil {
		return notify.No, err
	}
	return notify.Yes, nil
}

// yamaScope is the Yama ptrace scope, or "(no Yama)".
func yamaScope() string {
	b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope")
	if err != nil {
		return "(no Yama here)"
	}
	return strings.TrimSpace(string(b))
}

// probeReceivers asks whether the kernel can say which socket a
// connection to this machine reaches (sock_diag's exact inet lookup):
// what tells a server the tree started from a service outside it.
func probeReceivers() (notify.Tri, string) {
	const why = "servers the tree starts are told from services outside the sandbox (docs/network.md); without it every destination on this machine counts as a service outside"
	// A plain TCP socket: Go's net.Listen makes an MPTCP one, whose
	// lookup names its subflow (netlocal.go, recordListener).
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return notify.Unknown, why + " (could not test: " + err.Error() + ")"
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return notify.Unknown, why + " (could not test: " + err.Error() + ")"
	}
	if err := unix.Listen(fd, 1); err != nil {
		return notify.Unknown, why + " (could not test: " + err.Error() + ")"
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return notify.Unknown, why + " (could not test: " + err.Error() + ")"
	}
	ap, _ := pin.InetAddrPort(sa)
	cookie, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		return notify.No, why + " (SO_COOKIE: " + err.Error() + ")"
	}
	r, ok, err := pin.InetReceiver(unix.IPPROTO_TCP, ap)
	switch {
	case err != nil:
		return notify.No, why + " (" + err.Error() + ")"
	case !ok || r.Cookie != cookie:
		return notify.No, why + " (the kernel named another socket)"
	}
	return notify.Yes, why
}

// probeSockDiag asks whether the kernel can name the file a bound Unix
// socket is at (NETLINK_SOCK_DIAG with unix_diag), which lets the tree
// connect to the sockets it bound itself without asking, and refuse a
// stale socket file (no server) rather than ask about it.
func probeSockDiag() (notify.Tri, string) {
	const why = "sockets the tree binds connect without asking; stale socket files are refused, not asked about"
	dir, err := os.MkdirTemp("", "permwrap-doctor-")
	if err != nil {
		return notify.Unknown, why + " (could not test: " + err.Error() + ")"
	}
	defer os.RemoveAll(dir)
	if err := pin.ProbeSockDiag(dir); err != nil {
		return notify.No, why + " (" + err.Error() + ")"
	}
	return notify.Yes, why
}
