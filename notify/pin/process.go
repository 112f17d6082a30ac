package pin

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Process is a process held by a Pidfd, so that what is read about it by
// pid can be checked to be about it (a pid is reused once its process is
// reaped; a live process keeps its pid), and so that a signal reaches it
// and never a process that got its pid later (Kill, from Pidfd). It adds
// to the Pidfd the pid and the reading of /proc/PID (Running), and an
// Exited that tells an error apart from an exit.
type Process struct {
	*Pidfd
	pid  int
	base string // /proc/PID
}

// ErrExited reports that a Process has exited: whatever was read about
// its pid may be about another process since.
var ErrExited = errors.New("pin: the process has exited")

// OpenProcess holds process pid (a thread-group id). An error is ESRCH
// when there is no such process, or why it could not be held (EMFILE...).
func OpenProcess(pid int) (*Process, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pin: pidfd_open(%d): %w", pid, err)
	}
	return &Process{Pidfd: &Pidfd{fd: fd}, pid: pid, base: "/proc/" + strconv.Itoa(pid)}, nil
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.pid }

// Close releases the pidfd.
func (p *Process) Close() error {
	if p == nil {
		return nil
	}
	return p.Pidfd.Close()
}

// Exited reports whether the process has exited (a zombie included). An
// error means it could not be told. (Pidfd.Exited, which it hides, counts
// an error as an exit.)
func (p *Process) Exited() (bool, error) {
	closed, n, revents, err := p.poll()
	if closed {
		return false, nil // as poll(2) of fd -1: nothing to report
	}
	if err != nil {
		return false, fmt.Errorf("pin: poll pidfd of %d: %w", p.pid, err)
	}
	return n > 0 && revents&(unix.POLLIN|unix.POLLHUP) != 0, nil
}

// Running is what a process runs now, as /proc shows it: its executable's
// identity and its command line (argv as NUL-terminated strings).
type Running struct {
	Exe     FileID
	Cmdline []byte
}

// maxCmdline bounds the command line read: the kernel's own limit on
// argv and the environment together is a quarter of the stack limit,
// and more than this is refused at exec (decode.go, maxArgvBytes).
const maxCmdline = 8 << 20

// Running reads /proc/PID/exe and /proc/PID/cmdline as one consistent
// pair. The command line is read with one read() into a buffer large
// enough for all of it, which the kernel serves from one address space
// (several reads could straddle an exec and splice two argvs together);
// exe is read before and after it, and the pair is retried when exe
// changed in between. ok is false when it kept changing (look again
// later). err is ErrExited once the process has exited, and otherwise
// means /proc could not be read: never a reason to assume anything.
func (p *Process) Running() (run Running, ok bool, err error) {
	defer func() {
		// What was read by pid is about this process only if it was still
		// alive afterwards.
		if gone, xerr := p.Exited(); xerr == nil && gone {
			run, ok, err = Running{}, false, ErrExited
		} else if xerr != nil && err == nil {
			run, ok, err = Running{}, false, xerr
		}
	}()
	for try := 0; try <= 10; try++ {
		e1, err := exeID(p.base)
		if errors.Is(err, unix.ENOENT) && p.present() {
			// The process is there but has no memory map: its leader has
			// exited while other threads live (pthread_exit), or a thread
			// that is not the leader is exec'ing and the old leader waits
			// in de_thread to hand over its pid. Nothing runs an image
			// that can be read now; it is looked at again (not ok).
			return Running{}, false, nil
		}
		if err != nil {
			return Running{}, false, err
		}
		c, err := readCmdline(p.base)
		if err != nil {
			return Running{}, false, err
		}
		e2, err := exeID(p.base)
		if err != nil {
			return Running{}, false, err
		}
		if e1 == e2 {
			return Running{Exe: e1, Cmdline: c}, true, nil
		}
	}
	return Running{}, false, nil
}

// RunningHeld is Running for a process held still while it is read: one
// of its threads waits in a notification that the caller answers
// afterwards (an exec, whose old image this is). It reads exe once and
// does not check that the process lives, four syscalls where Running
// makes six: the answer succeeding is the proof of both. A thread that
// waits in a notification is alive until it is answered, so a process
// that exited meanwhile — whose pid another may have got — or exec'd
// meanwhile (another thread's exec kills every other thread first) has
// lost that notification, the answer fails, and the caller must then
// drop what it read. No memory map (a leader gone while other threads
// live) is an error, as every other failure to read.
func (p *Process) RunningHeld() (Running, error) {
	e, err := exeID(p.base)
	if err != nil {
		return Running{}, err
	}
	c, err := readCmdline(p.base)
	if err != nil {
		return Running{}, err
	}
	return Running{Exe: e, Cmdline: c}, nil
}

// cmdlineBufSize is readCmdline's first read size; longer command lines
// grow the buffer.
const cmdlineBufSize = 64 << 10

// cmdlineBufs holds readCmdline's first-size buffers (cmdlineBufSize+1
// bytes, the extra byte telling a full buffer from a longer file).
var cmdlineBufs = sync.Pool{New: func() any {
	b := make([]byte, cmdlineBufSize+1)
	return &b
}}

// readCmdline reads /proc/PID/cmdline in one read() (growing the buffer
// and reading again, from the start, only for a command line that fills
// it).
func readCmdline(base string) ([]byte, error) {
	fd, err := openPathRetry(base+"/cmdline", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("pin: open %s/cmdline: %w", base, err)
	}
	defer unix.Close(fd)
	for size := cmdlineBufSize; ; size *= 4 {
		var buf []byte
		if size == cmdlineBufSize {
			// The common size comes from a pool: a fresh 64 KiB buffer,
			// zeroed, per read was a fifth of the supervisor's CPU time
			// per spawn. Only buf[:n], just read, is used (copied out).
			pb := cmdlineBufs.Get().(*[]byte)
			defer cmdlineBufs.Put(pb)
			buf = *pb
		} else {
			buf = make([]byte, size+1)
		}
		var n int
		for {
			n, err = unix.Pread(fd, buf, 0)
			if err != unix.EINTR {
				break
			}
		}
		if err != nil {
			return nil, fmt.Errorf("pin: read %s/cmdline: %w", base, err)
		}
		if n <= size {
			return bytes.Clone(buf[:n]), nil
		}
		if size >= maxCmdline {
			return nil, fmt.Errorf("pin: %s/cmdline is over %d bytes: %w", base, maxCmdline, unix.E2BIG)
		}
	}
}

// present reports whether /proc/PID itself can be seen (a missing exe
// link then means no memory map, not no process).
func (p *Process) present() bool {
	var st unix.Stat_t
	return retry(func() error { return unix.Stat(p.base, &st) }) == nil
}

func exeID(base string) (FileID, error) {
	var st unix.Stat_t
	if err := retry(func() error { return unix.Stat(base+"/exe", &st) }); err != nil {
		return FileID{}, fmt.Errorf("pin: stat %s/exe: %w", base, err)
	}
	return FileID{st.Dev, st.Ino}, nil
}
