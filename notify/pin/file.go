package pin

import (
	"io"
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// File is a descriptor the supervisor holds for a target: the O_PATH pin
// of a resolved object or directory (Resolved.Object, Resolved.Dir), or a
// file opened for the target to be installed in it (Open). It is a bare
// descriptor, not an *os.File: os.NewFile costs an fcntl (and for an
// O_NONBLOCK file an epoll registration) and a finalizer, and an emulated
// open makes two of them, for descriptors that only ever go to a syscall.
// The owner closes it; nothing closes it behind the owner's back.
//
// As with an *os.File, Close may race with Fd in another goroutine (a
// FIFO's unblocker reads the pin its opener closes): the descriptor is
// read and cleared atomically, and a closed File's Fd is ^uintptr(0).
type File struct {
	fd   atomic.Int64
	name string
}

// newFile wraps fd, which the File then owns.
func newFile(fd int, name string) *File {
	f := &File{name: name}
	f.fd.Store(int64(fd))
	return f
}

// Fd is the descriptor, valid until Close; ^uintptr(0) for a nil or
// closed File (as os.File.Fd).
func (f *File) Fd() uintptr {
	if f == nil {
		return ^uintptr(0)
	}
	fd := f.fd.Load()
	if fd < 0 {
		return ^uintptr(0)
	}
	return uintptr(fd)
}

// Name is the name the File was opened by, for messages.
func (f *File) Name() string { return f.name }

// Close closes the descriptor once; closing again is os.ErrClosed.
func (f *File) Close() error { return closeTaken(f.take(), f) }

// closeTaken closes fd, which take cleared from f.
func closeTaken(fd int64, f *File) error {
	if fd < 0 {
		return os.ErrClosed
	}
	if err := unix.Close(int(fd)); err != nil {
		return &os.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}

// selfFd is the supervisor's /proc/self/fd link of f.
func selfFd(f *File) string { return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())) }

// Stat is fstat of the descriptor.
func (f *File) Stat(st *unix.Stat_t) error {
	for {
		err := unix.Fstat(int(f.Fd()), st)
		if err != unix.EINTR {
			return err
		}
	}
}

// Read reads from the descriptor (io.Reader: 0 bytes at the end is
// io.EOF).
func (f *File) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(int(f.Fd()), b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, &os.PathError{Op: "read", Path: f.name, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write writes all of b to the descriptor.
func (f *File) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := unix.Write(int(f.Fd()), b[done:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, &os.PathError{Op: "write", Path: f.name, Err: err}
		}
		done += n
	}
	return done, nil
}

// Pair is two Files handed over together, to be closed together: Fd is
// the first's, and Close closes both. An emulated open ends with two
// descriptors to close, the file installed in the target and the O_PATH
// pin it was reopened from; the reopen takes the lowest free number, so
// they are usually adjacent, and one close_range then closes both: a
// syscall fewer per open. Only the two numbers are ever in the range.
type Pair struct{ First, Second *File }

// Fd is the first File's descriptor.
func (p Pair) Fd() uintptr { return p.First.Fd() }

// Close closes both Files (each once, as File.Close); the error is the
// first one met.
func (p Pair) Close() error {
	a, b := p.First.take(), p.Second.take()
	if a >= 0 && b >= 0 && (a-b == 1 || b-a == 1) {
		lo := min(a, b)
		if unix.CloseRange(uint(lo), uint(lo+1), 0) == nil {
			return nil
		}
		// Not closed (close_range refused: nothing was): one by one.
	}
	err := closeTaken(a, p.First)
	if e := closeTaken(b, p.Second); err == nil {
		err = e
	}
	return err
}

// take clears the descriptor and returns it (-1: nil or closed). The
// caller closes it.
func (f *File) take() int64 {
	if f == nil {
		return -1
	}
	return f.fd.Swap(-1)
}
