package pin

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// TestProcGuard: a target may read its own /proc entries and the public ones
// of others, but an emulated open must never hand it another process's
// ptrace-protected files (here: the supervisor's environ and mem).
func TestProcGuard(t *testing.T) {
	requireResolveKernel(t)
	child := startSleeper(t, t.TempDir(), nil)
	tid := child.Process.Pid
	self := strconv.Itoa(os.Getpid())
	cases := []struct {
		path  string
		flags int
		want  error
	}{
		{"/proc/self/environ", unix.O_RDONLY, nil},
		{"/proc/self/mem", unix.O_RDONLY, nil},
		{"/proc/" + self + "/status", unix.O_RDONLY, nil},
		{"/proc/" + self + "/task", unix.O_RDONLY | unix.O_DIRECTORY, nil},
		{"/proc/" + self, unix.O_RDONLY | unix.O_DIRECTORY, nil},
		{"/proc/" + self + "/environ", unix.O_RDONLY, unix.EACCES},
		{"/proc/" + self + "/mem", unix.O_RDWR, unix.EACCES},
		{"/proc/" + self + "/status", unix.O_WRONLY, unix.EACCES},
		{"/proc/" + self + "/fd", unix.O_RDONLY | unix.O_DIRECTORY, unix.EACCES},
		{"/proc/" + self + "/task/" + self + "/environ", unix.O_RDONLY, unix.EACCES},
		{"/proc/" + self + "/task/" + self + "/stat", unix.O_RDONLY, nil},
	}
	for _, c := range cases {
		r, err := Resolve(tid, unix.AT_FDCWD, c.path, OpenResolveFlags(c.flags))
		if err != nil {
			t.Errorf("%s: resolve: %v", c.path, err)
			continue
		}
		f, err := Open(r, c.flags, 0, 0)
		r.Close()
		if err == nil {
			f.Close()
		}
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s %#o: got %v, want %v", c.path, c.flags, err, c.want)
		}
	}
	// What the target reads as its environ is its own.
	r, err := Resolve(tid, unix.AT_FDCWD, "/proc/self/cmdline", FollowLast)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := Open(r, unix.O_RDONLY, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make([]byte, 64)
	n, _ := f.Read(got)
	if string(got[:n]) != "sleep\x0060\x00" {
		t.Errorf("/proc/self/cmdline as the target (%s): %q", r.Path, got[:n])
	}
}

// TestDevTtyIsTargetsTerminal: /dev/tty names the opener's controlling
// terminal, so the emulated open must give the target's, not the
// supervisor's.
func TestDevTtyIsTargetsTerminal(t *testing.T) {
	requireResolveKernel(t)
	var st unix.Stat_t
	if err := unix.Stat("/dev/tty", &st); err != nil || !isDevTty(&st) {
		kerneltest.Skipf(t, "no /dev/tty device node: %v", err)
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		kerneltest.Skipf(t, "no pty: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	cmd := exec.Command("sleep", "60")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var want unix.Stat_t
	if err := unix.Fstat(int(tty.Fd()), &want); err != nil {
		t.Fatal(err)
	}
	// The child is ours once its stat shows the terminal.
	var f *File
	for range 200 {
		r, err := Resolve(cmd.Process.Pid, unix.AT_FDCWD, "/dev/tty", FollowLast)
		if err != nil {
			t.Fatal(err)
		}
		f, err = Open(r, unix.O_RDWR, 0, 0)
		r.Close()
		if err == nil {
			break
		}
		if !errors.Is(err, unix.ENXIO) {
			t.Fatal(err)
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 5e6}, nil)
	}
	if f == nil {
		t.Fatal("target never had a controlling terminal")
	}
	defer f.Close()
	var got unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &got); err != nil {
		t.Fatal(err)
	}
	if got.Rdev != want.Rdev {
		t.Errorf("/dev/tty opened %d:%d, target's terminal is %d:%d", unix.Major(got.Rdev), unix.Minor(got.Rdev), unix.Major(want.Rdev), unix.Minor(want.Rdev))
	}

	// A target without a terminal gets ENXIO, as from the kernel.
	nott := exec.Command("sleep", "60")
	nott.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := nott.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { nott.Process.Kill(); nott.Wait() }()
	for range 200 {
		if exe, _ := os.Readlink("/proc/" + strconv.Itoa(nott.Process.Pid) + "/exe"); exe != "" && exe != mustExe(t) {
			break
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 5e6}, nil)
	}
	r, err := Resolve(nott.Process.Pid, unix.AT_FDCWD, "/dev/tty", FollowLast)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if f, err := Open(r, unix.O_RDWR, 0, 0); !errors.Is(err, unix.ENXIO) {
		if f != nil {
			f.Close()
		}
		t.Errorf("/dev/tty without a terminal: %v, want ENXIO", err)
	}
}

func mustExe(t *testing.T) string {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// The namespace whose sysctl table holds a /proc/sys entry.
func TestSysctlNamespace(t *testing.T) {
	for rest, want := range map[string]string{
		"net":                       "net",
		"net/ipv4/ip_forward":       "net",
		"net/core/somaxconn":        "net",
		"user/max_user_namespaces":  "user",
		"fs/mqueue/msg_max":         "ipc",
		"kernel/shmmax":             "ipc",
		"kernel/sem":                "ipc",
		"kernel/hostname":           "", // uts: read and written as the writer
		"kernel/ns_last_pid":        "", // pid: the same
		"kernel/pid_max":            "",
		"fs/file-max":               "",
		"vm/overcommit_memory":      "",
		"netfilter/nf_log/2":        "", // not net/
		"kernel/shmmax_not_a_table": "",
	} {
		if got := sysctlNamespace(rest); got != want {
			t.Errorf("sysctlNamespace(%q) = %q, want %q", rest, got, want)
		}
	}
	for p, want := range map[string]string{"/proc/sys": "", "/proc/sys/net/ipv4/x": "net/ipv4/x"} {
		if got, ok := procSysEntry(p); !ok || got != want {
			t.Errorf("procSysEntry(%q) = %q, %v", p, got, ok)
		}
	}
	for _, p := range []string{"/proc/system", "/sys/net", "/proc/1/sys"} {
		if got, ok := procSysEntry(p); ok {
			t.Errorf("procSysEntry(%q) = %q, true: not under /proc/sys", p, got)
		}
	}
}
