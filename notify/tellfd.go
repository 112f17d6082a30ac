package notify

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/procfs"
	"github.com/permwrap/permwrap/notify/pin"
)

// ErrNotTold means the target's fd is not something a program reads
// back (a pipe, a regular file, a local socket), so nothing was written:
// a terminal belongs to the person, not to the agent.
var ErrNotTold = errors.New("notify: fd is not a pipe, a regular file or a local socket")

// TellFd writes line to what the target's fd (usually 2) refers to when
// that is something the program that started the target reads back — a
// pipe or FIFO, a regular file, or a local (AF_UNIX) socket, which is
// what Node/libuv gives its children — and never to a terminal. It never
// blocks: when the pipe or socket is full the line is dropped rather than
// stall the supervisor.
//
// skip names a file permwrap itself writes to (its stderr): when the
// target's fd is that same file, the person already saw the notice there
// and nothing is written.
func TellFd(tid, fd int, line []byte, skip *os.File) error {
	f, st, err := toldFd(tid, fd, skip)
	if err != nil {
		return err
	}
	defer f.Close()
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		// Through the target's own open file description (GetFd shares
		// it): the line lands at the target's offset and moves it, so the
		// program's next write comes after it instead of over it. A
		// regular file never blocks.
		_, err := unix.Write(int(f.Fd()), line)
		return err
	case unix.S_IFIFO:
		return tellPipe(f, line)
	}
	return tellSocket(f, line)
}

// toldFd takes the target's fd when it is something TellFd writes to: a
// regular file, a pipe or FIFO, or a local stream, seqpacket or datagram
// socket — and not skip (permwrap's own stderr). Otherwise ErrNotTold.
func toldFd(tid, fd int, skip *os.File) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	f, err := pin.GetFd(tid, fd)
	if err != nil {
		return nil, st, err
	}
	err = func() error {
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return err
		}
		if skip != nil {
			var own unix.Stat_t
			if unix.Fstat(int(skip.Fd()), &own) == nil && own.Dev == st.Dev && own.Ino == st.Ino {
				return ErrNotTold
			}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG, unix.S_IFIFO:
			return nil
		case unix.S_IFSOCK:
			return localSocket(int(f.Fd()))
		}
		return ErrNotTold
	}()
	if err != nil {
		f.Close()
		return nil, st, err
	}
	return f, st, nil
}

// Stderr is what a process's stderr is to the agent that reads it.
type Stderr uint8

const (
	// StderrNone: nothing TellFd writes to (a terminal, /dev/null, a
	// network socket, permwrap's own stderr), or it could not be looked at.
	StderrNone Stderr = iota
	// StderrInherited: a stream the process shares with its parent. The
	// parent lives on after a failed exec in the child and the stream's
	// reader with it (a shell reports the error on that same stderr).
	StderrInherited
	// StderrOwn: a stream its parent does not have: one the spawner made
	// for this child. A spawner whose child's exec fails reports the
	// error it got back and may never read that stream again (Node's
	// child_process emits 'error' before the stream's data, and pi then
	// crashes on the data; Python, Go and Rust close it unread).
	StderrOwn
)

// StderrOf says what tid's stderr is (see Stderr). skip is permwrap's own
// stderr, which counts as none.
func StderrOf(tid int, skip *os.File) Stderr {
	f, st, err := toldFd(tid, 2, skip)
	if err != nil {
		return StderrNone
	}
	f.Close()
	ppid, err := parentOf(tid)
	if err != nil {
		return StderrOwn
	}
	if parent, err := fdIdentity(ppid, 2); err == nil && parent == (fileID{st.Dev, st.Ino}) {
		return StderrInherited
	}
	return StderrOwn
}

// tellPipe writes to a pipe or FIFO. A pipe has no offset; a new
// non-blocking description of it cannot stall on a full pipe and leaves
// the target's flags alone. A line of at most PIPE_BUF bytes goes in
// whole or not at all.
func tellPipe(f *os.File, line []byte) error {
	w, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(w)
	_, err = unix.Write(w, line)
	return err
}

// tellSocket sends on a connected local socket: a socketpair from
// libuv (Node), Python's asyncio or socket.socketpair, or any other
// AF_UNIX stream, seqpacket or connected datagram socket. Network
// sockets are left alone: their reader is not on this machine's side of
// the sandbox, and a notice is no business of a remote peer.
//
// The send goes through the target's own description with MSG_DONTWAIT
// (never blocks, the target's O_NONBLOCK flag untouched) and
// MSG_NOSIGNAL (a closed peer raises no SIGPIPE in the supervisor). A
// unix socket queues a short line as one buffer: it is sent whole or
// refused with EAGAIN, never cut.
func tellSocket(f *os.File, line []byte) error {
	_, err := unix.SendmsgN(int(f.Fd()), line, nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
	return err
}

// localSocket is nil for a local (AF_UNIX) stream, seqpacket or datagram
// socket, ErrNotTold for any other.
func localSocket(fd int) error {
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return err
	}
	if domain != unix.AF_UNIX {
		return ErrNotTold
	}
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return err
	}
	if typ != unix.SOCK_STREAM && typ != unix.SOCK_SEQPACKET && typ != unix.SOCK_DGRAM {
		return ErrNotTold
	}
	return nil
}

// TellSpawner writes line to the stderr of the process that started tid
// (its parent), for an exec refused in a child that has not run anything
// yet. Python's subprocess, Go's os/exec and Rust's Command report a
// failed exec as an error and close the child's pipes unread, so a line
// on the child's stderr is lost; the spawner's own stderr is often what
// the agent reads (a tool script). Nothing is written when that is the
// same file as the child's stderr (the line is there already), a
// terminal, or skip; the rules of TellFd apply.
func TellSpawner(tid int, line []byte, skip *os.File) error {
	ppid, err := parentOf(tid)
	if err != nil {
		return err
	}
	if ppid <= 1 {
		return ErrNotTold
	}
	child, err := fdIdentity(tid, 2)
	if err != nil {
		return err
	}
	parent, err := fdIdentity(ppid, 2)
	if err != nil {
		return err
	}
	if child == parent {
		return ErrNotTold
	}
	return TellFd(ppid, 2, line, skip)
}

type fileID struct{ dev, ino uint64 }

func fdIdentity(tid, fd int) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(tid)+"/fd/"+strconv.Itoa(fd), &st); err != nil {
		return fileID{}, err
	}
	return fileID{st.Dev, st.Ino}, nil
}

// parentOf reads the parent pid from /proc/TID/stat.
func parentOf(tid int) (int, error) {
	s, err := procfs.ReadStat(tid)
	if err != nil {
		return 0, err
	}
	return s.PPID, nil
}
