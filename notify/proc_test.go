package notify

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func TestProcHelpers(t *testing.T) {
	rsvProbe(t)
	dir := t.TempDir()
	file, err := os.Create(dir + "/held")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	old := unix.Umask(0o037)
	child := rsvChild(t, dir, nil, file)
	unix.Umask(old)
	pid := child.Process.Pid

	if tg, err := Tgid(pid); err != nil || tg != pid {
		t.Errorf("Tgid(child) = %d, %v; want %d", tg, err, pid)
	}
	// A non-leader thread of this process reports this process.
	tidc := make(chan int)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tidc <- unix.Gettid()
		<-release
	}()
	tid := <-tidc
	if tg, err := Tgid(tid); err != nil || tg != os.Getpid() {
		t.Errorf("Tgid(thread %d) = %d, %v; want %d", tid, tg, err, os.Getpid())
	}
	wd, _ := os.Getwd()
	if r, err := Resolve(tid, unix.AT_FDCWD, "./", FollowLast); err != nil || r.Path != wd || r.Tgid != os.Getpid() {
		t.Errorf("Resolve for thread %d: %v %v, want %s in %d", tid, r, err, wd, os.Getpid())
	} else {
		r.Close()
	}
	if f, err := GetFd(tid, int(file.Fd())); err != nil {
		t.Errorf("GetFd on a non-leader thread: %v", err)
	} else {
		f.Close()
	}
	close(release)

	if m, err := Umask(pid); err != nil || m != 0o037 {
		t.Errorf("Umask(child) = %o, %v; want 037", m, err)
	}
	if uid, gid, _, err := FsCreds(pid); err != nil || uid != uint32(os.Geteuid()) || gid != uint32(os.Getegid()) {
		t.Errorf("FsCreds(child) = %d %d %v", uid, gid, err)
	}
	cwd, err := OpenCwd(pid)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := rsvFdPath(int(cwd.Fd())); p != dir {
		t.Errorf("OpenCwd path %q, want %q", p, dir)
	}
	cwd.Close()
	fp, err := OpenFdPath(pid, 3)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := rsvFdPath(int(fp.Fd())); p != dir+"/held" {
		t.Errorf("OpenFdPath path %q", p)
	}
	fp.Close()
	g, err := GetFd(pid, 3)
	if err != nil {
		t.Fatal(err)
	}
	var a, b unix.Stat_t
	unix.Fstat(int(g.Fd()), &a)
	unix.Fstat(int(file.Fd()), &b)
	if a.Ino != b.Ino {
		t.Errorf("GetFd reached ino %d, want %d", a.Ino, b.Ino)
	}
	// A real open file: writable through it, unlike an O_PATH fd.
	if _, err := g.WriteString("x"); err != nil {
		t.Errorf("write through GetFd file: %v", err)
	}
	g.Close()
	for _, fn := range []func(int, int) (*os.File, error){OpenFdPath, GetFd} {
		if f, err := fn(pid, 77); !errors.Is(err, unix.EBADF) {
			if f != nil {
				f.Close()
			}
			t.Errorf("closed fd: %v, want EBADF", err)
		}
	}
	child.Process.Kill()
	child.Wait()
	if _, err := Tgid(pid); !errors.Is(err, unix.ESRCH) {
		t.Errorf("Tgid of a reaped child: %v, want ESRCH", err)
	}
	if _, err := Resolve(pid, unix.AT_FDCWD, "x", 0); !errors.Is(err, unix.ESRCH) {
		t.Errorf("Resolve for a reaped child: %v, want ESRCH", err)
	}
}
