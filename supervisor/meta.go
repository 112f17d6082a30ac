package supervisor

import (
	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// Contents and metadata: truncate, chmod, chown, utimes, setxattr,
// removexattr, by path or by fd (Landlock never restricts metadata).

func decodeTruncate(d *decoder) (decoded, error) {
	length := int64(d.arg(1))
	if length < 0 {
		return nil, kernelErr(unix.EINVAL, "negative length")
	}
	r, _, err := d.path(argNone, 0, pin.FollowLast)
	if err != nil {
		return nil, err
	}
	return &truncateCall{path: r, length: length}, nil
}

// atMeta are the flags the metadata *at calls accept.
const atMeta = unix.AT_SYMLINK_NOFOLLOW | unix.AT_EMPTY_PATH

func decodeChmod(dirArg, pathArg, modeArg, flagsArg int) decodeFunc {
	return func(d *decoder) (decoded, error) {
		rf, err := atFlags(d.optFlags(flagsArg), atMeta, true)
		if err != nil {
			return nil, err
		}
		obj, err := d.pathObject(dirArg, pathArg, rf)
		if err != nil {
			return nil, err
		}
		return &chmodCall{obj: obj, mode: uint32(d.arg(modeArg))}, nil
	}
}

func decodeFchmod(d *decoder) (decoded, error) {
	obj, err := d.fdObject(d.fdArg(0))
	if err != nil {
		return nil, err
	}
	return &chmodCall{obj: obj, mode: uint32(d.arg(1))}, nil
}

// decodeChown: uid and gid follow the path (dirfd, path, uid, gid[, flags]).
func decodeChown(dirArg, pathArg, uidArg, flagsArg int, follow bool) decodeFunc {
	return func(d *decoder) (decoded, error) {
		rf, err := atFlags(d.optFlags(flagsArg), atMeta, follow)
		if err != nil {
			return nil, err
		}
		obj, err := d.pathObject(dirArg, pathArg, rf)
		if err != nil {
			return nil, err
		}
		return &chownCall{obj: obj, uid: d.fdArg(uidArg), gid: d.fdArg(uidArg + 1)}, nil
	}
}

func decodeFchown(d *decoder) (decoded, error) {
	obj, err := d.fdObject(d.fdArg(0))
	if err != nil {
		return nil, err
	}
	return &chownCall{obj: obj, uid: d.fdArg(1), gid: d.fdArg(2)}, nil
}

// decodeUtimes reads the times (in the syscall's own struct) before the
// flags and the path, as the kernel does; utimensat with both times
// UTIME_OMIT changes nothing and is answered 0 at once. utimensat with a NULL path changes its dirfd's
// open file.
func decodeUtimes(dirArg, pathArg, timesArg, flagsArg int, form timesForm) decodeFunc {
	return func(d *decoder) (decoded, error) {
		flags := d.optFlags(flagsArg)
		ts, err := d.times(timesArg, form)
		if err != nil {
			return nil, err
		}
		if form == timesTimespec && ts != nil && ts[0].Nsec == unix.UTIME_OMIT && ts[1].Nsec == unix.UTIME_OMIT {
			// "Nothing to do, we must not even check the path" (the
			// kernel's utimensat returns 0 before flags or path).
			return settled{}, nil
		}
		rf, err := atFlags(flags, atMeta, true)
		if err != nil {
			return nil, err
		}
		if dirArg != argNone && d.arg(pathArg) == 0 {
			dirfd := d.fdArg(dirArg)
			switch {
			case dirfd == unix.AT_FDCWD:
				return nil, kernelErr(unix.EFAULT, "utimensat(AT_FDCWD, NULL)")
			case flags&unix.AT_SYMLINK_NOFOLLOW != 0:
				return nil, kernelErr(unix.EINVAL, "utimensat(fd, NULL, AT_SYMLINK_NOFOLLOW)")
			}
			obj, err := d.fdObject(dirfd)
			if err != nil {
				return nil, err
			}
			return &utimesCall{obj: obj, times: ts}, nil
		}
		obj, err := d.pathObject(dirArg, pathArg, rf)
		if err != nil {
			return nil, err
		}
		return &utimesCall{obj: obj, times: ts}, nil
	}
}

// decodeSetxattr is setxattr/lsetxattr (pathArg 0) and fsetxattr
// (pathArg argNone): (path or fd, name, value, size, flags). The name and
// the value are read before the path, as the kernel does.
func decodeSetxattr(pathArg int, follow bool) decodeFunc {
	return func(d *decoder) (decoded, error) {
		name, err := d.str(1, maxXattrName, "xattr name")
		if err != nil {
			return nil, err
		}
		size := d.arg(3)
		if size > maxXattrSize {
			return nil, kernelErr(unix.E2BIG, "xattr value too large")
		}
		var value []byte
		if size > 0 {
			if value, err = d.bytes(2, int(size), "xattr value"); err != nil {
				return nil, err
			}
		}
		obj, err := d.xattrObject(pathArg, follow)
		if err != nil {
			return nil, err
		}
		return &setxattrCall{obj: obj, name: name, value: value, flags: int(int32(d.arg(4)))}, nil
	}
}

func decodeRemovexattr(pathArg int, follow bool) decodeFunc {
	return func(d *decoder) (decoded, error) {
		name, err := d.str(1, maxXattrName, "xattr name")
		if err != nil {
			return nil, err
		}
		obj, err := d.xattrObject(pathArg, follow)
		if err != nil {
			return nil, err
		}
		return &removexattrCall{obj: obj, name: name}, nil
	}
}

func (d *decoder) xattrObject(pathArg int, follow bool) (object, error) {
	if pathArg == argNone {
		return d.fdObject(d.fdArg(0))
	}
	var rf pin.ResolveFlags
	if follow {
		rf = pin.FollowLast
	}
	return d.pathObject(argNone, pathArg, rf)
}

type truncateCall struct {
	callDefaults
	path   *pin.Resolved
	length int64
}

func (c *truncateCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "truncate", c.path) }

func (c *truncateCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	s.answer(id, pin.Truncate(c.path, c.length))
}

func (c *truncateCall) close() { c.path.Close() }

type chmodCall struct {
	callDefaults
	obj  object
	mode uint32
}

func (c *chmodCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "chmod", c.obj.res) }

func (c *chmodCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	s.answer(id, onObject(c.obj,
		func(h *pin.Handle) error { return h.Fchmod(c.mode) },
		func(r *pin.Resolved) error { return pin.Chmod(r, c.mode) }))
}

func (c *chmodCall) close() { c.obj.res.Close() }

type chownCall struct {
	callDefaults
	obj      object
	uid, gid int
}

func (c *chownCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "chown", c.obj.res) }

func (c *chownCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	s.answer(id, onObject(c.obj,
		func(h *pin.Handle) error { return h.Fchown(c.uid, c.gid) },
		func(r *pin.Resolved) error { return pin.Chown(r, c.uid, c.gid) }))
}

func (c *chownCall) close() { c.obj.res.Close() }

type utimesCall struct {
	callDefaults
	obj   object
	times *[2]unix.Timespec // nil: now
}

func (c *utimesCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "utimes", c.obj.res) }

func (c *utimesCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	s.answer(id, onObject(c.obj,
		func(h *pin.Handle) error { return h.Futimens(c.times) },
		func(r *pin.Resolved) error { return pin.Utimens(r, c.times) }))
}

func (c *utimesCall) close() { c.obj.res.Close() }

type setxattrCall struct {
	callDefaults
	obj   object
	name  string
	value []byte
	flags int
}

func (c *setxattrCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "setxattr", c.obj.res) }

func (c *setxattrCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	s.answer(id, onObject(c.obj,
		func(h *pin.Handle) error { return h.Fsetxattr(c.name, c.value, c.flags) },
		func(r *pin.Resolved) error { return pin.Setxattr(r, c.name, c.value, c.flags) }))
}

func (c *setxattrCall) close() { c.obj.res.Close() }

type removexattrCall struct {
	callDefaults
	obj  object
	name string
}

func (c *removexattrCall) judge(p *engine.Policy) verdict {
	return writeVerdict(p, "removexattr", c.obj.res)
}

func (c *removexattrCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	s.answer(id, onObject(c.obj,
		func(h *pin.Handle) error { return h.Fremovexattr(c.name) },
		func(r *pin.Resolved) error { return pin.Removexattr(r, c.name) }))
}

func (c *removexattrCall) close() { c.obj.res.Close() }

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

func (c *chmodCall) kernelAnswer() kernelAnswer { return missingObject(c.obj) }

func (c *chownCall) kernelAnswer() kernelAnswer { return missingObject(c.obj) }

func (c *setxattrCall) kernelAnswer() kernelAnswer { return missingObject(c.obj) }

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
