package pin

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

func TestProcHelpers(t *testing.T) {
	requireResolveKernel(t)
	dir := t.TempDir()
	file, err := os.Create(dir + "/held")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	old := unix.Umask(0o037)
	child := startSleeper(t, dir, nil, file)
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
	if st, err := readStatus(pid); err != nil || st.cred.UID != uint32(os.Geteuid()) || st.cred.GID != uint32(os.Getegid()) {
		t.Errorf("readStatus(child) = %+v, %v", st, err)
	}
	cwd, err := openProcLink(pid, "cwd", unix.O_DIRECTORY)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := fdPath(cwd); p != dir {
		t.Errorf("cwd path %q, want %q", p, dir)
	}
	unix.Close(cwd)
	fp, err := openProcLink(pid, "fd/3", 0)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := fdPath(fp); p != dir+"/held" {
		t.Errorf("fd 3 path %q", p)
	}
	unix.Close(fp)
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
	if fd, err := openProcLink(pid, "fd/77", 0); !errors.Is(err, unix.EBADF) {
		if err == nil {
			unix.Close(fd)
		}
		t.Errorf("closed fd through /proc: %v, want EBADF", err)
	}
	if f, err := GetFd(pid, 77); !errors.Is(err, unix.EBADF) {
		if f != nil {
			f.Close()
		}
		t.Errorf("closed fd through GetFd: %v, want EBADF", err)
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
