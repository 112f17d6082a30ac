package supervisor

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
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
// answers it itself. docs/policy.md lists every rule below.

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

func (c *openCall) kernelAnswer() kernelAnswer {
	r := c.path
	if c.openErr != nil {
		// The content check already opened it as the target would, and
		// the kernel refused (content.go).
		return kernelAnswer{errnoOf(c.openErr), "the kernel refused the open"}
	}
	if r.Kind != pin.KindPath {
		return kernelAnswer{}
	}
	tmpfile := c.flags&oTmpfileBit != 0
	creat := c.flags&unix.O_CREAT != 0 && !tmpfile
	switch {
	case tmpfile:
		// The path names the directory the unnamed file is made in.
		return permission(pin.Permitted(r, pin.MayWrite|pin.MayExec), "the directory's permissions refuse it")
	case !r.Exists && !creat:
		return answerMissing
	case !r.Exists:
		// O_CREAT of a missing file is a create: only the directory's
		// permissions can refuse it.
		return parentRefuses(r)
	case creat && c.flags&unix.O_EXCL != 0:
		return answerExists
	case isDir(r) && (creat || c.access&engine.AccessWrite != 0):
		return kernelAnswer{unix.EISDIR, "it is a directory"}
	}
	var mode uint32
	if c.flags&unix.O_ACCMODE != unix.O_WRONLY {
		mode |= pin.MayRead
	}
	if c.access&engine.AccessWrite != 0 {
		mode |= pin.MayWrite
	}
	return permission(pin.Permitted(r, mode), "the file's permissions refuse it")
}

// The creating calls: EEXIST when the name is taken, else the directory's
// permissions.

func (c *mkdirCall) kernelAnswer() kernelAnswer {
	if c.path.Exists {
		return answerExists
	}
	return parentRefuses(c.path)
}

func (c *mknodCall) kernelAnswer() kernelAnswer {
	if c.path.Exists {
		return answerExists
	}
	return parentRefuses(c.path)
}

func (c *symlinkCall) kernelAnswer() kernelAnswer {
	if c.at.Exists {
		return answerExists
	}
	return parentRefuses(c.at)
}

func (c *bindCall) kernelAnswer() kernelAnswer {
	if c.at == nil {
		return kernelAnswer{}
	}
	if c.at.Exists {
		return kernelAnswer{unix.EADDRINUSE, "the socket's name exists"}
	}
	return parentRefuses(c.at)
}

func (c *linkCall) kernelAnswer() kernelAnswer {
	switch {
	case !c.from.Exists:
		return answerMissing
	case c.to.Exists:
		return answerExists
	}
	if a := parentRefuses(c.to); a.errno != 0 {
		return a
	}
	if c.copyInstead {
		// A hard link of a file the policy does not let the sandbox
		// write (git clone of a repository outside the workspace links
		// its objects) would make that file writable at the new name.
		// Every program that links to save space copies when the kernel
		// says the names are on different file systems; the copy is
		// judged as the opens it makes, and only writes the new name.
		return kernelAnswer{unix.EXDEV, "a hard link would share a file the policy does not let the sandbox write; a copy writes only the new name"}
	}
	return kernelAnswer{}
}

// The removing and renaming calls: ENOENT when there is nothing to act
// on, else the directories' permissions (the sticky bit's rule is left
// to the kernel: it can only refuse more).

func (c *unlinkCall) kernelAnswer() kernelAnswer {
	switch {
	case !c.path.Exists:
		return answerMissing
	case !c.dir && isDir(c.path):
		return kernelAnswer{unix.EISDIR, "it is a directory"}
	}
	return parentRefuses(c.path)
}

func (c *renameCall) kernelAnswer() kernelAnswer {
	switch {
	case !c.from.Exists:
		return answerMissing
	case c.flags&unix.RENAME_EXCHANGE != 0 && !c.to.Exists:
		return answerMissing
	case c.flags&unix.RENAME_NOREPLACE != 0 && c.to.Exists:
		return answerExists
	}
	if a := parentRefuses(c.from); a.errno != 0 {
		return a
	}
	return parentRefuses(c.to)
}

// Contents and metadata of a file: ENOENT when it is missing; truncate
// needs write permission on it.

func (c *truncateCall) kernelAnswer() kernelAnswer {
	switch {
	case !c.path.Exists:
		return answerMissing
	case isDir(c.path):
		return kernelAnswer{unix.EISDIR, "it is a directory"}
	}
	return permission(pin.Permitted(c.path, pin.MayWrite), "the file's permissions refuse it")
}

func missingObject(o object) kernelAnswer {
	if !o.byFd() && !o.res.Exists {
		return answerMissing
	}
	return kernelAnswer{}
}

func (c *chmodCall) kernelAnswer() kernelAnswer       { return missingObject(c.obj) }
func (c *chownCall) kernelAnswer() kernelAnswer       { return missingObject(c.obj) }
func (c *setxattrCall) kernelAnswer() kernelAnswer    { return missingObject(c.obj) }
func (c *removexattrCall) kernelAnswer() kernelAnswer { return missingObject(c.obj) }

// utimes: setting explicit times is for the file's owner (EPERM);
// setting them to now (NULL, or both UTIME_NOW: touch) for the owner or
// anyone who may write the file (EACCES). A uid 0 target is taken to
// hold CAP_FOWNER, as root does.
func (c *utimesCall) kernelAnswer() kernelAnswer {
	if a := missingObject(c.obj); a.errno != 0 {
		return a
	}
	r := c.obj.res
	uid := r.FSUID()
	if uid == 0 || r.Kind != pin.KindPath || r.Stat.Uid == uid {
		return kernelAnswer{}
	}
	touch := c.times == nil || c.times[0].Nsec == unix.UTIME_NOW && c.times[1].Nsec == unix.UTIME_NOW
	if !touch {
		for _, t := range c.times {
			if t.Nsec != unix.UTIME_NOW && t.Nsec != unix.UTIME_OMIT {
				return kernelAnswer{unix.EPERM, "only the file's owner may set its times"}
			}
		}
		return kernelAnswer{} // UTIME_NOW with UTIME_OMIT: left to the kernel
	}
	return permission(pin.Permitted(r, pin.MayWrite), "the file's permissions refuse it")
}
