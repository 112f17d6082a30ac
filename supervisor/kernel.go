package supervisor

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// Answering as the kernel would when nothing can change.
//
// A call the policy would ask about (or deny) may be one the kernel
// refuses anyway, or one that changes nothing: a mkdir of a directory
// that exists, an open of a file that does not, a write the file's own
// permissions refuse. Asking a person about it helps nobody (`mkdir -p`
// would ask for every existing ancestor, a read of a missing ~/.netrc
// would ask and then answer EACCES where the program expects ENOENT), and
// refusing it with permwrap's EACCES gives the program the wrong error.
// So such a call is answered with the kernel's own errno, without asking
// and without a denial line; the review log records it as "answered
// without asking" (authority.ByKernel).
//
// Nothing is revealed that the caller could not learn anyway: whether a
// name exists is visible to stat(2), and what the file's permissions
// allow to access(2), neither of which permwrap watches.
//
// The facts come from the decoder (Exists and the lstat of what was
// pinned) and, for permissions, from the kernel's own access check made
// with the target's credentials on the pinned objects (pin.Permitted,
// pin.ParentPermitted). They are gathered only when the policy would not
// simply allow the call: an allowed call is performed, and the kernel
// answers it itself. docs/policy.md lists every rule. Each call's
// kernelAnswer is beside its call (open.go, names.go, meta.go):
//   - the creating calls: EEXIST when the name is taken, else the
//     directory's permissions;
//   - the removing and renaming calls: ENOENT when there is nothing to
//     act on, else the directories' permissions (the sticky bit's rule is
//     left to the kernel: it can only refuse more);
//   - contents and metadata of a file: ENOENT when it is missing;
//     truncate needs write permission on it.

// kernelAnswer is the errno the kernel would give a call, and why it is
// certain; errno 0 means the call may change something.
type kernelAnswer struct {
	errno unix.Errno
	why   string
}

// settled is a call the kernel answers without looking at its arguments
// any further (utimensat with both times UTIME_OMIT returns 0 before it
// even resolves the path). It is answered straight from the decoder, like
// a continued call: nothing was resolved, so nothing is judged or logged.
type settled struct{ errno unix.Errno }

func (c settled) answerDirect(s *supervisor, n *notify.Notif) {
	if c.errno != 0 {
		s.respondErr(n.ID, c.errno)
		return
	}
	s.respondVal(n.ID, 0)
}

func isDir(r *pin.Resolved) bool {
	return r.Exists && r.Stat.Mode&unix.S_IFMT == unix.S_IFDIR
}

func isRegular(r *pin.Resolved) bool {
	return r.Exists && r.Stat.Mode&unix.S_IFMT == unix.S_IFREG
}

// permission turns a failed access check into the kernel's answer. Only
// the errnos a permission check gives count: anything else (a pinned fd
// that could not be used) says nothing about what the kernel would do.
func permission(err error, why string) kernelAnswer {
	var e unix.Errno
	if !errors.As(err, &e) {
		return kernelAnswer{}
	}
	switch e {
	case unix.EACCES:
		return kernelAnswer{e, why}
	case unix.EROFS:
		return kernelAnswer{e, "read-only file system"}
	case unix.EPERM:
		return kernelAnswer{e, "the file is immutable or append-only"}
	}
	return kernelAnswer{}
}

// parentRefuses: creating or removing a name needs write and search on
// its directory.
func parentRefuses(r *pin.Resolved) kernelAnswer {
	if r.Dir == nil {
		return kernelAnswer{}
	}
	return permission(pin.ParentPermitted(r), "the directory's permissions refuse it")
}

var (
	answerMissing = kernelAnswer{unix.ENOENT, "it does not exist"}
	answerExists  = kernelAnswer{unix.EEXIST, "it exists"}
)
