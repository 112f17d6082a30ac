package host

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// The terminal calls on a fresh pty: it is a terminal (a pipe is not), in
// canonical mode, its size reads back as set, and what the slave side
// writes waits unread on the master.
func TestTerminal(t *testing.T) {
	ptmx, pts, err := pty.Open()
	if err != nil {
		kerneltest.Skipf(t, "no pty: %v", err)
	}
	defer ptmx.Close()
	defer pts.Close()
	if !IsTerminal(int(pts.Fd())) {
		t.Error("a pty slave is not a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(int(r.Fd())) {
		t.Error("a pipe is a terminal")
	}
	if c, err := Canonical(int(pts.Fd())); err != nil || !c {
		t.Errorf("a fresh pty: Canonical = %v, %v; want true", c, err)
	}
	if _, err := Canonical(int(r.Fd())); err == nil {
		t.Error("Canonical on a pipe: no error")
	}
	want := &unix.Winsize{Row: 33, Col: 101}
	if err := SetWinSize(int(ptmx.Fd()), want); err != nil {
		t.Fatal(err)
	}
	if ws, err := WinSize(int(pts.Fd())); err != nil || ws.Row != 33 || ws.Col != 101 {
		t.Errorf("WinSize = %+v, %v; want 33x101", ws, err)
	}
	if n, err := Unread(int(ptmx.Fd())); err != nil || n != 0 {
		t.Errorf("Unread before output = %d, %v", n, err)
	}
	if _, err := Write(int(pts.Fd()), []byte("hi")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := Unread(int(ptmx.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("output written to the slave never waits on the master")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The wake pipe does not block; the socketpair keeps message boundaries;
// a dup is close-on-exec.
func TestDescriptors(t *testing.T) {
	var p [2]int
	if err := WakePipe(&p); err != nil {
		t.Fatal(err)
	}
	defer Close(p[0])
	defer Close(p[1])
	var b [8]byte
	if _, err := Read(p[0], b[:]); !errors.Is(err, unix.EAGAIN) {
		t.Errorf("reading an empty wake pipe: %v, want EAGAIN", err)
	}
	sp, err := SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer Close(sp[0])
	f := os.NewFile(uintptr(sp[1]), "sp") // closes sp[1]
	defer f.Close()
	Write(sp[0], []byte("ab"))
	Write(sp[0], []byte("c"))
	if n, err := Read(sp[1], b[:]); err != nil || string(b[:n]) != "ab" {
		t.Errorf("first message %q, %v; want \"ab\"", b[:n], err)
	}
	fd, err := DupCloexec(f)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fd)
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
		t.Errorf("dup flags %#x, %v: not close-on-exec", fl, err)
	}
}

// A pidfd reads alive while its process runs, kills it, and reads not
// alive once it is reaped; Wait reports the kill, and ECHILD with no child.
func TestPidfd(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		kerneltest.Skipf(t, "cannot start sleep: %v", err)
	}
	fd, err := PidfdOpen(cmd.Process.Pid)
	kerneltest.Need(t, "pidfd_open", err)
	defer Close(fd)
	if !PidfdAlive(fd) {
		t.Fatal("a running process reads as not alive")
	}
	if err := PidfdKill(fd); err != nil {
		t.Fatal(err)
	}
	p, ws, err := Wait(cmd.Process.Pid, false)
	if err != nil || p != cmd.Process.Pid || !ws.Signaled() || ws.Signal() != unix.SIGKILL {
		t.Fatalf("Wait = %d, %v, %v; want the pid killed by SIGKILL", p, ws, err)
	}
	if PidfdAlive(fd) {
		t.Error("a reaped process reads as alive")
	}
	if _, _, err := Wait(-1, true); !errors.Is(err, unix.ECHILD) {
		t.Errorf("Wait(-1, nohang) with no child: %v, want ECHILD", err)
	}
}
