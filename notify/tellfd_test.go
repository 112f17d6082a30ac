package notify_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/notify"
)

// stderrOf starts a process that sleeps with stderr set to f and returns
// its pid; the process is killed at the end of the test.
func stderrOf(t *testing.T, f *os.File) int {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// tell is TellFd on the process's stderr, skipping the test where the
// kernel has no pidfd_getfd.
func tell(t *testing.T, pid int, line string) error {
	t.Helper()
	err := notify.TellFd(pid, 2, []byte(line), nil)
	if errors.Is(err, unix.ENOSYS) {
		kerneltest.Skip(t, "pidfd_getfd")
	}
	return err
}

func socketpair(t *testing.T, typ int) (mine, theirs *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs = os.NewFile(uintptr(fds[0]), "mine"), os.NewFile(uintptr(fds[1]), "theirs")
	t.Cleanup(func() { mine.Close(); theirs.Close() })
	return mine, theirs
}

func readSome(t *testing.T, f *os.File) string {
	t.Helper()
	f.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	n, err := f.Read(buf)
	if err != nil {
		t.Fatalf("reading what the target's stderr received: %v", err)
	}
	return string(buf[:n])
}

// The line reaches whoever reads the target's stderr back, whatever kind
// of channel the program that started it chose.
func TestTellFdReaches(t *testing.T) {
	const line = "permwrap: denied read /x\n"
	t.Run("pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		pid := stderrOf(t, w)
		w.Close()
		if err := tell(t, pid, line); err != nil {
			t.Fatal(err)
		}
		if got := readSome(t, r); got != line {
			t.Fatalf("read %q", got)
		}
	})
	t.Run("fifo", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "fifo")
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := os.OpenFile(p, os.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		w, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		pid := stderrOf(t, w)
		w.Close()
		if err := tell(t, pid, line); err != nil {
			t.Fatal(err)
		}
		if got := readSome(t, r); got != line {
			t.Fatalf("read %q", got)
		}
	})
	t.Run("regular file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "err.log")
		w, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		w.WriteString("before\n")
		pid := stderrOf(t, w)
		if err := tell(t, pid, line); err != nil {
			t.Fatal(err)
		}
		w.WriteString("after\n") // the shared offset moved past the line
		w.Close()
		if b, _ := os.ReadFile(p); string(b) != "before\n"+line+"after\n" {
			t.Fatalf("file holds %q", b)
		}
	})
	for _, c := range []struct {
		name string
		typ  int
	}{{"socketpair stream (libuv)", unix.SOCK_STREAM}, {"socketpair seqpacket", unix.SOCK_SEQPACKET}, {"socketpair datagram", unix.SOCK_DGRAM}} {
		t.Run(c.name, func(t *testing.T) {
			mine, theirs := socketpair(t, c.typ)
			pid := stderrOf(t, theirs)
			theirs.Close()
			if err := tell(t, pid, line); err != nil {
				t.Fatal(err)
			}
			if got := readSome(t, mine); got != line {
				t.Fatalf("read %q", got)
			}
		})
	}
}

// Nothing is written where the person, not a program, reads: a terminal,
// a device, a network socket, or permwrap's own stderr.
func TestTellFdLeavesAlone(t *testing.T) {
	t.Run("terminal", func(t *testing.T) {
		ptmx, tty, err := pty.Open()
		if err != nil {
			kerneltest.Skip(t, "pseudo-terminal: "+err.Error())
		}
		defer ptmx.Close()
		pid := stderrOf(t, tty)
		tty.Close()
		if err := tell(t, pid, "x\n"); !errors.Is(err, notify.ErrNotTold) {
			t.Fatalf("TellFd on a terminal: %v", err)
		}
	})
	t.Run("dev null", func(t *testing.T) {
		null, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		defer null.Close()
		if err := tell(t, stderrOf(t, null), "x\n"); !errors.Is(err, notify.ErrNotTold) {
			t.Fatalf("TellFd on /dev/null: %v", err)
		}
	})
	t.Run("tcp socket", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		peer, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		f, _ := c.(*net.TCPConn).File()
		defer f.Close()
		if err := tell(t, stderrOf(t, f), "x\n"); !errors.Is(err, notify.ErrNotTold) {
			t.Fatalf("TellFd on a TCP socket: %v", err)
		}
	})
	t.Run("permwrap's own stderr", func(t *testing.T) {
		r, w, _ := os.Pipe()
		defer r.Close()
		defer w.Close()
		pid := stderrOf(t, w)
		if err := notify.TellFd(pid, 2, []byte("x\n"), w); !errors.Is(err, notify.ErrNotTold) {
			t.Fatalf("TellFd on our own stderr: %v", err)
		}
	})
}

// A full pipe or socket drops the line; the supervisor never blocks.
func TestTellFdNeverBlocks(t *testing.T) {
	fill := func(t *testing.T, w *os.File) {
		t.Helper()
		fd := int(w.Fd()) // once: Fd puts the file back in blocking mode
		if err := unix.SetNonblock(fd, true); err != nil {
			t.Fatal(err)
		}
		chunk := bytes.Repeat([]byte("f"), 4096)
		for {
			if _, err := unix.Write(fd, chunk); err != nil {
				if !errors.Is(err, unix.EAGAIN) {
					t.Fatal(err)
				}
				break
			}
		}
		// A blocking target: TellFd must not rely on the target's flag.
		unix.SetNonblock(fd, false)
	}
	check := func(t *testing.T, pid int) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- tell(t, pid, "permwrap: denied\n") }()
		select {
		case err := <-done:
			if !errors.Is(err, unix.EAGAIN) {
				t.Fatalf("TellFd on a full channel: %v, want EAGAIN", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("TellFd blocked on a full channel")
		}
	}
	t.Run("pipe", func(t *testing.T) {
		r, w, _ := os.Pipe()
		defer r.Close()
		defer w.Close()
		fill(t, w)
		check(t, stderrOf(t, w))
	})
	t.Run("socketpair", func(t *testing.T) {
		mine, theirs := socketpair(t, unix.SOCK_STREAM)
		fill(t, theirs)
		check(t, stderrOf(t, theirs))
		// What was queued is whole: no part of the line follows it.
		fd := int(mine.Fd())
		unix.SetNonblock(fd, true)
		got, _ := io.ReadAll(io.LimitReader(nonblockReader{fd}, 1<<22))
		if bytes.Contains(got, []byte("permwrap")) {
			t.Fatal("a part of the line was queued on a full socket")
		}
	})
}

type nonblockReader struct{ fd int }

func (r nonblockReader) Read(p []byte) (int, error) {
	n, err := unix.Read(r.fd, p)
	if n <= 0 {
		return 0, io.EOF
	}
	return n, err
}
