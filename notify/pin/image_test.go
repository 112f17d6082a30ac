package pin

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The kernel's #! parsing (fs/binfmt_script.c), case by case.
func TestParseShebang(t *testing.T) {
	long := "#!/" + strings.Repeat("a", 300)
	for _, c := range []struct {
		in        string
		name, arg string
		ok        bool
	}{
		{"#!/bin/sh\n", "/bin/sh", "", true},
		{"#!/bin/sh", "/bin/sh", "", true}, // short file: zero padding ends the name
		{"#! /bin/sh\n", "/bin/sh", "", true},
		{"#!\t/bin/sh \t\n", "/bin/sh", "", true},
		{"#!/usr/bin/env python3\n", "/usr/bin/env", "python3", true},
		{"#!/usr/bin/env  -S  python3 -u  \n", "/usr/bin/env", "-S  python3 -u", true}, // one argument, inner spaces kept
		{"#!/bin/sh\x00-x\n", "/bin/sh", "", true},                                     // NUL ends the name; no argument
		{"#!\n", "", "", false},
		{"#!   \n", "", "", false},
		{"#!" + strings.Repeat(" ", 300), "", "", false},
		{long, "", "", false}, // no newline, no terminator: the name may be truncated
		{"#!/bin/sh " + strings.Repeat("x", 300), "/bin/sh", strings.Repeat("x", 245), true},
		{"not a script", "", "", false},
		{"#!relative/interp arg\n", "relative/interp", "arg", true},
	} {
		name, arg, ok := ParseShebang([]byte(c.in))
		if name != c.name || arg != c.arg || ok != c.ok {
			t.Errorf("ParseShebang(%.40q) = %q, %q, %v; want %q, %q, %v", c.in, name, arg, ok, c.name, c.arg, c.ok)
		}
	}
}

// The argv a #! chain starts with: argv[0] dropped at each level, the
// interpreter, its argument and the file in front.
func TestKernelArgv(t *testing.T) {
	elf := Image{Kind: ImageELF}
	if got := elf.KernelArgv("/bin/x", []string{"x", "a"}); !slices.Equal(got, []string{"x", "a"}) {
		t.Errorf("ELF: %q", got)
	}
	if got := elf.KernelArgv("/bin/x", nil); !slices.Equal(got, []string{""}) {
		t.Errorf("ELF, empty argv: %q", got)
	}
	one := Image{Kind: ImageScript, Interps: []Interpreter{{Path: "/usr/bin/env", Arg: "git"}}}
	if got := one.KernelArgv("push", []string{"push", "origin", "main"}); !slices.Equal(got, []string{"/usr/bin/env", "git", "push", "origin", "main"}) {
		t.Errorf("one level: %q", got)
	}
	two := Image{Kind: ImageScript, Interps: []Interpreter{{Path: "./s1"}, {Path: "/bin/sh", Arg: "-e"}}}
	if got := two.KernelArgv("./s2", []string{"whatever", "a"}); !slices.Equal(got, []string{"/bin/sh", "-e", "./s1", "./s2", "a"}) {
		t.Errorf("two levels: %q", got)
	}
	if got := one.KernelArgv("/dev/fd/3", nil); !slices.Equal(got, []string{"/usr/bin/env", "git", "/dev/fd/3"}) {
		t.Errorf("script, empty argv: %q", got)
	}
}

func TestKernelFilename(t *testing.T) {
	for _, c := range []struct {
		dirfd int
		path  string
		flags int
		want  string
	}{
		{unix.AT_FDCWD, "rel/x", 0, "rel/x"},
		{5, "/abs/x", 0, "/abs/x"},
		{5, "rel/x", 0, "/dev/fd/5/rel/x"},
		{7, "", unix.AT_EMPTY_PATH, "/dev/fd/7"},
	} {
		if got := KernelFilename(c.dirfd, c.path, c.flags); got != c.want {
			t.Errorf("KernelFilename(%d, %q, %#x) = %q, want %q", c.dirfd, c.path, c.flags, got, c.want)
		}
	}
}

// ReadImage predicts what runs: an ELF itself, a #! chain (nested), and
// refuses what only binfmt_misc could run, a chain too deep, a #! line
// the kernel rejects.
func TestReadImage(t *testing.T) {
	requireResolveKernel(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s1 := write("s1", "#!"+self+" -x\n")
	s2 := write("s2", "#!"+s1+"\n")
	junk := write("junk", "echo no #! line\n")
	foreign := write("foreign", "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00") // EM_AARCH64 on amd64, or the reverse
	if nativeELF([]byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00")) {
		foreign = write("foreign", "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3e\x00")
	}
	bad := write("bad", "#!\n")
	loop := write("loop0", "#!"+filepath.Join(dir, "loop1")+"\n")
	for i := 1; i <= 6; i++ {
		write("loop"+string(rune('0'+i)), "#!"+filepath.Join(dir, "loop"+string(rune('0'+i+1)))+"\n")
	}
	write("loop7", "#!"+self+"\n")

	img := func(p string) (Image, error) {
		r, err := Resolve(os.Getpid(), unix.AT_FDCWD, p, FollowLast)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		return ReadImage(os.Getpid(), r)
	}
	st, _ := os.Stat(self)
	if im, err := img(self); err != nil || im.Kind != ImageELF || im.Size != st.Size() {
		t.Errorf("ELF: %+v %v", im, err)
	}
	im, err := img(s2)
	if err != nil || im.Kind != ImageScript || len(im.Interps) != 2 {
		t.Fatalf("nested script: %+v %v", im, err)
	}
	if im.Interps[0].Path != s1 || im.Interps[0].Arg != "" || im.Interps[1].Path != self || im.Interps[1].Arg != "-x" {
		t.Errorf("chain: %+v", im.Interps)
	}
	if selfID, _ := exeFileID(self); im.Loaded() != selfID {
		t.Errorf("loaded %v, want the binary at the end of the chain", im.Loaded())
	}
	for _, c := range []struct {
		p    string
		want unix.Errno
	}{{junk, unix.ENOEXEC}, {foreign, unix.ENOEXEC}, {bad, unix.ENOEXEC}, {loop, unix.ELOOP}} {
		if _, err := img(c.p); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", filepath.Base(c.p), err, c.want)
		}
	}
}

func exeFileID(p string) (FileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return FileID{}, err
	}
	return FileID{st.Dev, st.Ino}, nil
}

// Running reads the whole command line in one read and tells a process
// that exited from one it could not read.
func TestProcessRunning(t *testing.T) {
	// Past the first buffer, and a valid interval (0) so sleep does not
	// exit at once on a bad argument.
	long := strings.Repeat("0", 100<<10)
	cmd := exec.Command("sleep", "60", long)
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	p, err := OpenProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var run Running
	for range 200 {
		var ok bool
		run, ok, err = p.Running()
		if err != nil {
			t.Fatal(err)
		}
		if ok && strings.HasPrefix(string(run.Cmdline), "sleep\x00") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if want := "sleep\x0060\x00" + long + "\x00"; string(run.Cmdline) != want {
		t.Errorf("cmdline: %d bytes, want %d", len(run.Cmdline), len(want))
	}
	sleepID, _ := exeFileID("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe")
	if run.Exe != sleepID {
		t.Errorf("exe %v, want %v", run.Exe, sleepID)
	}
	// The held read sees the same image.
	if held, err := p.RunningHeld(); err != nil || held.Exe != run.Exe || string(held.Cmdline) != string(run.Cmdline) {
		t.Errorf("RunningHeld: exe %v, %d bytes, %v; want Running's", held.Exe, len(held.Cmdline), err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, _, err := p.Running(); !errors.Is(err, ErrExited) {
		t.Errorf("after exit: %v, want ErrExited", err)
	}
	// Reaped, /proc/PID is gone: neither answers with anything.
	if _, err := p.RunningHeld(); err == nil {
		t.Error("RunningHeld of a reaped process read something")
	}
	if exited, err := p.Exited(); !exited || err != nil {
		t.Errorf("Exited: %v %v", exited, err)
	}
	if err := p.Kill(); err != nil {
		t.Errorf("Kill of an exited process: %v", err)
	}
}

// readCmdline's pooled buffer is reused between reads: a command line
// returned earlier must not change when another, shorter one is read
// into the same buffer (a verification compares one read later).
func TestReadCmdlineOwnsResult(t *testing.T) {
	start := func(args ...string) int {
		cmd := exec.Command("sleep", args...)
		if err := cmd.Start(); err != nil {
			t.Skipf("cannot start sleep: %v", err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd.Process.Pid
	}
	read := func(pid int, want string) []byte {
		// Until the child has exec'd sleep (slow on a loaded machine).
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
			c, err := readCmdline("/proc/" + strconv.Itoa(pid))
			if err != nil {
				t.Fatal(err)
			}
			if string(c) == want {
				return c
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("pid %d never showed cmdline %q", pid, want)
		return nil
	}
	// The extra argument is a valid interval (0): sleep keeps running.
	wantA := "sleep\x0060\x00" + strings.Repeat("0", 300) + "\x00"
	wantB := "sleep\x0061\x00"
	a := read(start("60", strings.Repeat("0", 300)), wantA)
	b := start("61")
	for range 50 { // several reads, so the pool hands the same buffer back
		read(b, wantB)
	}
	if string(a) != wantA {
		t.Errorf("an earlier command line changed after later reads: %q", a)
	}
}
