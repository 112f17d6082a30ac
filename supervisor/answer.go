package supervisor

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// This file and the calls' perform methods (each beside its call:
// open.go, names.go, meta.go, ...) are where a notification is answered. An allowed call is performed by the
// supervisor on exactly the paths that were resolved and checked (pinned
// by fds), never continued: a continued call would make the kernel
// re-read pointer arguments a second thread may have changed since the
// check. Seven kinds of call are continued, and none of them on a decision
// that read memory:
//   - execve/execveat, which cannot be emulated: continued, then verified
//     (execverify.go);
//   - open/openat with O_PATH in the flags *register* (decodeOpen): the
//     kernel cannot install an O_PATH file with ADDFD (it uses fget(),
//     which refuses them), and an O_PATH fd grants no access: every later
//     use of it — as a dirfd, by fchdir, by execveat or linkat with
//     AT_EMPTY_PATH, by a reopen through /proc/self/fd — is itself
//     resolved and checked. The answer (allow) depends on no pointer.
//     openat2 keeps its flags in memory that the kernel reads again after
//     a continue, so an O_PATH there could be flipped to O_RDWR: it is
//     refused with ENOSYS (decodeOpenat2), and callers fall back to
//     openat;
//   - arch_prctl(ARCH_SET_FS), only a stop for exec verification
//     (decodeExecStop);
//   - unshare(CLONE_NEWNS), chdir, fchdir and umask, which BPF allowed
//     before they were watched; they are notified only so the resolution
//     cache forgets the thread's root, cwd or umask (decodeUnshare,
//     decodeAnnounced). Nothing is read or judged;
//   - recvfrom asking for the sender's address, notified only so the
//     supervisor can look at the datagram it will receive (a DNS answer
//     teaches a name, dns.go). Nothing is read from memory or judged;
//   - the calls on other processes (prlimit64, setpriority, sched_*, ...;
//     process.go), decided on registers (the pid, the which, whether a
//     new limit is given) and /proc (the tree, the caller's
//     capabilities), never on the memory a pointer names: a new rlimit
//     the kernel reads after the continue changes nothing decided.
// The first six decode to `continued`, which handle (loop.go) continues
// before anything is judged or logged; the process calls are decided
// and recorded, then continued by their perform.

// answer completes a performed call: 0, or the errno of err.
func (s *supervisor) answer(id uint64, err error) {
	if err != nil {
		s.respondErr(id, errnoOf(err))
		return
	}
	s.respondVal(id, 0)
}

func (s *supervisor) respondErr(id uint64, errno unix.Errno) {
	_ = s.l.RespondError(id, errno)
}

func (s *supervisor) respondVal(id uint64, v int64) {
	_ = s.l.RespondValue(id, v)
}

// fail answers a notification the decoder refused, the one place where
// that is decided. When the kernel itself would have failed the call (a
// bad pointer, a missing directory), it fails the same way, silently.
// Otherwise permwrap could not read or resolve what it must judge: the
// call is refused, and the person and the review log are told why.
func (s *supervisor) fail(n *notify.Notif, row *sysRow, err error) {
	var r *refusal
	// A target that vanished meanwhile (its thread, its memory) is
	// nobody's concern: checked before the answer, which ends the id.
	if errors.As(err, &r) && r.kernel || s.l.IDValid(n.ID) != nil {
		s.respondErr(n.ID, errnoOf(err))
		return
	}
	s.respondErr(n.ID, errnoOf(err))
	name := fmt.Sprintf("syscall %d", n.Nr)
	if row != nil {
		name = row.name
	}
	reason := "permwrap could not decide this request: " + err.Error()
	v := verdict{access: name}
	if r != nil {
		v.value = r.path
	}
	d := authority.Denied(authority.ByError{Reason: "undecodable request"}, reason)
	var id authority.RequestID
	if s.cfg.Log != nil {
		req := authority.NewRequest(engine.Check{Surface: engine.SurfacePath, Value: v.value})
		req.Access = name
		req.Process = processInfo(nil, int(n.Pid), true, "")
		req.Node = s.nodeLabel(int(n.Pid))
		s.cfg.Log.Decided(req, false, d)
		id = req.ID
	}
	s.notices.Line(newDenial(v, d, id, "").forPerson())
}

// killRacer ends the process of thread tid, whose call (id) was caught
// racing the check (what it did is not what was judged), tells the person
// and the log, and fails the call. The process is held by a pidfd taken
// while the call still waits, so a pid reused since is never the one
// killed.
func (s *supervisor) killRacer(id uint64, tid int, why string) {
	tgid := s.tgidOf(tid)
	proc, err := pin.OpenProcess(tgid)
	if err == nil {
		if s.l.IDValid(id) == nil {
			err = proc.Kill()
		}
		proc.Close()
	}
	s.respondErr(id, unix.EACCES)
	msg := "permwrap: killed process " + strconv.Itoa(tgid) + ": " + why
	if err != nil {
		msg += "; killing it failed: " + err.Error()
	}
	s.notices.Line(msg)
	if s.cfg.Log != nil {
		req := authority.NewRequest(engine.Check{Surface: engine.SurfacePath, Value: why})
		req.Process = authority.Process{PID: tgid}
		req.Node = s.nodeLabel(tgid)
		s.cfg.Log.Decided(req, false, authority.Denied(authority.ByError{Reason: "a call raced its check"}, why))
	}
}

// installFD gives the target the file the supervisor opened for it and
// completes its open, in one step (ADDFD with SEND), which wakes the
// target once. A program that writes a script, closes it and runs it at
// once must not find the supervisor still holding its copy of the file
// open for writing (ETXTBSY): the install of a writable file holds
// writeCopies shared until that copy is closed, and every exec takes
// writeCopies whole before it is continued (continueExec), so an exec the
// tree makes after an open it was answered waits, if it must, for the
// close. (The install used to be split — ADDFD, close, then the answer —
// which woke the target twice: on this VM kind, waking the target's vCPU
// for the first step was most of a creating open's cost inside a `git
// clone` on ext4, docs/kernel.md "Real workloads".) A read-only copy held
// a moment longer blocks nothing.
//
// q is the installing goroutine's Quiet when it is the receiving loop's
// (request.quiet), else nil.
func (s *supervisor) installFD(id uint64, f fdCloser, cloexec, writable bool, q *notify.Quiet) {
	if writable {
		s.writeCopies.RLock()
		defer s.writeCopies.RUnlock()
	}
	_, err := s.l.AddFDQuiet(id, int(f.Fd()), cloexec, q)
	f.Close()
	if err != nil && !errors.Is(err, notify.ErrGone) {
		// The target is still waiting: fail its call rather than leave
		// it hanging. (ErrGone: it is gone or was interrupted.)
		s.respondErr(id, errnoOf(err))
	}
}

// fdCloser is a descriptor installFD hands over and closes: a file pin
// opened (*pin.File), that file with the pin it was reopened from
// (pin.Pair), or a socket (*os.File).
type fdCloser interface {
	Fd() uintptr
	Close() error
}
