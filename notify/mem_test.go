package notify

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// guardedPage maps two pages and makes the second inaccessible, so tests
// can place data right before an unmapped boundary. It returns the first
// page and the address of the guard page.
func guardedPage(t testing.TB) ([]byte, uint64) {
	t.Helper()
	ps := os.Getpagesize()
	m, err := unix.Mmap(-1, 0, 2*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	if err := unix.Mprotect(m[ps:], unix.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	return m[:ps], addrOf(m[ps:])
}

func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// memTestKeep makes test buffers escape to the heap: an address handed to
// the kernel must not point into a goroutine stack, which moves when it
// grows (a stale copy would be read instead).
var memTestKeep []any

func heapBytes(n int) []byte {
	b := make([]byte, n)
	memTestKeep = append(memTestKeep, b)
	return b
}

func heapPtrs(n int) []uint64 {
	p := make([]uint64, n)
	memTestKeep = append(memTestKeep, p)
	return p
}

func heapString(s string) []byte {
	b := heapBytes(len(s))
	copy(b, s)
	return b
}

func ptrsAddr(p []uint64) uint64 { return uint64(uintptr(unsafe.Pointer(&p[0]))) }

// placeAtEnd copies s to the end of page so its last byte touches the guard.
func placeAtEnd(page []byte, s string) uint64 {
	off := len(page) - len(s)
	copy(page[off:], s)
	return addrOf(page[off:])
}

func TestReadStringSelf(t *testing.T) {
	pid := os.Getpid()
	page, guard := guardedPage(t)

	// Ends exactly at the guard page: must not read past the NUL.
	addr := placeAtEnd(page, "/etc/hostname\x00")
	if s, err := ReadString(pid, addr, PathMax); err != nil || s != "/etc/hostname" {
		t.Errorf("string ending at guard: %q, %v", s, err)
	}
	// No NUL before the guard: the read faults, it is not a string.
	addr = placeAtEnd(page, "/no/terminator")
	if _, err := ReadString(pid, addr, PathMax); !errors.Is(err, unix.EFAULT) {
		t.Errorf("unterminated string before guard: %v, want EFAULT", err)
	}
	if _, err := ReadString(pid, 0, PathMax); !errors.Is(err, unix.EFAULT) {
		t.Errorf("NULL: %v, want EFAULT", err)
	}
	if _, err := ReadString(pid, guard, PathMax); !errors.Is(err, unix.EFAULT) {
		t.Errorf("unmapped: %v, want EFAULT", err)
	}
	if s, err := ReadString(pid, placeAtEnd(page, "\x00"), PathMax); err != nil || s != "" {
		t.Errorf("empty string: %q, %v", s, err)
	}
}

func TestReadStringLimits(t *testing.T) {
	pid := os.Getpid()
	// max counts the NUL: a 4095-byte path fits PathMax, 4096 does not.
	for _, c := range []struct {
		n   int
		max int
		ok  bool
	}{{4095, PathMax, true}, {4096, PathMax, false}, {3, 4, true}, {4, 4, false}, {10000, 20000, true}} {
		buf := heapString(strings.Repeat("a", c.n) + "\x00")
		s, err := ReadString(pid, addrOf(buf), c.max)
		switch {
		case c.ok && (err != nil || len(s) != c.n):
			t.Errorf("len %d max %d: got len %d, %v", c.n, c.max, len(s), err)
		case !c.ok && !errors.Is(err, unix.ENAMETOOLONG):
			t.Errorf("len %d max %d: %v, want ENAMETOOLONG", c.n, c.max, err)
		}
	}
	if _, err := ReadString(pid, 0x1000, 0); err == nil {
		t.Error("max 0 accepted")
	}
}

func TestReadBytesSelf(t *testing.T) {
	pid := os.Getpid()
	page, _ := guardedPage(t)
	addr := placeAtEnd(page, "0123456789abcdef")
	b, err := ReadBytes(pid, addr, 16)
	if err != nil || string(b) != "0123456789abcdef" {
		t.Errorf("ReadBytes = %q, %v", b, err)
	}
	if _, err := ReadBytes(pid, addr, 17); !errors.Is(err, unix.EFAULT) {
		t.Errorf("ReadBytes across guard: %v, want EFAULT", err)
	}
	// Crossing a mapped page boundary works.
	big := heapBytes(3 * os.Getpagesize())
	for i := range big {
		big[i] = byte(i * 7)
	}
	got, err := ReadBytes(pid, addrOf(big)+100, len(big)-100)
	if err != nil || string(got) != string(big[100:]) {
		t.Errorf("multi-page ReadBytes: %v", err)
	}
	if b, err := ReadBytes(pid, 0, 0); err != nil || len(b) != 0 {
		t.Errorf("zero-length read: %v", err)
	}
}

func TestReadArgvSelf(t *testing.T) {
	pid := os.Getpid()
	strs := [][]byte{heapString("ls\x00"), heapString("-l\x00"), heapString("a b\x00")}
	ptrs := heapPtrs(4)
	for i, s := range strs {
		ptrs[i] = addrOf(s)
	}
	arr := ptrsAddr(ptrs)
	argv, err := ReadArgv(pid, arr, 16, 1024)
	if err != nil || len(argv) != 3 || argv[0] != "ls" || argv[1] != "-l" || argv[2] != "a b" {
		t.Fatalf("ReadArgv = %q, %v", argv, err)
	}
	// Exactly at the bounds: 3 args, 3+3+4 = 10 bytes with NULs.
	if _, err := ReadArgv(pid, arr, 3, 10); err != nil {
		t.Errorf("at the bounds: %v", err)
	}
	if _, err := ReadArgv(pid, arr, 2, 1024); !errors.Is(err, unix.E2BIG) {
		t.Errorf("too many args: %v, want E2BIG", err)
	}
	if _, err := ReadArgv(pid, arr, 16, 9); !errors.Is(err, unix.E2BIG) {
		t.Errorf("too many bytes: %v, want E2BIG", err)
	}
	if argv, err := ReadArgv(pid, 0, 16, 1024); err != nil || len(argv) != 0 {
		t.Errorf("NULL argv: %q, %v", argv, err)
	}
	runtime.KeepAlive(strs)
	runtime.KeepAlive(ptrs)
}

// TestReadArgvManyPages spreads argv over more pages than a reader caches,
// with strings straddling page boundaries and one running into a guard.
func TestReadArgvManyPages(t *testing.T) {
	pid := os.Getpid()
	ps := memPageSize
	area := heapBytes(40 * ps)
	var want []string
	ptrs := heapPtrs(40)
	for i := range 39 {
		s := fmt.Sprintf("arg-%02d-%s", i, strings.Repeat("x", i*3))
		off := (i+1)*ps - 5 // straddles the boundary into the next page
		copy(area[off:], s+"\x00")
		want = append(want, s)
		ptrs[i] = addrOf(area[off:])
	}
	arr := ptrsAddr(ptrs)
	got, err := ReadArgv(pid, arr, 100, 1<<20)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ReadArgv over 40 pages: %v\n got %q\nwant %q", err, got, want)
	}

	page, _ := guardedPage(t)
	ptrs[3] = placeAtEnd(page, "unterminated")
	if _, err := ReadArgv(pid, arr, 100, 1<<20); !errors.Is(err, unix.EFAULT) {
		t.Errorf("argv string running into a guard page: %v, want EFAULT", err)
	}
	runtime.KeepAlive(area)
	runtime.KeepAlive(ptrs)
}

func TestReadPointerArrayGuard(t *testing.T) {
	pid := os.Getpid()
	page, _ := guardedPage(t)
	// Two non-NULL pointers and no terminator before the guard page.
	addr := placeAtEnd(page, "\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00")
	if _, err := ReadPointerArray(pid, addr, 100); !errors.Is(err, unix.EFAULT) {
		t.Errorf("unterminated array before guard: %v, want EFAULT", err)
	}
	// Misaligned arrays are read too.
	// A misaligned array whose second entry straddles the guard page.
	addr = placeAtEnd(page, "\x05\x00\x00\x00\x00\x00\x00\x00\x01")
	if p, err := ReadPointerArray(pid, addr, 100); !errors.Is(err, unix.EFAULT) {
		t.Errorf("misaligned array running into guard: %v, %v; want EFAULT", p, err)
	}
	buf := heapBytes(8*3 + 1)
	buf[1] = 9
	p, err := ReadPointerArray(pid, addrOf(buf)+1, 10)
	if err != nil || len(p) != 1 || p[0] != 9 {
		t.Errorf("misaligned: %v, %v", p, err)
	}
	if _, err := ReadPointerArray(pid, 0, 10); !errors.Is(err, unix.EFAULT) {
		t.Errorf("NULL array: %v", err)
	}
}

func TestReadFromGoneProcess(t *testing.T) {
	// A pid far above pid_max never exists.
	if _, err := ReadString(1<<30, 0x1000, PathMax); !errors.Is(err, unix.ESRCH) {
		t.Errorf("ReadString from a missing pid: %v, want ESRCH", err)
	}
}

func FuzzReadString(f *testing.F) {
	f.Add([]byte("/etc/passwd\x00"), 4096)
	f.Add([]byte("no nul"), 10)
	f.Add([]byte("\x00"), 1)
	pid := os.Getpid()
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if len(data) == 0 || max <= 0 || max > 1<<16 {
			return
		}
		page, _ := guardedPage(t)
		if len(data) > len(page) {
			data = data[:len(page)]
		}
		addr := placeAtEnd(page, string(data))
		s, err := ReadString(pid, addr, max)
		// The page-caching reader behind ReadArgv must agree.
		r := memReader{pid: pid}
		if s2, err2 := r.readString(addr, max); s2 != s || (err == nil) != (err2 == nil) || (err2 != nil && !errors.Is(err, err2)) {
			t.Fatalf("ReadString = %q, %v; memReader.readString = %q, %v", s, err, s2, err2)
		}
		nul := strings.IndexByte(string(data), 0)
		switch {
		case nul >= 0 && nul < max:
			if err != nil || s != string(data[:nul]) {
				t.Fatalf("got %q, %v; want %q", s, err, data[:nul])
			}
		case nul < 0 && len(data) < max:
			if !errors.Is(err, unix.EFAULT) {
				t.Fatalf("unterminated before guard: %q, %v", s, err)
			}
		default:
			if !errors.Is(err, unix.ENAMETOOLONG) {
				t.Fatalf("no NUL within %d: %q, %v", max, s, err)
			}
		}
	})
}

// BenchmarkReadArgv: a 12-argument command line whose strings share pages,
// as a shell's do.
func BenchmarkReadArgv(b *testing.B) {
	args := strings.Fields("git -c core.pager=cat log --oneline --decorate -n 20 origin/main -- src/ docs/")
	buf := heapBytes(512)
	ptrs := heapPtrs(len(args) + 1)
	off := 0
	for i, a := range args {
		ptrs[i] = addrOf(buf[off:])
		off += copy(buf[off:], a) + 1
	}
	arr := ptrsAddr(ptrs)
	pid := os.Getpid()
	for b.Loop() {
		argv, err := ReadArgv(pid, arr, 256, 1<<17)
		if err != nil || len(argv) != len(args) {
			b.Fatal(argv, err)
		}
	}
	runtime.KeepAlive(buf)
	runtime.KeepAlive(ptrs)
}

// ReadPointerArray reads a NULL-terminated array of pointers (argv, envp).
// More than maxEntries non-NULL entries is E2BIG, never a truncation.
// A NULL array is EFAULT; callers wanting execve's "NULL argv means empty"
// check for addr 0 themselves (ReadArgv does).
func ReadPointerArray(pid int, addr uint64, maxEntries int) ([]uint64, error) {
	r := memReader{pid: pid}
	ptrs, err := r.readPointerArray(addr, maxEntries)
	if err != nil {
		return nil, memError("pointer array", pid, addr, err)
	}
	return ptrs, nil
}

// ReadGather reads a payload spread over iovecs in order, stops at n
// bytes, and refuses (EFAULT) a payload that runs into an unmapped page.
func TestReadGatherSelf(t *testing.T) {
	a, b := heapBytes(5000), heapBytes(3)
	for i := range a {
		a[i] = byte('a' + i%26)
	}
	copy(b, "XYZ")
	pid := os.Getpid()
	iov := []Iovec{{addrOf(a), uint64(len(a))}, {0, 0}, {addrOf(b), 3}}
	got, err := ReadGather(pid, iov, 5003)
	if err != nil || string(got[:5000]) != string(a) || string(got[5000:]) != "XYZ" {
		t.Fatalf("ReadGather = %d bytes, %v", len(got), err)
	}
	if got, err := ReadGather(pid, iov, 10); err != nil || string(got) != string(a[:10]) {
		t.Errorf("first 10 bytes: %q %v", got, err)
	}
	if _, err := ReadGather(pid, iov, 6000); err == nil {
		t.Error("more bytes than the iovecs hold were read")
	}
	page, guard := guardedPage(t)
	bad := []Iovec{{addrOf(page) + uint64(len(page)) - 4, 8}}
	if _, err := ReadGather(pid, bad, 8); !errors.Is(err, unix.EFAULT) {
		t.Errorf("into the guard page: %v, want EFAULT", err)
	}
	if _, err := ReadGather(pid, []Iovec{{guard, 1}}, 1); !errors.Is(err, unix.EFAULT) {
		t.Errorf("an unmapped page: %v, want EFAULT", err)
	}
	// More iovecs than one process_vm_readv call takes.
	many := make([]Iovec, 2*iovMax+3)
	for i := range many {
		many[i] = Iovec{addrOf(b), 1}
	}
	if got, err := ReadGather(pid, many, len(many)); err != nil || len(got) != len(many) || got[len(got)-1] != 'X' {
		t.Errorf("%d iovecs: %d bytes, %v", len(many), len(got), err)
	}
}

func TestReadIovecsAndWriteUint32Self(t *testing.T) {
	buf := heapBytes(32)
	pid := os.Getpid()
	if err := WriteUint32(pid, addrOf(buf)+4, 0xdeadbeef); err != nil {
		t.Fatal(err)
	}
	if buf[4] != 0xef || buf[7] != 0xde || buf[3] != 0 || buf[8] != 0 {
		t.Errorf("WriteUint32 wrote % x", buf[:12])
	}
	_, guard := guardedPage(t)
	if err := WriteUint32(pid, guard, 1); !errors.Is(err, unix.EFAULT) {
		t.Errorf("write to an unmapped page: %v", err)
	}
	iovs := heapBytes(32)
	copy(iovs, []byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0})
	v, err := ReadIovecs(pid, addrOf(iovs), 2)
	if err != nil || len(v) != 2 || v[0] != (Iovec{1, 2}) || v[1] != (Iovec{3, 4}) {
		t.Errorf("ReadIovecs = %v %v", v, err)
	}
}

// TestExecArgsSelf: an exec's path and argv read through one reader give
// exactly what ReadString and ReadArgv give, errors included and each
// argument's own, with one process_vm_readv for both first pages where
// the two read separately make two or more.
func TestExecArgsSelf(t *testing.T) {
	pid := os.Getpid()
	ps := memPageSize
	area := heapBytes(4 * ps)
	// The path on one page, the argv array on another, its strings on the
	// path's page: one read for all of it.
	pathAddr := addrOf(area[ps+8:])
	copy(area[ps+8:], "/usr/bin/true\x00")
	copy(area[ps+100:], "true\x00")
	copy(area[ps+200:], "--version\x00")
	ptrs := heapPtrs(3)
	ptrs[0], ptrs[1] = addrOf(area[ps+100:]), addrOf(area[ps+200:])
	if pathAddr&^uint64(ps-1) == ptrsAddr(ptrs)&^uint64(ps-1) {
		t.Skip("the argv array landed on the path's page")
	}
	before := memReads.Load()
	e := NewExecArgs(pid, pathAddr, ptrsAddr(ptrs))
	path, err := e.Path(PathMax)
	if err != nil || path != "/usr/bin/true" {
		t.Fatalf("Path = %q, %v", path, err)
	}
	argv, err := e.Argv(16, 1024)
	if err != nil || fmt.Sprint(argv) != "[true --version]" {
		t.Fatalf("Argv = %q, %v", argv, err)
	}
	if n := memReads.Load() - before; n != 1 {
		t.Errorf("%d reads for the path and argv, want 1", n)
	}
	before = memReads.Load()
	if _, err := ReadString(pid, pathAddr, PathMax); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadArgv(pid, ptrsAddr(ptrs), 16, 1024); err != nil {
		t.Fatal(err)
	}
	if n := memReads.Load() - before; n < 2 {
		t.Errorf("read apart they took %d reads: the comparison shows nothing", n)
	}

	// Bounds and errors, as ReadString and ReadArgv answer them.
	if _, err := NewExecArgs(pid, pathAddr, ptrsAddr(ptrs)).Path(5); !errors.Is(err, unix.ENAMETOOLONG) {
		t.Errorf("path over max: %v, want ENAMETOOLONG", err)
	}
	if _, err := NewExecArgs(pid, pathAddr, ptrsAddr(ptrs)).Argv(1, 1024); !errors.Is(err, unix.E2BIG) {
		t.Errorf("too many args: %v, want E2BIG", err)
	}
	page, guard := guardedPage(t)
	bad := placeAtEnd(page, "/no/terminator")
	e = NewExecArgs(pid, bad, ptrsAddr(ptrs))
	if _, err := e.Path(PathMax); !errors.Is(err, unix.EFAULT) {
		t.Errorf("path into a guard page: %v, want EFAULT", err)
	}
	if argv, err := e.Argv(16, 1024); err != nil || len(argv) != 2 {
		t.Errorf("argv after a bad path: %q, %v", argv, err)
	}
	// The argv array itself unreadable: the path is still read, the
	// unreadable page kept by no one.
	e = NewExecArgs(pid, pathAddr, guard)
	if p, err := e.Path(PathMax); err != nil || p != "/usr/bin/true" {
		t.Errorf("path beside a bad argv: %q, %v", p, err)
	}
	if _, err := e.Argv(16, 1024); !errors.Is(err, unix.EFAULT) {
		t.Errorf("argv on a guard page: %v, want EFAULT", err)
	}
	// The first page unreadable and the second good: nothing is kept
	// from the failed call, each read meets its own answer.
	e = NewExecArgs(pid, guard, ptrsAddr(ptrs))
	if _, err := e.Path(PathMax); !errors.Is(err, unix.EFAULT) {
		t.Errorf("path on a guard page: %v, want EFAULT", err)
	}
	if argv, err := e.Argv(16, 1024); err != nil || len(argv) != 2 {
		t.Errorf("argv after a path on a guard page: %q, %v", argv, err)
	}
	e = NewExecArgs(pid, 0, 0)
	if _, err := e.Path(PathMax); !errors.Is(err, unix.EFAULT) {
		t.Errorf("NULL path: %v, want EFAULT", err)
	}
	if argv, err := e.Argv(16, 1024); err != nil || len(argv) != 0 {
		t.Errorf("NULL argv: %q, %v", argv, err)
	}
	runtime.KeepAlive(area)
	runtime.KeepAlive(ptrs)
}

// TestExecArgsEnvKept: EnvKept gives the entries of Env that keep
// accepts, in order — an entry across a page boundary among them — and
// fails exactly where Env fails: too many entries, too many bytes, an
// unreadable entry (even one keep would drop).
func TestExecArgsEnvKept(t *testing.T) {
	pid := os.Getpid()
	ps := memPageSize
	area := heapBytes(3 * ps)
	entries := []struct {
		off int
		s   string
	}{{8, "PATH=/usr/bin"}, {100, "LD_PRELOAD=/x.so"}, {200, "HOME=/h"}, {ps - 6, "GCONV_PATH=/g"}, {ps + 300, "LANG=C"}}
	ptrs := heapPtrs(len(entries) + 1)
	for i, e := range entries {
		copy(area[e.off:], e.s+"\x00")
		ptrs[i] = addrOf(area[e.off:])
	}
	keep := func(b []byte) bool { return len(b) > 0 && (b[0] == 'L' || b[0] == 'G') }
	all, err := NewExecArgs(pid, 0, 0).Env(ptrsAddr(ptrs), 16, 1024)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range all {
		if keep([]byte(e)) {
			want = append(want, e)
		}
	}
	got, err := NewExecArgs(pid, 0, 0).EnvKept(ptrsAddr(ptrs), 16, 1024, keep)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) || len(got) != 3 {
		t.Fatalf("EnvKept = %q, %v; Env filtered = %q", got, err, want)
	}
	if got, err := NewExecArgs(pid, 0, 0).EnvKept(0, 16, 1024, keep); err != nil || got == nil || len(got) != 0 {
		t.Errorf("NULL envp: %q, %v, want empty", got, err)
	}
	for _, c := range []struct {
		name              string
		maxArgs, maxBytes int
		errno             unix.Errno
	}{{"too many entries", 4, 1024, unix.E2BIG}, {"too many bytes", 16, 40, unix.E2BIG}} {
		_, errAll := NewExecArgs(pid, 0, 0).Env(ptrsAddr(ptrs), c.maxArgs, c.maxBytes)
		_, errKept := NewExecArgs(pid, 0, 0).EnvKept(ptrsAddr(ptrs), c.maxArgs, c.maxBytes, keep)
		if !errors.Is(errKept, c.errno) || errAll == nil || errKept.Error() != errAll.Error() {
			t.Errorf("%s: EnvKept %v, Env %v", c.name, errKept, errAll)
		}
	}
	// An entry keep would drop, unreadable (it runs into a guard page).
	page, _ := guardedPage(t)
	ptrs[2] = placeAtEnd(page, "HOME=/no/terminator")
	_, errAll := NewExecArgs(pid, 0, 0).Env(ptrsAddr(ptrs), 16, 1024)
	_, errKept := NewExecArgs(pid, 0, 0).EnvKept(ptrsAddr(ptrs), 16, 1024, keep)
	if !errors.Is(errKept, unix.EFAULT) || errAll == nil || errKept.Error() != errAll.Error() {
		t.Errorf("unreadable entry: EnvKept %v, Env %v", errKept, errAll)
	}
}

// BenchmarkExecEnv: an exec's environment of 40 entries (1.6 kB, as a
// shell's under this VM's session) read whole (Env) and keeping only
// what may be a loader entry (EnvKept), each through a fresh reader as
// an exec's decode does.
func BenchmarkExecEnv(b *testing.B) {
	buf := heapBytes(4096)
	ptrs := heapPtrs(41)
	off := 0
	for i := range 40 {
		e := fmt.Sprintf("VARIABLE_%02d=/some/value/of/a/typical/length/%d", i, i)
		if i == 20 {
			e = "LD_LIBRARY_PATH=/opt/lib"
		}
		ptrs[i] = addrOf(buf[off:])
		off += copy(buf[off:], e) + 1
	}
	arr := ptrsAddr(ptrs)
	pid := os.Getpid()
	keep := func(e []byte) bool { return len(e) >= 3 && (e[0] == 'L' || e[0] == 'G') }
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if env, err := NewExecArgs(pid, 0, 0).Env(arr, 256, 1<<17); err != nil || len(env) != 40 {
				b.Fatal(env, err)
			}
		}
	})
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if env, err := NewExecArgs(pid, 0, 0).EnvKept(arr, 256, 1<<17, keep); err != nil || len(env) != 1 {
				b.Fatal(env, err)
			}
		}
	})
	runtime.KeepAlive(buf)
	runtime.KeepAlive(ptrs)
}
