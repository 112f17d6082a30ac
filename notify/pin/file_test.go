package pin

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// fileAt is a File of /dev/null at descriptor n (dup3 onto it), so the
// test chooses which numbers are adjacent.
func fileAt(t *testing.T, n int) *File {
	t.Helper()
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if isOpen(n) {
		t.Fatalf("descriptor %d is in use", n)
	}
	if err := unix.Dup3(fd, n, unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(n) }) // EBADF once the test closed it
	return newFile(n, "/dev/null")
}

func isOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}

// TestPairClose: a Pair closes both of its Files, whether their numbers
// are adjacent (one close_range) or not, and nothing else — not the
// descriptor between two that are not adjacent.
func TestPairClose(t *testing.T) {
	a, b, c := fileAt(t, 900), fileAt(t, 901), fileAt(t, 902)

	// Not adjacent: the one between stays open.
	if err := (Pair{First: a, Second: c}).Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if isOpen(900) || !isOpen(901) || isOpen(902) {
		t.Fatalf("after closing 900 and 902: open %v %v %v, want false true false", isOpen(900), isOpen(901), isOpen(902))
	}
	if a.Fd() != ^uintptr(0) || c.Fd() != ^uintptr(0) {
		t.Fatal("a closed File still has a descriptor")
	}

	// Adjacent, in either order: both closed, their neighbours not.
	d, e, g := fileAt(t, 910), fileAt(t, 911), fileAt(t, 912)
	fileAt(t, 913)
	if err := (Pair{First: g, Second: e}).Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !isOpen(910) || isOpen(911) || isOpen(912) || !isOpen(913) || !isOpen(901) {
		t.Fatalf("after closing 912 and 911: open %v %v %v %v (901 %v), want true false false true (true)", isOpen(910), isOpen(911), isOpen(912), isOpen(913), isOpen(901))
	}

	// Closed once: a second Close, and a Pair with one File already
	// closed, report os.ErrClosed and still close the other.
	if err := (Pair{First: g, Second: e}).Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("second Close: %v, want os.ErrClosed", err)
	}
	if err := (Pair{First: e, Second: d}).Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Close with a closed File: %v, want os.ErrClosed", err)
	}
	if isOpen(910) {
		t.Fatal("910 still open")
	}
	if err := (Pair{First: b}).Close(); !errors.Is(err, os.ErrClosed) || isOpen(901) {
		t.Fatalf("Pair with a nil File: %v, 901 open %v", err, isOpen(901))
	}
}
