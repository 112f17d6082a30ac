package supervisor

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// Names: unlink, rmdir, rename, mkdir, mknod, link, symlink and an
// AF_UNIX bind — what a name points at, decoded, judged (moves by
// engine.DecideMove), the kernel's own answers, performed on the pins.

func decodeUnlink(dirArg, pathArg, flagsArg int) decodeFunc {
	return func(d *decoder) (decoded, error) {
		flags := d.optFlags(flagsArg)
		if flags&^unix.AT_REMOVEDIR != 0 {
			return nil, kernelErr(unix.EINVAL, fmt.Sprintf("flags %#x", flags))
		}
		dir := flags&unix.AT_REMOVEDIR != 0
		rf := pin.ParentOnly
		if dir {
			rf |= pin.MustBeDir
		}
		r, _, err := d.path(dirArg, pathArg, rf)
		if err != nil {
			return nil, err
		}
		return &unlinkCall{path: r, dir: dir}, nil
	}
}

func decodeRmdir(d *decoder) (decoded, error) {
	r, _, err := d.path(argNone, 0, pin.ParentOnly|pin.MustBeDir)
	if err != nil {
		return nil, err
	}
	return &unlinkCall{path: r, dir: true}, nil
}

func decodeRename(dir1, path1, dir2, path2, flagsArg int) decodeFunc {
	return func(d *decoder) (decoded, error) {
		from, _, err := d.path(dir1, path1, pin.ParentOnly)
		if err != nil {
			return nil, err
		}
		to, _, err := d.path(dir2, path2, pin.ParentOnly)
		if err != nil {
			return nil, err
		}
		// The kernel validates RENAME_* flags when permwrap performs it.
		return &renameCall{from: from, to: to, flags: uint(d.optFlags(flagsArg))}, nil
	}
}

func decodeMkdir(dirArg, pathArg, modeArg int) decodeFunc {
	return func(d *decoder) (decoded, error) {
		r, _, err := d.path(dirArg, pathArg, pin.ParentOnly|pin.MustBeDir)
		if err != nil {
			return nil, err
		}
		umask, err := d.umask()
		if err != nil {
			return nil, err
		}
		return &mkdirCall{path: r, mode: uint32(d.arg(modeArg)), umask: umask}, nil
	}
}

func decodeMknod(dirArg, pathArg, modeArg, devArg int) decodeFunc {
	return func(d *decoder) (decoded, error) {
		r, _, err := d.path(dirArg, pathArg, pin.ParentOnly)
		if err != nil {
			return nil, err
		}
		umask, err := d.umask()
		if err != nil {
			return nil, err
		}
		return &mknodCall{path: r, mode: uint32(d.arg(modeArg)), dev: d.arg(devArg), umask: umask}, nil
	}
}

func decodeLink(dir1, path1, dir2, path2, flagsArg int) decodeFunc {
	return func(d *decoder) (decoded, error) {
		flags := d.optFlags(flagsArg)
		// linkat follows the old name only with AT_SYMLINK_FOLLOW; link(2)
		// never does.
		rf, err := atFlags(flags, unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH, false)
		if err != nil {
			return nil, err
		}
		from, _, err := d.path(dir1, path1, rf)
		if err != nil {
			return nil, err
		}
		to, _, err := d.path(dir2, path2, pin.ParentOnly)
		if err != nil {
			return nil, err
		}
		return &linkCall{from: from, to: to, flags: int(flags)}, nil
	}
}

// decodeSymlink: the link's content (targetArg) is a string, not a path
// permwrap resolves; the new name is.
func decodeSymlink(targetArg, dirArg, pathArg int) decodeFunc {
	return func(d *decoder) (decoded, error) {
		target, err := d.str(targetArg, maxPath, "symlink target")
		if err != nil {
			return nil, err
		}
		at, _, err := d.path(dirArg, pathArg, pin.ParentOnly)
		if err != nil {
			return nil, err
		}
		c := &symlinkCall{target: target, at: at}
		if st, err := pin.SymlinkTarget(at, target); err == nil {
			c.plainTarget = st.Mode&unix.S_IFMT != unix.S_IFDIR
		}
		return c, nil
	}
}

// decodeBind reads bind's sockaddr once. Only an AF_UNIX pathname names a
// path; it is resolved like the new name of mknod (parent only).
func decodeBind(d *decoder) (decoded, error) {
	n := d.arg(2)
	if n > unix.SizeofSockaddrAny || n < 2 {
		return nil, kernelErr(unix.EINVAL, "bind: bad address length")
	}
	addr, err := d.bytes(1, int(n), "the address")
	if err != nil {
		return nil, err
	}
	c := &bindCall{tid: d.tid, sock: d.fdArg(0), addr: addr}
	path, isPath, err := pin.SockaddrUnixPath(addr)
	if err != nil {
		return nil, kernelErr(pin.Errno(err), "bind: bad address")
	}
	if !isPath {
		return c, nil
	}
	if c.at, err = d.resolve(unix.AT_FDCWD, path, pin.ParentOnly); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(path, "/") {
		// The bind is made with the target's own relative path, from its
		// working directory (pin.Handle.Bind).
		if c.cwd, err = d.resolve(unix.AT_FDCWD, ".", pin.FollowLast); err != nil {
			return nil, err
		}
	}
	if c.umask, err = d.umask(); err != nil {
		return nil, err
	}
	return c, nil
}

type unlinkCall struct {
	callDefaults
	path *pin.Resolved
	dir  bool // rmdir, unlinkat(AT_REMOVEDIR)
}

func (c *unlinkCall) judge(p *engine.Policy) verdict {
	if c.dir {
		return writeVerdict(p, "rmdir", c.path)
	}
	return writeVerdict(p, "unlink", c.path)
}

func (c *unlinkCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	s.answer(id, pin.Unlink(c.path, c.dir))
}

func (c *unlinkCall) close() { c.path.Close() }

type renameCall struct {
	callDefaults
	from, to *pin.Resolved
	flags    uint
}

// judge: both names are written, and the move must not widen access
// (moveVerdict, engine/move.go).
func (c *renameCall) judge(p *engine.Policy) verdict {
	if c.flags&unix.RENAME_EXCHANGE != 0 {
		return moveVerdict(p, engine.MoveExchange, "rename", c.from, c.to)
	}
	return moveVerdict(p, engine.MoveRename, "rename", c.from, c.to)
}

func (c *renameCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	s.answer(id, pin.Rename(c.from, c.to, c.flags))
}

func (c *renameCall) close() { closeAll(c.from, c.to) }

type linkCall struct {
	callDefaults
	from, to *pin.Resolved
	flags    int
	// copyInstead: the link is not allowed as a whole, but the new name
	// alone may be written and the file read, so the kernel's answer for
	// a link across file systems (EXDEV) makes the program copy instead
	// (kernel.go). A link of a file the policy does not let the sandbox
	// read is asked about as a link: a copy would ask anyway.
	copyInstead bool
}

func (c *linkCall) judge(p *engine.Policy) verdict {
	v := moveVerdict(p, engine.MoveLink, "link", c.from, c.to)
	c.copyInstead = v.result.Action != engine.Allow && c.from.Exists &&
		c.from.Stat.Mode&unix.S_IFMT == unix.S_IFREG &&
		p.DecidePath(engine.AccessWrite, c.to.Path).Action == engine.Allow
	if c.copyInstead {
		r := p.DecidePath(engine.AccessRead, c.from.Path)
		c.copyInstead = r.Action == engine.Allow && !r.DependsOnContent
	}
	return v
}

func (c *linkCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	s.answer(id, pin.Link(c.from, c.to, c.flags))
}

func (c *linkCall) close() { closeAll(c.from, c.to) }

// moveVerdict judges a rename, exchange or link as a whole (the engine's
// DecideMove): both names are written, the move must not widen read,
// write or exec access (Landlock's "refer" principle), and for a directory
// every path beneath either name is considered, whatever rule could match
// there (moving .git aside and back cannot get past **/.git/hooks/**). A
// Unix socket keeps its `unix:` answer (moving the SSH agent's socket out
// of /tmp/ssh-*/ asks as connecting to it would).
func moveVerdict(p *engine.Policy, kind engine.MoveKind, access string, from, to *pin.Resolved) verdict {
	is := func(r *pin.Resolved, typ uint32) bool { return r.Exists && r.Stat.Mode&unix.S_IFMT == typ }
	m := engine.Move{Kind: kind, From: from.Path, To: to.Path, FromDir: is(from, unix.S_IFDIR), ToDir: is(to, unix.S_IFDIR),
		FromSocket: is(from, unix.S_IFSOCK), ToSocket: is(to, unix.S_IFSOCK)}
	return verdict{access: access, value: from.Path + " -> " + to.Path, result: p.DecideMove(m),
		touched: [2]touch{{engine.AccessWrite, from.Path}, {engine.AccessWrite, to.Path}}}
}

type mkdirCall struct {
	callDefaults
	path        *pin.Resolved
	mode, umask uint32
}

func (c *mkdirCall) judge(p *engine.Policy) verdict {
	return verdict{result: p.DecideMkdir(c.path.Path), access: "mkdir", value: c.path.Path,
		touched: [2]touch{{engine.AccessWrite, c.path.Path}}}
}

func (c *mkdirCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	s.answer(id, pin.Mkdir(c.path, c.mode, c.umask))
}

func (c *mkdirCall) close() { c.path.Close() }

type mknodCall struct {
	callDefaults
	path        *pin.Resolved
	mode, umask uint32
	dev         uint64
}

func (c *mknodCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "mknod", c.path) }

func (c *mknodCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	s.answer(id, pin.Mknod(c.path, c.mode, c.dev, c.umask))
}

func (c *mknodCall) close() { c.path.Close() }

type symlinkCall struct {
	callDefaults
	target string // the link's content, not a path permwrap resolves
	at     *pin.Resolved
	// plainTarget: when decoded, the target existed and was not a
	// directory (pin.SymlinkTarget, following symlinks).
	plainTarget bool
}

// judge: the link's name is written, and everything beneath it will
// reach the target: judged as a move (DecideMove), so `ln -s /tmp/h
// .git/hooks` asks like writing a hook. The target is placed lexically
// against the link's directory. A link to a file has nothing beneath it:
// when the target is a file now and the policy would not let the sandbox
// put anything else in its place (a write of it is not allowed), it is
// judged as a link to a file (`python3 -m venv` links .venv/bin/python3
// to /usr/bin/python3); otherwise as a link to a directory, which only
// makes it stricter.
func (c *symlinkCall) judge(p *engine.Policy) verdict {
	link, target := c.at.Path, c.target
	if path.IsAbs(target) {
		target = path.Clean(target)
	} else {
		target = path.Join(path.Dir(link), target)
	}
	dir := !c.plainTarget || p.DecidePath(engine.AccessWrite, target).Action == engine.Allow
	res := p.DecideMove(engine.Move{Kind: engine.MoveSymlink, From: target, To: link, FromDir: dir})
	return verdict{result: res, access: "symlink", value: link, touched: [2]touch{{engine.AccessWrite, link}}}
}

func (c *symlinkCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	s.answer(id, pin.Symlink(c.target, c.at))
}

func (c *symlinkCall) close() { c.at.Close() }

// bindCall binds the target's own socket (performed, not continued: the
// kernel would read the sockaddr again). Only an AF_UNIX pathname creates
// a file (at); network and abstract addresses name no path.
type bindCall struct {
	callDefaults
	tid, sock int
	addr      []byte
	at        *pin.Resolved // nil: no path
	cwd       *pin.Resolved // the target's cwd, for a relative path
	umask     uint32
}

func (c *bindCall) judge(p *engine.Policy) verdict {
	if c.at == nil {
		// Network rules are not part of the policy yet.
		return verdict{result: allowUnchecked(""), access: "bind"}
	}
	return writeVerdict(p, "bind", c.at)
}

func (c *bindCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	h, err := pin.OpenHandle(c.tid, c.sock, nil)
	if err == nil {
		err = h.Bind(c.addr, c.at, c.cwd, c.umask)
		if err == nil {
			s.net.own.record(h) // a socket the tree's own server receives on
		}
		if err == nil && inetPort(c.addr) == 53 && s.net.tree != nil {
			// The tree serves DNS: it could answer its own queries, so
			// no answer teaches a name from now on (dns.go).
			s.net.tree.serving.Store(true)
		}
		h.Close()
	}
	if errors.Is(err, pin.ErrBindMoved) {
		// A path component was swapped between the check and the bind
		// (within the directory judged: the binding thread could create
		// the file nowhere else): the socket is bound where nobody judged.
		// Only a race does that; the process ends here.
		s.killRacer(id, c.tid, "its bind raced a change of the path ("+c.at.Path+")")
		return
	}
	s.answer(id, err)
}

func (c *bindCall) close() { closeAll(c.at, c.cwd) }

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
