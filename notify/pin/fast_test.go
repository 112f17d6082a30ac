package pin

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// fastAgrees resolves p both ways — the walk, and with ObjectOnly, which
// may take the one-openat2 fast path — and fails unless they agree: the
// same object at the same path, or the same error. (For a missing last
// name the walk reports it absent where the fast path answers the
// kernel's ENOENT for an open without O_CREAT.) It reports whether the
// fast path was taken (a result with no Dir).
func fastAgrees(t *testing.T, tid, dirfd int, p string, flags ResolveFlags) (fast bool) {
	t.Helper()
	label := fmt.Sprintf("tid %d dirfd %d %q flags %b", tid, dirfd, p, flags)
	w, werr := Resolve(tid, dirfd, p, flags)
	if w != nil {
		defer w.Close()
	}
	f, ferr := Resolve(tid, dirfd, p, flags|ObjectOnly)
	if f != nil {
		defer f.Close()
	}
	switch {
	case werr != nil:
		if ferr == nil {
			t.Errorf("%s: walk %v, fast path %q", label, werr, f.Path)
		} else if Errno(werr) != Errno(ferr) {
			t.Errorf("%s: walk %v, fast path %v", label, werr, ferr)
		}
	case !w.Exists:
		// The fast path answers ENOENT, or fell back to the walk.
		if !errors.Is(ferr, unix.ENOENT) && (ferr != nil || f.Exists || f.Path != w.Path) {
			t.Errorf("%s: walk says absent, fast path %v %v", label, f, ferr)
		}
	case ferr != nil && w.Stat.Mode&unix.S_IFMT == unix.S_IFLNK:
		// The walk stopped at a symlink (O_NOFOLLOW); opening it fails
		// whatever the errno, and the fast path gives the kernel's own
		// (ENOTDIR with O_DIRECTORY, as open(2) checks that first).
	case ferr != nil:
		t.Errorf("%s: walk %q, fast path %v", label, w.Path, ferr)
	default:
		if f.Path != w.Path || f.Kind != w.Kind || f.Stat.Ino != w.Stat.Ino || f.Stat.Dev != w.Stat.Dev {
			t.Errorf("%s: walk %q (%v ino %d), fast path %q (%v ino %d)", label, w.Path, w.Kind, w.Stat.Ino, f.Path, f.Kind, f.Stat.Ino)
		}
		return f.Dir == nil && f.last == lastObject && w.last == lastNorm
	}
	return false
}

// TestFastPathMatchesWalk: every case of the resolution table, for this
// process and for a child whose cwd is the tree, resolves to the same
// thing with and without the fast path, including /proc/self, magic
// links and symlinks in every position.
func TestFastPathMatchesWalk(t *testing.T) {
	requireResolveKernel(t)
	base := makeTree(t)
	dfd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	dir, err := os.Open(base + "/d/sub")
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	child := startSleeper(t, base, nil, dir)
	cpid := child.Process.Pid

	cases := append([]string(nil), resolveCases...)
	cases = append(cases,
		"/proc/self/fd/0", "/proc/self/status", "/proc/thread-self/status", "/dev/stdin", "/dev/fd/0",
		"/proc/self/cwd/d/f", "/proc/self/../self/cwd", "/proc/"+strconv.Itoa(cpid)+"/cwd/d/f",
		"/proc/"+strconv.Itoa(cpid)+"/status", "/etc/hostname", "/etc/../etc/hostname", "/", "//", "/.",
	)
	fastTaken := 0
	for _, p := range cases {
		for _, flags := range []ResolveFlags{FollowLast, 0, FollowLast | MustBeDir, MustBeDir, FollowLast | NoMagicLinks} {
			// This process: relative to a dirfd and absolute.
			if fastAgrees(t, os.Getpid(), dfd, p, flags) {
				fastTaken++
			}
			fastAgrees(t, os.Getpid(), unix.AT_FDCWD, base+"/"+p, flags)
			// The child: relative to its cwd and to its fd 3 (d/sub).
			if fastAgrees(t, cpid, unix.AT_FDCWD, p, flags) {
				fastTaken++
			}
			fastAgrees(t, cpid, 3, p, flags)
		}
	}
	if fastTaken == 0 {
		t.Error("the fast path was never taken")
	}
	// A dirfd the thread does not have is its EBADF either way.
	fastAgrees(t, cpid, 50, "x", FollowLast)
}

// TestFastPathOpenReopensTheObject: Open of a fast-path result reopens
// the very inode that was judged, even when the name is replaced in
// between (by a file, or by a symlink to a file the policy would deny).
func TestFastPathOpenReopensTheObject(t *testing.T) {
	requireResolveKernel(t)
	base := makeTree(t)
	r, err := Resolve(os.Getpid(), unix.AT_FDCWD, base+"/d/f", FollowLast|ObjectOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Dir != nil {
		t.Fatalf("fast path not taken: %+v", r)
	}
	if err := os.WriteFile(base+"/secret", []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(base+"/d/f", base+"/d/f.old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base+"/secret", base+"/d/f"); err != nil {
		t.Fatal(err)
	}
	f, err := Open(r, unix.O_RDONLY, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 16)
	n, _ := f.Read(b)
	if string(b[:n]) != "F" {
		t.Errorf("reopened %q, want the judged file's content %q", b[:n], "F")
	}
}

// BenchmarkResolveFast is BenchmarkResolve5 and BenchmarkResolveOpen with
// ObjectOnly, as the supervisor resolves an open without O_CREAT: the
// walk (walk/...) against the fast path (fast/...). Count its syscalls
// with strace -c -f on the test binary.
//
//	go test ./notify/pin -run '^$' -bench ResolveFast -benchtime 2000x
func BenchmarkResolveFast(b *testing.B) {
	requireResolveKernel(b)
	base := makeTree(b)
	if err := os.MkdirAll(base+"/p1/p2/p3/p4", 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(base+"/p1/p2/p3/p4/file.go", nil, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(base)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	pid := os.Getpid()
	for _, how := range []struct {
		name  string
		flags ResolveFlags
	}{{"walk", FollowLast}, {"fast", FollowLast | ObjectOnly}} {
		for _, tc := range []struct {
			name, path string
			dirfd      int
			open       bool
		}{
			{"absolute", base + "/p1/p2/p3/p4/file.go", unix.AT_FDCWD, false},
			{"relative", "p1/p2/p3/p4/file.go", int(f.Fd()), false},
			{"absolute+open", base + "/p1/p2/p3/p4/file.go", unix.AT_FDCWD, true},
		} {
			b.Run(how.name+"/"+tc.name, func(b *testing.B) {
				cpu := cpuTime()
				for b.Loop() {
					r, err := Resolve(pid, tc.dirfd, tc.path, how.flags)
					if err != nil {
						b.Fatal(err)
					}
					if tc.open {
						f, err := Open(r, unix.O_RDONLY, 0, 0)
						if err != nil {
							b.Fatal(err)
						}
						f.Close()
					}
					r.Close()
				}
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// A /proc entry always takes the walk, even when its path is plain
// (absolute, no symlinks): the open's guard reads the pinned /proc/PID
// directory to tell whether the target traces that process (gdb opening
// its inferior's /proc/PID/auxv and mem), which the fast path does not pin.
func TestFastPathLeavesProcToTheWalk(t *testing.T) {
	requireResolveKernel(t)
	child := startSleeper(t, t.TempDir(), nil)
	for _, p := range []string{
		"/proc/" + strconv.Itoa(child.Process.Pid) + "/auxv",
		"/proc/" + strconv.Itoa(child.Process.Pid) + "/status",
		"/proc/" + strconv.Itoa(os.Getpid()) + "/status",
	} {
		r, err := Resolve(os.Getpid(), unix.AT_FDCWD, p, FollowLast|ObjectOnly)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if r.Dir == nil {
			t.Errorf("%s: resolved by the fast path (no pinned /proc/PID directory)", p)
		}
		r.Close()
	}
}
