package notify

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
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
	f, err := GetFd(tid, fd)
	if err != nil {
		return err
	}
	defer f.Close()
	var st unix.Stat_t
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
	case unix.S_IFREG:
		// Through the target's own open file description (GetFd shares
		// it): the line lands at the target's offset and moves it, so the
		// program's next write comes after it instead of over it. A
		// regular file never blocks.
		_, err := unix.Write(int(f.Fd()), line)
		return err
	case unix.S_IFIFO:
		return tellPipe(f, line)
	case unix.S_IFSOCK:
		return tellSocket(f, line)
	}
	return ErrNotTold
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
	fd := int(f.Fd())
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
	_, err = unix.SendmsgN(fd, line, nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
	return err
}
