package pin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

const testUmask = 0o027

// makeScene is the starting tree for every emulation case, built twice: once
// for the kernel to act on, once for the emulation.
func makeScene(t *testing.T, dir string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(dir+"/d/sub", 0o755))
	must(os.Mkdir(dir+"/e", 0o755))
	must(os.WriteFile(dir+"/f", []byte("file"), 0o644))
	must(os.WriteFile(dir+"/f2", []byte("file2"), 0o644))
	must(os.WriteFile(dir+"/d/x", []byte("x"), 0o644))
	must(os.Symlink("f", dir+"/link_f"))
	must(os.Symlink("e", dir+"/link_e"))
	must(os.Symlink("d/newfile", dir+"/dangling"))
	must(unix.Mkfifo(dir+"/fifo", 0o644))
	must(os.Chmod(dir+"/fifo", 0o644))
}

// sceneState describes a tree: names, types, modes, sizes, link targets,
// user xattrs and explicitly set (old) mtimes. Inode numbers and ordinary
// times differ between the twins and are left out.
func sceneState(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			lines = append(lines, p+": "+err.Error())
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		st := fi.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("%s %o uid=%d gid=%d", rel, st.Mode, st.Uid, st.Gid)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			b, _ := os.ReadFile(p)
			line += fmt.Sprintf(" %q nlink=%d", b, st.Nlink)
		case unix.S_IFLNK:
			l, _ := os.Readlink(p)
			line += " -> " + l
		}
		if st.Mtim.Sec < 1_000_000_000 {
			line += fmt.Sprintf(" mtime=%d", st.Mtim.Sec)
		}
		buf := make([]byte, 64)
		if n, err := unix.Lgetxattr(p, "user.t", buf); err == nil {
			line += fmt.Sprintf(" user.t=%q", buf[:n])
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

type emuCase struct {
	name   string
	kernel func(dirfd int) error
	emu    func(tid, dirfd int) error
}

func resolveFor(tid, dirfd int, p string, fl ResolveFlags) (*Resolved, error) {
	return Resolve(tid, dirfd, p, fl)
}

// onOne resolves p and runs op on it.
func onOne(tid, dirfd int, p string, fl ResolveFlags, op func(r *Resolved) error) error {
	r, err := resolveFor(tid, dirfd, p, fl)
	if err != nil {
		return err
	}
	defer r.Close()
	return op(r)
}

// onTwo resolves two paths and runs op on them.
func onTwo(tid, dirfd int, a string, fa ResolveFlags, b string, fb ResolveFlags, op func(a, b *Resolved) error) error {
	ra, err := resolveFor(tid, dirfd, a, fa)
	if err != nil {
		return err
	}
	defer ra.Close()
	rb, err := resolveFor(tid, dirfd, b, fb)
	if err != nil {
		return err
	}
	defer rb.Close()
	return op(ra, rb)
}

func openCase(p string, flags int, mode uint32) emuCase {
	return emuCase{
		name: fmt.Sprintf("open %q %#o", p, flags),
		kernel: func(dirfd int) error {
			fd, err := unix.Openat(dirfd, p, flags|unix.O_CLOEXEC, mode)
			if err == nil {
				unix.Close(fd)
			}
			return err
		},
		emu: func(tid, dirfd int) error {
			return onOne(tid, dirfd, p, OpenResolveFlags(flags), func(r *Resolved) error {
				f, err := Open(r, flags, mode, testUmask)
				if err == nil {
					f.Close()
				}
				return err
			})
		},
	}
}

func unlinkCase(p string, rmdir bool) emuCase {
	fl := 0
	if rmdir {
		fl = unix.AT_REMOVEDIR
	}
	return emuCase{
		name:   fmt.Sprintf("unlink %q rmdir=%v", p, rmdir),
		kernel: func(dirfd int) error { return unix.Unlinkat(dirfd, p, fl) },
		emu: func(tid, dirfd int) error {
			return onOne(tid, dirfd, p, ParentOnly, func(r *Resolved) error { return Unlink(r, rmdir) })
		},
	}
}

func renameCase(a, b string, flags uint) emuCase {
	return emuCase{
		name:   fmt.Sprintf("rename %q %q %d", a, b, flags),
		kernel: func(dirfd int) error { return unix.Renameat2(dirfd, a, dirfd, b, flags) },
		emu: func(tid, dirfd int) error {
			return onTwo(tid, dirfd, a, ParentOnly, b, ParentOnly, func(x, y *Resolved) error { return Rename(x, y, flags) })
		},
	}
}

func mkdirCase(p string) emuCase {
	return emuCase{
		name:   fmt.Sprintf("mkdir %q", p),
		kernel: func(dirfd int) error { return unix.Mkdirat(dirfd, p, 0o1777) },
		emu: func(tid, dirfd int) error {
			return onOne(tid, dirfd, p, ParentOnly, func(r *Resolved) error { return Mkdir(r, 0o1777, testUmask) })
		},
	}
}

func linkCase(a, b string, flags int) emuCase {
	return emuCase{
		name:   fmt.Sprintf("link %q %q %#x", a, b, flags),
		kernel: func(dirfd int) error { return unix.Linkat(dirfd, a, dirfd, b, flags) },
		emu: func(tid, dirfd int) error {
			return onTwo(tid, dirfd, a, AtResolveFlags(flags, false), b, ParentOnly, func(x, y *Resolved) error { return Link(x, y, flags) })
		},
	}
}

func metaCase(name, p string, follow bool, kernel func(dirfd int, p string, atFlags int) error, op func(r *Resolved) error) emuCase {
	at := 0
	if !follow {
		at = unix.AT_SYMLINK_NOFOLLOW
	}
	return emuCase{
		name:   fmt.Sprintf("%s %q follow=%v", name, p, follow),
		kernel: func(dirfd int) error { return kernel(dirfd, p, at) },
		emu: func(tid, dirfd int) error {
			return onOne(tid, dirfd, p, AtResolveFlags(at, true), op)
		},
	}
}

func emuCases() []emuCase {
	var cs []emuCase
	for _, c := range []struct {
		p     string
		flags int
	}{
		{"new", unix.O_CREAT | unix.O_WRONLY},
		{"new", unix.O_CREAT | unix.O_EXCL | unix.O_RDWR},
		{"f", unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY},
		{"f", unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC},
		{"f", unix.O_WRONLY | unix.O_APPEND},
		{"f/", unix.O_RDONLY},
		{"new/", unix.O_CREAT | unix.O_WRONLY},
		{"f/", unix.O_CREAT | unix.O_WRONLY},
		{"d", unix.O_CREAT | unix.O_RDONLY},
		{"d", unix.O_WRONLY},
		{"d/.", unix.O_CREAT | unix.O_RDONLY},
		{"d/..", unix.O_RDONLY | unix.O_DIRECTORY},
		{"dangling", unix.O_CREAT | unix.O_WRONLY},
		{"dangling", unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY},
		{"dangling", unix.O_RDONLY},
		{"link_f", unix.O_RDONLY | unix.O_NOFOLLOW},
		{"link_f", unix.O_PATH | unix.O_NOFOLLOW},
		{"link_f", unix.O_WRONLY | unix.O_TRUNC},
		{"link_e/", unix.O_RDONLY | unix.O_NOFOLLOW},
		{"f", unix.O_RDONLY | unix.O_DIRECTORY},
		{"new", unix.O_CREAT | unix.O_DIRECTORY},
		{"d", unix.O_TMPFILE | unix.O_RDWR},
		{"f", unix.O_TMPFILE | unix.O_RDWR},
		{"nope/x", unix.O_CREAT | unix.O_WRONLY},
		{"fifo", unix.O_RDONLY | unix.O_NONBLOCK},
		{"fifo", unix.O_WRONLY | unix.O_NONBLOCK},
	} {
		cs = append(cs, openCase(c.p, c.flags, 0o666))
	}
	cs = append(cs, openCase("new", unix.O_CREAT|unix.O_WRONLY, 0o4777))
	for _, p := range []string{"f", "d", "e", "f/", "nope", "d/.", "d/..", "link_e/", "link_e", "e/", "dangling"} {
		cs = append(cs, unlinkCase(p, false), unlinkCase(p, true))
	}
	for _, c := range []struct {
		a, b  string
		flags uint
	}{
		{"f", "g", 0}, {"f", "d", 0}, {"d", "f", 0}, {"e", "d", 0}, {"d", "e", 0},
		{"f", "f2", unix.RENAME_NOREPLACE}, {"f", "f2", 0}, {"f", "d", unix.RENAME_EXCHANGE},
		{"f", "nope", unix.RENAME_EXCHANGE}, {"d", "d/sub/x", 0}, {"d/.", "g", 0}, {"f", "d/..", 0},
		{"f", "d/..", unix.RENAME_NOREPLACE}, {"f/", "g", 0}, {"e/", "g/", 0}, {"link_e/", "g", 0},
		{"link_e", "g", 0}, {"nope", "g", 0}, {"f", "g", unix.RENAME_WHITEOUT},
		{"f", "f", 0}, {"f", "link_f", 0},
	} {
		cs = append(cs, renameCase(c.a, c.b, c.flags))
	}
	for _, p := range []string{"n", "n/", "d", "f/", "d/.", "nope/x", "dangling", "dangling/", "d/sub/n"} {
		cs = append(cs, mkdirCase(p))
	}
	for _, c := range []struct {
		a, b  string
		flags int
	}{
		{"f", "h", 0}, {"d", "h", 0}, {"f", "d", 0}, {"link_f", "h", 0},
		{"link_f", "h", unix.AT_SYMLINK_FOLLOW}, {"dangling", "h", unix.AT_SYMLINK_FOLLOW},
		{"f", "h/", 0}, {"f/", "h", 0}, {"nope", "h", 0}, {"f", "d/.", 0},
	} {
		cs = append(cs, linkCase(c.a, c.b, c.flags))
	}
	for _, c := range []struct{ target, p string }{{"f", "s"}, {"x", "f"}, {"x", "s/"}, {"", "s"}, {"x", "d/."}} {
		cs = append(cs, emuCase{
			name:   fmt.Sprintf("symlink %q %q", c.target, c.p),
			kernel: func(dirfd int) error { return unix.Symlinkat(c.target, dirfd, c.p) },
			emu: func(tid, dirfd int) error {
				return onOne(tid, dirfd, c.p, ParentOnly, func(r *Resolved) error { return Symlink(c.target, r) })
			},
		})
	}
	for _, c := range []struct {
		p    string
		mode uint32
	}{{"p", unix.S_IFIFO | 0o666}, {"p", 0o644}, {"f", unix.S_IFIFO | 0o666}, {"p", unix.S_IFDIR | 0o755}, {"p", unix.S_IFSOCK | 0o777}} {
		cs = append(cs, emuCase{
			name:   fmt.Sprintf("mknod %q %o", c.p, c.mode),
			kernel: func(dirfd int) error { return unix.Mknodat(dirfd, c.p, c.mode, 0) },
			emu: func(tid, dirfd int) error {
				return onOne(tid, dirfd, c.p, ParentOnly, func(r *Resolved) error { return Mknod(r, c.mode, 0, testUmask) })
			},
		})
	}
	for _, c := range []struct {
		p   string
		len int64
	}{{"f", 2}, {"d", 0}, {"link_f", 1}, {"fifo", 0}, {"nope", 0}, {"f/", 0}, {"f", -1}} {
		cs = append(cs, emuCase{
			name:   fmt.Sprintf("truncate %q %d", c.p, c.len),
			kernel: func(dirfd int) error { return unix.Truncate(atPath(dirfd, c.p), c.len) },
			emu: func(tid, dirfd int) error {
				if c.len < 0 { // the kernel checks the length before the path
					return Truncate(nil, c.len)
				}
				return onOne(tid, dirfd, c.p, FollowLast, func(r *Resolved) error { return Truncate(r, c.len) })
			},
		})
	}
	for _, p := range []string{"f", "link_f", "d", "nope", "dangling"} {
		for _, follow := range []bool{true, false} {
			cs = append(cs,
				metaCase("chmod", p, follow,
					func(dirfd int, p string, at int) error { return unix.Fchmodat(dirfd, p, 0o4710, at) },
					func(r *Resolved) error { return Chmod(r, 0o4710) }),
				metaCase("chown", p, follow,
					func(dirfd int, p string, at int) error { return unix.Fchownat(dirfd, p, 1234, 5678, at) },
					func(r *Resolved) error { return Chown(r, 1234, 5678) }),
				metaCase("utimens", p, follow,
					func(dirfd int, p string, at int) error {
						ts := []unix.Timespec{{Sec: 1000}, {Sec: 2000}}
						return unix.UtimesNanoAt(dirfd, p, ts, at)
					},
					func(r *Resolved) error {
						return Utimens(r, &[2]unix.Timespec{{Sec: 1000}, {Sec: 2000}})
					}),
				metaCase("setxattr", p, follow,
					func(dirfd int, p string, at int) error {
						if at != 0 {
							return unix.Lsetxattr(atPath(dirfd, p), "user.t", []byte("v"), 0)
						}
						return unix.Setxattr(atPath(dirfd, p), "user.t", []byte("v"), 0)
					},
					func(r *Resolved) error { return Setxattr(r, "user.t", []byte("v"), 0) }),
				metaCase("removexattr", p, follow,
					func(dirfd int, p string, at int) error {
						if at != 0 {
							return unix.Lremovexattr(atPath(dirfd, p), "user.t")
						}
						return unix.Removexattr(atPath(dirfd, p), "user.t")
					},
					func(r *Resolved) error { return Removexattr(r, "user.t") }),
			)
		}
	}
	// Through the magic link of the twin's own dirfd: the walk continues
	// from the object the link names, and Object-only results (Dir == nil)
	// are acted on through the supervisor's own /proc/self/fd link.
	magic := func(dirfd int, rest string) string {
		return fmt.Sprintf("/proc/self/fd/%d%s", dirfd, rest)
	}
	for _, c := range []struct {
		rest  string
		flags int
	}{
		{"/f", unix.O_WRONLY | unix.O_TRUNC},
		{"/n", unix.O_CREAT | unix.O_WRONLY},
		{"", unix.O_RDONLY | unix.O_DIRECTORY},
		{"", unix.O_WRONLY},
		{"", unix.O_TMPFILE | unix.O_RDWR},
		{"", unix.O_CREAT | unix.O_EXCL | unix.O_RDWR},
		{"/d/.", unix.O_TMPFILE | unix.O_RDWR},
	} {
		cs = append(cs, emuCase{
			name: fmt.Sprintf("open magic%q %#o", c.rest, c.flags),
			kernel: func(dirfd int) error {
				fd, err := unix.Open(magic(dirfd, c.rest), c.flags|unix.O_CLOEXEC, 0o666)
				if err == nil {
					unix.Close(fd)
				}
				return err
			},
			emu: func(tid, dirfd int) error {
				return onOne(tid, unix.AT_FDCWD, magic(dirfd, c.rest), OpenResolveFlags(c.flags), func(r *Resolved) error {
					f, err := Open(r, c.flags, 0o666, testUmask)
					if err == nil {
						f.Close()
					}
					return err
				})
			},
		})
	}
	cs = append(cs,
		emuCase{
			name:   "chmod magic dir",
			kernel: func(dirfd int) error { return unix.Chmod(magic(dirfd, ""), 0o700) },
			emu: func(tid, dirfd int) error {
				return onOne(tid, unix.AT_FDCWD, magic(dirfd, ""), FollowLast, func(r *Resolved) error { return Chmod(r, 0o700) })
			},
		},
		emuCase{
			name:   "unlink magic/f",
			kernel: func(dirfd int) error { return unix.Unlink(magic(dirfd, "/f")) },
			emu: func(tid, dirfd int) error {
				return onOne(tid, unix.AT_FDCWD, magic(dirfd, "/f"), ParentOnly, func(r *Resolved) error { return Unlink(r, false) })
			},
		},
		emuCase{
			name:   "truncate magic/link_f",
			kernel: func(dirfd int) error { return unix.Truncate(magic(dirfd, "/link_f"), 1) },
			emu: func(tid, dirfd int) error {
				return onOne(tid, unix.AT_FDCWD, magic(dirfd, "/link_f"), FollowLast, func(r *Resolved) error { return Truncate(r, 1) })
			},
		},
		emuCase{
			name:   "rename magic/f magic/d/g",
			kernel: func(dirfd int) error { return unix.Rename(magic(dirfd, "/f"), magic(dirfd, "/d/g")) },
			emu: func(tid, dirfd int) error {
				return onTwo(tid, unix.AT_FDCWD, magic(dirfd, "/f"), ParentOnly, magic(dirfd, "/d/g"), ParentOnly,
					func(a, b *Resolved) error { return Rename(a, b, 0) })
			},
		},
	)
	return cs
}

// atPath names dirfd/p for the path-only syscalls (truncate, setxattr) the
// kernel side of a case uses.
func atPath(dirfd int, p string) string {
	return fmt.Sprintf("/proc/self/fd/%d/%s", dirfd, p)
}

// TestEmulationMatchesKernel runs each operation once by the kernel and once
// emulated, on identical trees, and requires the same errno and the same
// resulting tree.
func TestEmulationMatchesKernel(t *testing.T) {
	requireResolveKernel(t)
	old := unix.Umask(testUmask)
	defer unix.Umask(old)
	tid := os.Getpid()
	for _, c := range emuCases() {
		root := t.TempDir()
		kdir, edir := root+"/k", root+"/e"
		for _, d := range []string{kdir, edir} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			makeScene(t, d)
		}
		kfd, err := unix.Open(kdir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		efd, err := unix.Open(edir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		kerr := c.kernel(kfd)
		eerr := c.emu(tid, efd)
		unix.Close(kfd)
		unix.Close(efd)
		if Errno(kerr) != Errno(eerr) {
			t.Errorf("%s: kernel %v, emulation %v", c.name, kerr, eerr)
			continue
		}
		if ks, es := sceneState(t, kdir), sceneState(t, edir); ks != es {
			t.Errorf("%s (%v): trees differ\nkernel:\n%s\nemulation:\n%s", c.name, kerr, ks, es)
		}
	}
}

// TestEmulationExdev renames across two mounts when the machine has them.
func TestEmulationExdev(t *testing.T) {
	requireResolveKernel(t)
	a := t.TempDir()
	b, err := os.MkdirTemp("/dev/shm", "pin")
	if err != nil {
		kerneltest.Skipf(t, "a second mount (/dev/shm): %v", err)
	}
	defer os.RemoveAll(b)
	if err := os.WriteFile(a+"/f", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	kerr := unix.Rename(a+"/f", b+"/f")
	if kerr == nil {
		kerneltest.Skip(t, "a second mount: TempDir and /dev/shm share one")
	}
	tid := os.Getpid()
	eerr := onTwo(tid, unix.AT_FDCWD, a+"/f", ParentOnly, b+"/f", ParentOnly, func(x, y *Resolved) error { return Rename(x, y, 0) })
	if !errors.Is(kerr, unix.EXDEV) || Errno(eerr) != unix.EXDEV {
		t.Errorf("kernel %v, emulation %v, want EXDEV", kerr, eerr)
	}
	eerr = onTwo(tid, unix.AT_FDCWD, a+"/f", 0, b+"/f", ParentOnly, func(x, y *Resolved) error { return Link(x, y, 0) })
	if Errno(eerr) != unix.EXDEV {
		t.Errorf("link across mounts: %v, want EXDEV", eerr)
	}
}

// TestEmulationTmpfileLink gives an O_TMPFILE file a name through the
// /proc/self/fd magic link, the way programs do it without privileges.
func TestEmulationTmpfileLink(t *testing.T) {
	requireResolveKernel(t)
	dir := t.TempDir()
	tid := os.Getpid()
	f, err := func() (*File, error) {
		r, err := Resolve(tid, unix.AT_FDCWD, dir, OpenResolveFlags(unix.O_TMPFILE|unix.O_RDWR))
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return Open(r, unix.O_TMPFILE|unix.O_RDWR, 0o640, 0o022)
	}()
	if err != nil {
		t.Fatalf("O_TMPFILE: %v", err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("tmp")); err != nil {
		t.Fatal(err)
	}
	from, err := Resolve(tid, unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), FollowLast)
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	// An O_TMPFILE file is judged as the name the kernel gives it in the
	// directory it was made in ("DIR/#INO (deleted)").
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%s/#%d", dir, st.Ino); from.Kind != KindPath || !from.Deleted || from.Path != want {
		t.Errorf("tmpfile: kind %v deleted %v path %q, want a deleted %q", from.Kind, from.Deleted, from.Path, want)
	}
	to, err := Resolve(tid, unix.AT_FDCWD, dir+"/named", ParentOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer to.Close()
	if err := Link(from, to, unix.AT_SYMLINK_FOLLOW); err != nil {
		t.Fatalf("link: %v", err)
	}
	b, err := os.ReadFile(dir + "/named")
	if err != nil || string(b) != "tmp" {
		t.Errorf("named tmpfile: %q %v", b, err)
	}
	if fi, err := os.Stat(dir + "/named"); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("named tmpfile mode: %v %v, want 0640", fi.Mode(), err)
	}
}

// TestEmulationAsOtherUser acts for a target that dropped to another uid:
// permissions are the target's and new files are the target's.
func TestEmulationAsOtherUser(t *testing.T) {
	requireResolveKernel(t)
	if os.Geteuid() != 0 {
		kerneltest.Skip(t, "root, to start a target under another uid")
	}
	const uid, gid = 65534, 65534
	// t.TempDir's parent is 0700; the target must be able to reach base.
	base, err := os.MkdirTemp("", "pin-cred")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	open := base + "/open"
	shut := base + "/shut"
	for _, d := range []string{open, shut} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shut, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shut+"/secret", []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "60")
	cmd.Dir = base
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start sleep as %d: %v", uid, err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	tid := cmd.Process.Pid
	// Wait until the child has dropped its ids.
	for range 200 {
		if st, err := readStatus(tid); err == nil && st.cred.UID == uid {
			break
		}
		unix.Nanosleep(&unix.Timespec{Nsec: 5e6}, nil)
	}

	r, err := Resolve(tid, unix.AT_FDCWD, "open/new", OpenResolveFlags(unix.O_CREAT|unix.O_WRONLY))
	if err != nil {
		t.Fatal(err)
	}
	if r.Cred == nil || r.Cred.UID != uid {
		t.Fatalf("Cred %+v, want uid %d", r.Cred, uid)
	}
	f, err := Open(r, unix.O_CREAT|unix.O_WRONLY, 0o666, 0o022)
	r.Close()
	if err != nil {
		t.Fatalf("create as %d: %v", uid, err)
	}
	f.Close()
	var st unix.Stat_t
	if err := unix.Stat(open+"/new", &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != uid || st.Gid != gid || st.Mode&0o777 != 0o644 {
		t.Errorf("new file uid %d gid %d mode %o, want %d %d 644", st.Uid, st.Gid, st.Mode&0o777, uid, gid)
	}
	// The kernel would stop the target at the 0700 directory.
	if _, err := Resolve(tid, unix.AT_FDCWD, "shut/secret", FollowLast); !errors.Is(err, unix.EACCES) {
		t.Errorf("resolve through 0700 dir as %d: %v, want EACCES", uid, err)
	}
	if err := onOne(tid, unix.AT_FDCWD, "shut/x", ParentOnly, func(r *Resolved) error { return Mkdir(r, 0o777, 0) }); !errors.Is(err, unix.EACCES) {
		t.Errorf("mkdir in 0700 dir as %d: %v, want EACCES", uid, err)
	}
	// And the supervisor is itself again afterwards.
	for i := range 20 {
		p := fmt.Sprintf("%s/mine%d", base, i)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := unix.Stat(p, &st); err != nil || st.Uid != uint32(os.Geteuid()) {
			t.Fatalf("supervisor file owned by %d: %v", st.Uid, err)
		}
		os.Remove(p)
	}
}

// TestEmulationNeedsParentOnly: name operations refuse a trailing-slash
// result resolved with lookup semantics (which followed the symlink), rather
// than remove the symlink's target.
func TestEmulationNeedsParentOnly(t *testing.T) {
	requireResolveKernel(t)
	dir := t.TempDir()
	makeScene(t, dir)
	tid := os.Getpid()
	err := onOne(tid, unix.AT_FDCWD, dir+"/link_e/", FollowLast, func(r *Resolved) error { return Unlink(r, true) })
	if !errors.Is(err, unix.EINVAL) {
		t.Errorf("rmdir link_e/ resolved without ParentOnly: %v, want EINVAL", err)
	}
	if _, err := os.Stat(dir + "/e"); err != nil {
		t.Errorf("symlink target removed: %v", err)
	}
	err = onOne(tid, unix.AT_FDCWD, dir+"/link_e/", ParentOnly, func(r *Resolved) error { return Unlink(r, true) })
	if kerr := unix.Rmdir(dir + "/link_e/"); Errno(err) != Errno(kerr) {
		t.Errorf("rmdir link_e/: emulation %v, kernel %v", err, kerr)
	}
	// Without a symlink in the last position ParentOnly changes nothing a
	// name operation relies on: mkdir("n/") works either way.
	if err := onOne(tid, unix.AT_FDCWD, dir+"/n/", MustBeDir, func(r *Resolved) error { return Mkdir(r, 0o755, 0) }); err != nil {
		t.Errorf("mkdir n/ without ParentOnly: %v", err)
	}
	// mkdir on an existing file is EEXIST even when the caller also asked
	// for directory semantics.
	err = onOne(tid, unix.AT_FDCWD, dir+"/f", ParentOnly|MustBeDir, func(r *Resolved) error { return Mkdir(r, 0o755, 0) })
	if !errors.Is(err, unix.EEXIST) {
		t.Errorf("mkdir f: %v, want EEXIST", err)
	}
}

// BenchmarkResolveOpen is the work of an emulated read-only open: Resolve,
// Open, and closing both.
func BenchmarkResolveOpen(b *testing.B) {
	requireResolveKernel(b)
	base := makeTree(b)
	if err := os.MkdirAll(base+"/p1/p2/p3/p4", 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(base+"/p1/p2/p3/p4/file.go", nil, 0o644); err != nil {
		b.Fatal(err)
	}
	pid := os.Getpid()
	cpu := cpuTime()
	defer func() { b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op") }()
	for b.Loop() {
		r, err := Resolve(pid, unix.AT_FDCWD, base+"/p1/p2/p3/p4/file.go", FollowLast)
		if err != nil {
			b.Fatal(err)
		}
		f, err := Open(r, unix.O_RDONLY, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		f.Close()
		r.Close()
	}
}

// A name missing when it was resolved is created first by an O_CREAT
// open (one call); if it appeared since, the open takes the file that is
// there as the kernel would — contents and mode untouched without
// O_TRUNC, EEXIST with O_EXCL — and a missing one gets mode &^ umask.
func TestOpenCreateNameAppeared(t *testing.T) {
	requireResolveKernel(t)
	dir := t.TempDir()
	tid := os.Getpid()
	open := func(name string, flags int) (string, uint32, error) {
		r, err := Resolve(tid, unix.AT_FDCWD, dir+"/"+name, OpenResolveFlags(flags))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if r.Exists {
			t.Fatalf("%s resolved as existing", name)
		}
		// The name appears between the resolution and the open.
		if name != "new" {
			if err := os.WriteFile(dir+"/"+name, []byte("there"), 0o604); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir+"/"+name, 0o604); err != nil {
				t.Fatal(err)
			}
		}
		f, err := Open(r, flags, 0o666, 0o022)
		if err != nil {
			return "", 0, err
		}
		f.Close()
		b, _ := os.ReadFile(dir + "/" + name)
		st, _ := os.Stat(dir + "/" + name)
		return string(b), uint32(st.Mode().Perm()), nil
	}
	if got, mode, err := open("new", unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC); err != nil || got != "" || mode != 0o644 {
		t.Errorf("missing name: %q %o %v, want an empty file of mode 644", got, mode, err)
	}
	if got, mode, err := open("appeared", unix.O_WRONLY|unix.O_CREAT); err != nil || got != "there" || mode != 0o604 {
		t.Errorf("name that appeared: %q %o %v, want its contents and mode 604 untouched", got, mode, err)
	}
	if _, _, err := open("appeared-excl", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL); err != unix.EEXIST {
		t.Errorf("O_EXCL on a name that appeared: %v, want EEXIST", err)
	}
}
