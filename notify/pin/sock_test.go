package pin

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// socketFd makes a socket of the test process, closed at the end.
func socketFd(t *testing.T, domain, typ int) int {
	t.Helper()
	fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

func TestOpenSocketKinds(t *testing.T) {
	pid := os.Getpid()
	for _, c := range []struct {
		domain, typ int
		nonblock    bool
	}{
		{unix.AF_INET, unix.SOCK_STREAM, false},
		{unix.AF_INET6, unix.SOCK_DGRAM | unix.SOCK_NONBLOCK, true},
		{unix.AF_UNIX, unix.SOCK_SEQPACKET, false},
	} {
		fd := socketFd(t, c.domain, c.typ)
		h, tgid, err := OpenSocket(pid, fd)
		if err != nil {
			t.Fatal(err)
		}
		si, err := h.Sock()
		nb, err2 := h.Nonblocking()
		h.Close()
		if err != nil || err2 != nil || tgid != pid || si.Domain != c.domain || si.Type != c.typ&0xf || nb != c.nonblock {
			t.Errorf("socket(%d, %#x): %+v nonblock %v tgid %d err %v %v", c.domain, c.typ, si, nb, tgid, err, err2)
		}
	}
	f, err := os.CreateTemp(t.TempDir(), "file")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, _, err := OpenSocket(pid, int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Sock(); !errors.Is(err, unix.ENOTSOCK) {
		t.Errorf("a file: %v, want ENOTSOCK", err)
	}
	h.Close()
	if _, _, err := OpenSocket(pid, 1<<20); err != unix.EBADF {
		t.Errorf("a closed fd: %v, want EBADF", err)
	}
}

// listenUnix listens at path and reports which listener a connection
// reached by the greeting it writes.
func listenUnix(t *testing.T, path, greeting string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(greeting))
			c.Close()
		}
	}()
}

// ConnectUnix reaches the socket that was resolved (pinned), even after
// another socket is renamed over its path.
func TestConnectUnixPinned(t *testing.T) {
	dir := t.TempDir()
	judged, swapped := filepath.Join(dir, "judged.sock"), filepath.Join(dir, "other.sock")
	listenUnix(t, judged, "judged")
	listenUnix(t, swapped, "swapped")
	r, err := Resolve(os.Getpid(), unix.AT_FDCWD, judged, FollowLast)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := os.Rename(swapped, judged); err != nil {
		t.Fatal(err)
	}
	fd := socketFd(t, unix.AF_UNIX, unix.SOCK_STREAM)
	h, _, err := OpenSocket(os.Getpid(), fd)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.ConnectUnix(r); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, _ := unix.Read(fd, buf)
	if string(buf[:n]) != "judged" {
		t.Errorf("connected to %q, want the judged socket", buf[:n])
	}
	// A file that is not a socket: the kernel's ECONNREFUSED.
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, nil, 0o644)
	rp, err := Resolve(os.Getpid(), unix.AT_FDCWD, plain, FollowLast)
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Close()
	if err := h.ConnectUnix(rp); err != unix.ECONNREFUSED {
		t.Errorf("connect to a plain file: %v, want ECONNREFUSED", err)
	}
}

// Sendto keeps the difference between a NULL destination and a non-NULL
// one of length zero (which UDP refuses with EINVAL).
func TestSendtoNameSemantics(t *testing.T) {
	fd := socketFd(t, unix.AF_INET, unix.SOCK_DGRAM)
	h, _, err := OpenSocket(os.Getpid(), fd)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Sendto(&Send{Data: []byte("x"), HasName: true}); err != unix.EINVAL {
		t.Errorf("non-NULL empty name: %v, want EINVAL", err)
	}
	if _, err := h.Sendto(&Send{Data: []byte("x")}); err != unix.EDESTADDRREQ {
		t.Errorf("no name on an unconnected socket: %v, want EDESTADDRREQ", err)
	}
}

// BoundFile names the file a socket is bound to, and StillBound follows
// the socket (its cookie), not the path.
func TestBoundFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.sock")
	fd := socketFd(t, unix.AF_UNIX, unix.SOCK_STREAM)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	h, _, err := OpenSocket(os.Getpid(), fd)
	if err != nil {
		t.Fatal(err)
	}
	b, ok, err := h.BoundFile()
	h.Close()
	if errors.Is(err, ErrNoSockDiag) {
		t.Skipf("no sock_diag: %v", err)
	}
	if err != nil || !ok || b.File != (FileID{Dev: st.Dev, Ino: st.Ino}) {
		t.Fatalf("BoundFile = %+v %v %v, want the file %d:%d", b, ok, err, st.Dev, st.Ino)
	}
	if still, err := StillBound(b); !still || err != nil {
		t.Errorf("StillBound right after the bind: %v %v", still, err)
	}
	// Renamed: the same file, still the socket's.
	if err := os.Rename(path, path+".2"); err != nil {
		t.Fatal(err)
	}
	if still, _ := StillBound(b); !still {
		t.Error("a renamed socket file is no longer its socket's")
	}
	// Another socket bound at the old path is not this one.
	other := socketFd(t, unix.AF_UNIX, unix.SOCK_STREAM)
	if err := unix.Bind(other, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	ho, _, _ := OpenSocket(os.Getpid(), other)
	bo, _, _ := ho.BoundFile()
	ho.Close()
	if bo.Cookie == b.Cookie || bo.File == b.File {
		t.Errorf("two sockets look alike: %+v %+v", b, bo)
	}
	// Closed: gone.
	unix.Close(fd)
	if still, err := StillBound(b); still || err != nil {
		t.Errorf("StillBound after close: %v %v", still, err)
	}
	// Unbound and abstract sockets name no file.
	u := socketFd(t, unix.AF_UNIX, unix.SOCK_DGRAM)
	hu, _, _ := OpenSocket(os.Getpid(), u)
	if _, ok, err := hu.BoundFile(); ok || err != nil {
		t.Errorf("an unbound socket: %v %v", ok, err)
	}
	hu.Close()
}

// UnixReceiver finds a socket file's listening socket in a dump that
// takes several answers (hundreds of sockets), and says a file whose
// socket was closed (a stale tmux socket) is received by nobody.
func TestUnixReceiverAmongMany(t *testing.T) {
	dir := t.TempDir()
	var files []FileID
	var fds []int
	for i := range 400 {
		path := filepath.Join(dir, fmt.Sprintf("s%d.sock", i))
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, fd)
		if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
			t.Fatal(err)
		}
		if err := unix.Listen(fd, 1); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		files = append(files, FileID{Dev: st.Dev, Ino: st.Ino})
	}
	t.Cleanup(func() {
		for _, fd := range fds {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	})
	for _, i := range []int{0, 199, 399} {
		_, ok, err := UnixReceiver(files[i])
		if errors.Is(err, ErrNoSockDiag) {
			t.Skipf("no sock_diag: %v", err)
		}
		if err != nil || !ok {
			t.Errorf("socket %d: UnixReceiver = %v %v, want found", i, ok, err)
		}
	}
	unix.Close(fds[399])
	fds[399] = -1
	if _, ok, err := UnixReceiver(files[399]); ok || err != nil {
		t.Errorf("after close: UnixReceiver = %v %v, want none", ok, err)
	}
	// A file that is no socket's at all.
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := UnixReceiver(FileID{Dev: st.Dev, Ino: st.Ino}); ok || err != nil {
		t.Errorf("a directory: UnixReceiver = %v %v", ok, err)
	}
}

func TestParseUnixDiagBounds(t *testing.T) {
	for _, b := range [][]byte{nil, {1, 2, 3}, make([]byte, 16), {0xff, 0xff, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}} {
		if _, ok, err := parseUnixDiag(b); ok || err == nil {
			t.Errorf("parseUnixDiag(%v) = %v %v", b, ok, err)
		}
	}
}

// unixAddr is an AF_UNIX sockaddr for path, as a program passes it.
func unixAddr(path string) []byte {
	b := make([]byte, 2+len(path))
	b[0], b[1] = byte(unix.AF_UNIX&0xff), byte(unix.AF_UNIX>>8)
	copy(b[2:], path)
	return b
}

// Bind binds with the program's own path, so the socket's address is
// that path; the file can appear only in the judged directory (Landlock
// on the binding thread) and exactly at the judged name (BoundAt).
func TestBindExactAndConfined(t *testing.T) {
	if v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1); e != 0 || v < 1 {
		kerneltest.Skip(t, "Landlock (without it Bind falls back to the pinned directory's name)")
	}
	dir := t.TempDir()
	pid := os.Getpid()
	bind := func(judged, bound string) error {
		t.Helper()
		at, err := Resolve(pid, unix.AT_FDCWD, judged, ParentOnly)
		if err != nil {
			t.Fatal(err)
		}
		defer at.Close()
		fd := socketFd(t, unix.AF_UNIX, unix.SOCK_STREAM)
		h, _, err := OpenSocket(pid, fd)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		err = h.Bind(unixAddr(bound), at, nil, 0o022)
		if err == nil {
			sa, gerr := unix.Getsockname(fd)
			if gerr != nil || sa.(*unix.SockaddrUnix).Name != bound {
				t.Errorf("bound as %#v (%v), want %q", sa, gerr, bound)
			}
		}
		return err
	}
	// The path as given, the socket where judged.
	ok := filepath.Join(dir, "ok.sock")
	if err := bind(ok, ok); err != nil {
		t.Fatalf("plain bind: %v", err)
	}
	// The kernel resolves the path again: a directory that is now
	// elsewhere (as if swapped after the check) is outside the pinned one.
	os.Mkdir(filepath.Join(dir, "judged"), 0o755)
	os.Mkdir(filepath.Join(dir, "elsewhere"), 0o755)
	if err := bind(filepath.Join(dir, "judged", "s.sock"), filepath.Join(dir, "elsewhere", "s.sock")); !errors.Is(err, unix.EACCES) {
		t.Errorf("a bind that resolves outside the judged directory: %v, want EACCES", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere", "s.sock")); err == nil {
		t.Error("the socket file was created outside the judged directory")
	}
	// Beneath the judged directory but not at the judged name.
	os.Mkdir(filepath.Join(dir, "judged", "sub"), 0o755)
	if err := bind(filepath.Join(dir, "judged", "t.sock"), filepath.Join(dir, "judged", "sub", "t.sock")); !errors.Is(err, ErrBindMoved) {
		t.Errorf("a bind that lands beneath the judged directory, under another name: %v, want ErrBindMoved", err)
	}
}
