package notify

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify/pin"
)

// ErrNotTold means the target's fd was not a pipe or a regular file, so
// nothing was written: a terminal belongs to the person, not to the agent.
var ErrNotTold = errors.New("notify: fd is not a pipe or a regular file")

// TellFd writes line to what the target's fd (usually 2) refers to when
// that is a pipe or a regular file — a tool subprocess whose output the
// agent reads — never to a terminal, and never blocking: a full pipe
// drops the line rather than stall the supervisor.
//
// skip names a file permwrap itself writes to (its stderr): when the
// target's fd is that same file, the person already saw the notice there
// and nothing is written.
func TellFd(tid, fd int, line []byte, skip *os.File) error {
	f, err := pin.GetFd(tid, fd)
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
	default:
		return ErrNotTold
	}
	// A pipe has no offset; a new non-blocking description of it cannot
	// stall on a full pipe and leaves the target's flags alone.
	w, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(w)
	_, err = unix.Write(w, line)
	return err
}
