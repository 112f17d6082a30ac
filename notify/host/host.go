// Package host holds the system calls permwrap makes for itself rather
// than on a target's behalf: the launch and hand-off (pipes, the
// socketpair, exec), the watchdog's reaping and killing, and the terminal
// relay (sizes, modes, polling). It sits beside notify and notify/pin so
// that supervisor keeps no raw system call of its own (docs/architecture.md).
//
// Each function is the one system call its name says; none retries on
// EINTR unless it says so (callers keep their own loops).
package host

import (
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Read is read(2) on a raw fd.
func Read(fd int, b []byte) (int, error) { return unix.Read(fd, b) }

// Write is write(2) on a raw fd.
func Write(fd int, b []byte) (int, error) { return unix.Write(fd, b) }

// Close is close(2) on a raw fd.
func Close(fd int) error { return unix.Close(fd) }

// Open opens path with open(2), for the round-trip benchmark tool's
// emulated opens (internal/roundtrip), which are made as the supervisor.
func Open(path string, flags int, mode uint32) (int, error) { return unix.Open(path, flags, mode) }

// Exec replaces this process with path (execve(2)); it returns only on
// failure.
func Exec(path string, argv, env []string) error { return unix.Exec(path, argv, env) }

// DupCloexec duplicates f's descriptor with FD_CLOEXEC set.
func DupCloexec(f *os.File) (int, error) { return unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0) }

// Subreaper makes this process the reaper of its orphaned descendants
// (PR_SET_CHILD_SUBREAPER).
func Subreaper() error { return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// NoCoreDumps sets RLIMIT_CORE to 0, soft and hard, for this process and
// everything it starts.
func NoCoreDumps() error { return unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 0, Max: 0}) }

// SetDumpable marks this process dumpable (PR_SET_DUMPABLE 1), which is
// what lets the supervisor take its descriptors with pidfd_getfd.
func SetDumpable() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) }

// SeqpacketPair is a connected AF_UNIX SOCK_SEQPACKET pair, close-on-exec.
func SeqpacketPair() ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
}

// WakePipe is a pipe whose ends are close-on-exec and non-blocking.
func WakePipe(p *[2]int) error { return unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK) }

// Kill sends sig to pid.
func Kill(pid int, sig syscall.Signal) error { return unix.Kill(pid, sig) }

// Wait is wait4(2) for pid (-1: any child), with WNOHANG when nohang.
func Wait(pid int, nohang bool) (int, unix.WaitStatus, error) {
	var ws unix.WaitStatus
	opts := 0
	if nohang {
		opts = unix.WNOHANG
	}
	p, err := unix.Wait4(pid, &ws, opts, nil)
	return p, ws, err
}

// PidfdOpen opens a pidfd for pid.
func PidfdOpen(pid int) (int, error) { return unix.PidfdOpen(pid, 0) }

// PidfdKill sends SIGKILL through a pidfd.
func PidfdKill(fd int) error { return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) }

// PidfdAlive reports whether the process behind a pidfd has not been
// reaped (a zombie counts as alive: its pid is still its own).
func PidfdAlive(fd int) bool { return unix.PidfdSendSignal(fd, 0, nil, 0) == nil }

// Poll is poll(2).
func Poll(fds []unix.PollFd, timeout int) (int, error) { return unix.Poll(fds, timeout) }

// IsTerminal reports whether fd is a terminal (TCGETS succeeds).
func IsTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// Canonical reports whether the terminal fd is in canonical (line) mode.
func Canonical(fd int) (bool, error) {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return false, err
	}
	return t.Lflag&unix.ICANON != 0, nil
}

// Unread is how many bytes wait to be read on fd (TIOCINQ).
func Unread(fd int) (int, error) { return unix.IoctlGetInt(fd, unix.TIOCINQ) }

// WinSize is the terminal fd's window size.
func WinSize(fd int) (*unix.Winsize, error) { return unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ) }

// SetWinSize sets the terminal fd's window size.
func SetWinSize(fd int, ws *unix.Winsize) error { return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, ws) }

// ZeroCopy reports whether SO_ZEROCOPY is set on the socket f (false if
// it cannot be read).
func ZeroCopy(f *os.File) bool {
	v, err := unix.GetsockoptInt(int(f.Fd()), unix.SOL_SOCKET, unix.SO_ZEROCOPY)
	return err == nil && v != 0
}

// Stat is stat(2) on path.
func Stat(path string, st *unix.Stat_t) error { return unix.Stat(path, st) }

// Fstat is fstat(2) on f.
func Fstat(f *os.File, st *unix.Stat_t) error { return unix.Fstat(int(f.Fd()), st) }

// StageEnv is the environment of a helper stage of permwrap's own binary
// (the init stage, the nesting keeper and exec stage): this process's,
// with TERM=dumb. permwrap links bubbletea, whose package init asks the
// terminal for its colours (OSC 11 and a cursor report); in a stage that
// terminal is the command's, and the terminal's answer would arrive as
// the command's first keystrokes. termenv asks nothing of a dumb
// terminal. The command itself gets its real environment from the
// stage's spec.
func StageEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TERM=") {
			env = append(env, kv)
		}
	}
	return append(env, "TERM=dumb")
}
