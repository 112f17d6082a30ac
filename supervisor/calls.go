package supervisor

import (
	"errors"
	"path"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// A call is one decoded syscall: every argument read once, every path
// resolved and pinned. judge is pure (no I/O, no target memory, no /proc):
// it asks the policy about what was decoded. perform carries an allowed
// call out using only what was decoded, and answers the notification.
type call interface {
	judge(p *engine.Policy) verdict
	perform(s *supervisor, id uint64)
	close()
}

// continued is a watched call let through without reading anything from
// memory (answer.go lists every continued call and why). It is continued
// before anything is judged or logged.
type continued struct{}

func (c continued) judge(*engine.Policy) verdict     { return verdict{result: allowUnchecked("")} }
func (c continued) perform(s *supervisor, id uint64) { _ = s.l.Continue(id) }
func (c continued) close()                           {}

// object is what a metadata call changes: a pinned path, or, for the
// calls that name an fd (fchmod, fsetxattr, the attribute ioctls,
// utimensat with a NULL path), the target's own open file, resolved for
// judging and acted on as the open file it is.
type object struct {
	res *pin.Resolved
	tid int
	fd  int // -1: act on res
}

func (o object) byFd() bool { return o.fd >= 0 }

func (o object) handle() (*pin.Handle, error) { return pin.OpenHandle(o.tid, o.fd, o.res) }

// onObject performs a metadata call on the object: through its open file
// when the call named an fd, else on the pinned inode.
func onObject(o object, byFd func(h *pin.Handle) error, byPath func(r *pin.Resolved) error) error {
	if !o.byFd() {
		return byPath(o.res)
	}
	h, err := o.handle()
	if err != nil {
		return err
	}
	defer h.Close()
	return byFd(h)
}

func closeAll(rs ...*pin.Resolved) {
	for _, r := range rs {
		if r != nil {
			r.Close()
		}
	}
}

// writeVerdict judges a call that changes what path names.
func writeVerdict(p *engine.Policy, access string, path *pin.Resolved) verdict {
	return verdict{result: p.DecidePath(engine.AccessWrite, path.Path), access: access, value: path.Path,
		touched: [2]touch{{engine.AccessWrite, path.Path}}}
}

// Opens.

type openCall struct {
	path   *pin.Resolved
	flags  int
	mode   uint32
	umask  uint32 // when the open can create
	access engine.Access

	// Content rules (content.go): the file opened early to look at,
	// installed by perform; the kernel's refusal of that open; or the
	// note that it was decided on as holding no content.
	opened       *pin.File
	openedSecret bool // what opened holds looks secret
	openErr      error
	assumedPlain bool
	// retry: an existing file opened without O_CREAT vanished before
	// perform opened it; the call is decided again as the create it now
	// is (once: retried).
	retry, retried bool
	// quiet: the receiving goroutine's Quiet while perform runs on it
	// (setQuiet), for installFD.
	quiet *notify.Quiet
}

func (c *openCall) judge(p *engine.Policy) verdict {
	if c.path.Kind == pin.KindAnon {
		// Re-opening a pipe, socket or anonymous file the process already
		// holds (/dev/stdin, /dev/fd/63 from <(...)) gives it nothing it
		// does not have.
		return verdict{result: allowUnchecked(c.path.Path), access: accessWord(c.access), value: c.path.Path}
	}
	v := verdict{result: p.DecidePath(c.access, c.path.Path), access: accessWord(c.access), value: c.path.Path,
		touched: [2]touch{{c.access, c.path.Path}}}
	if c.creates() {
		v = saveVerdict(p, v, c.path.Path)
	}
	return v
}

// creates reports whether the open makes a new file.
func (c *openCall) creates() bool {
	return c.access&engine.AccessWrite != 0 && c.flags&unix.O_CREAT != 0 && !c.path.Exists && c.path.Kind == pin.KindPath
}

// openFlags are the flags perform opens with: an O_CREAT whose write
// check was skipped because the file existed is dropped, so the open
// cannot create the file if it vanished since.
func (c *openCall) openFlags() int {
	flags := c.flags
	if c.access&engine.AccessWrite == 0 && flags&unix.O_CREAT != 0 {
		flags &^= unix.O_CREAT | unix.O_EXCL
	}
	return flags
}

// perform opens what was checked and installs it in the target. An open
// that can block indefinitely (a FIFO waiting for its other end, a
// character device such as a serial line waiting for carrier, any file
// on a network file system) is done off the receiving pool, so that
// `mkfifo p; cat p & cat p & echo hi > p` cannot leave the sandbox
// without a receiver; if its target dies meanwhile, a FIFO open is
// released by opening the other end (unblockFIFO), so nothing is left
// waiting for ever.
func (c *openCall) perform(s *supervisor, id uint64) {
	if c.opened == nil && c.access&engine.AccessWrite == 0 && c.flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
		s.respondErr(id, unix.EEXIST) // it existed: O_EXCL fails
		return
	}
	if c.opened != nil || !c.mayBlock(s) {
		c.open(s, id, c.path, true)
		return
	}
	path := c.path
	c.path = nil  // the goroutine owns it now
	c.quiet = nil // and is not the receiving one
	go func() {
		defer path.Close()
		done := make(chan struct{})
		var unblocker sync.WaitGroup
		if path.Stat.Mode&unix.S_IFMT == unix.S_IFIFO {
			unblocker.Go(func() { s.unblockFIFO(id, path, c.flags, done) })
		}
		c.open(s, id, path, false)
		close(done)
		// The unblocker opens the FIFO through path's pin: the pin is
		// closed (and its number free for reuse) only after it is done,
		// which done makes prompt.
		unblocker.Wait()
	}()
}

// open opens path (or takes the file judgeContent opened) and installs
// it. mayRetry: the caller is the receiving loop, which decides again when
// an existing file vanished and the open would now create it.
func (c *openCall) open(s *supervisor, id uint64, path *pin.Resolved, mayRetry bool) {
	f := c.opened
	c.opened = nil
	if f == nil {
		var err error
		f, err = pin.Open(path, c.openFlags(), c.mode, c.umask)
		if err != nil {
			if errnoOf(err) == unix.ENOENT && c.flags&unix.O_CREAT != 0 && c.access&engine.AccessWrite == 0 && !c.retried && mayRetry {
				// It existed when it was judged as a read; the kernel
				// would now create it, which is a write: decide again.
				c.retry, c.retried = true, true
				c.access |= engine.AccessWrite
				path.Exists = false
				return
			}
			if g := (*pin.GuardError)(nil); errors.As(err, &g) {
				s.notices.Line("permwrap: refused open " + g.Path + ": " + g.Why)
			}
			s.respondErr(id, errnoOf(err))
			return
		}
	}
	if !c.plainStill(path, f) {
		// Swapped for a file that looks secret since it was decided on.
		f.Close()
		s.notices.Line("permwrap: refused read " + path.Path + ": it was replaced while permwrap decided")
		s.respondErr(id, unix.EACCES)
		return
	}
	var hand fdCloser = f
	if mayRetry && path.Object != nil {
		// The pin is done with once its file is installed: both close in
		// one call (pin.Pair). Only the receiving loop's open: the one
		// off the pool shares its pin with a FIFO's unblocker.
		hand = pin.Pair{First: f, Second: path.Object}
	}
	s.installFD(id, hand, c.flags&unix.O_CLOEXEC != 0, c.flags&unix.O_ACCMODE != unix.O_RDONLY, c.quiet)
}

// setQuiet gives the open its handler's Quiet (quietCall).
func (c *openCall) setQuiet(q *notify.Quiet) { c.quiet = q }

// mayBlock reports whether opening the pinned object can wait
// indefinitely.
func (c *openCall) mayBlock(s *supervisor) bool {
	r := c.path
	if !r.Exists {
		return false // a new regular file
	}
	nonblock := c.flags&unix.O_NONBLOCK != 0
	switch r.Stat.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return !nonblock && c.flags&unix.O_ACCMODE != unix.O_RDWR // O_RDWR never waits on Linux
	case unix.S_IFCHR:
		return !nonblock && !quickCharDevice(r.Stat.Rdev)
	case unix.S_IFREG, unix.S_IFDIR:
		return s.remoteFS(r)
	}
	return false
}

// quickCharDevice: character devices whose open never waits — the memory
// devices (null, zero, full, random, urandom), /dev/tty, the console, ptmx
// and the pseudo-terminals.
func quickCharDevice(rdev uint64) bool {
	switch major := unix.Major(rdev); {
	case major == 1, major == 5, major >= 136 && major <= 143:
		return true
	}
	return false
}

// remoteFS reports whether r is on a network or FUSE file system, where
// an open waits on a server; cached per device.
func (s *supervisor) remoteFS(r *pin.Resolved) bool {
	if v, ok := s.remote.Load(r.Stat.Dev); ok {
		return v.(bool)
	}
	remote, err := pin.RemoteFS(r)
	if err != nil {
		return true // unknown: keep it off the pool
	}
	s.remote.Store(r.Stat.Dev, remote)
	return remote
}

// unblockFIFO waits until the open of FIFO path for notification id is
// done; if the target is gone before, it opens the FIFO's other end for a
// moment, so the supervisor's own blocked open returns (and its fd, which
// nobody can take any more, is closed).
func (s *supervisor) unblockFIFO(id uint64, path *pin.Resolved, flags int, done <-chan struct{}) {
	delay := time.Millisecond
	for {
		select {
		case <-done:
			return
		case <-time.After(delay):
		}
		if s.l.IDValid(id) != nil {
			break
		}
		delay = min(2*delay, time.Second)
	}
	for {
		peer, err := pin.OpenFIFOPeer(path, flags)
		if err == nil {
			<-done
			peer.Close()
			return
		}
		select {
		case <-done:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// again: perform found the file gone and wants a second decision.
func (c *openCall) again() bool {
	a := c.retry
	c.retry = false
	return a
}

func (c *openCall) close() {
	if c.opened != nil {
		c.opened.Close()
		c.opened = nil
	}
	c.path.Close()
}

// Names.

type unlinkCall struct {
	path *pin.Resolved
	dir  bool // rmdir, unlinkat(AT_REMOVEDIR)
}

func (c *unlinkCall) judge(p *engine.Policy) verdict {
	if c.dir {
		return writeVerdict(p, "rmdir", c.path)
	}
	return writeVerdict(p, "unlink", c.path)
}

func (c *unlinkCall) perform(s *supervisor, id uint64) { s.answer(id, pin.Unlink(c.path, c.dir)) }
func (c *unlinkCall) close()                           { c.path.Close() }

type renameCall struct {
	from, to *pin.Resolved
	flags    uint
}

// judge: both names are written, and the move must not widen access
// (aliasing.go).
func (c *renameCall) judge(p *engine.Policy) verdict {
	if c.flags&unix.RENAME_EXCHANGE != 0 {
		return moveVerdict(p, engine.MoveExchange, "rename", c.from, c.to)
	}
	return moveVerdict(p, engine.MoveRename, "rename", c.from, c.to)
}

func (c *renameCall) perform(s *supervisor, id uint64) {
	s.answer(id, pin.Rename(c.from, c.to, c.flags))
}
func (c *renameCall) close() { closeAll(c.from, c.to) }

type linkCall struct {
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
func (c *linkCall) perform(s *supervisor, id uint64) {
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
	path        *pin.Resolved
	mode, umask uint32
}

func (c *mkdirCall) judge(p *engine.Policy) verdict {
	return verdict{result: p.DecideMkdir(c.path.Path), access: "mkdir", value: c.path.Path,
		touched: [2]touch{{engine.AccessWrite, c.path.Path}}}
}
func (c *mkdirCall) perform(s *supervisor, id uint64) {
	s.answer(id, pin.Mkdir(c.path, c.mode, c.umask))
}
func (c *mkdirCall) close() { c.path.Close() }

type mknodCall struct {
	path        *pin.Resolved
	mode, umask uint32
	dev         uint64
}

func (c *mknodCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "mknod", c.path) }
func (c *mknodCall) perform(s *supervisor, id uint64) {
	s.answer(id, pin.Mknod(c.path, c.mode, c.dev, c.umask))
}
func (c *mknodCall) close() { c.path.Close() }

type symlinkCall struct {
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
func (c *symlinkCall) perform(s *supervisor, id uint64) {
	s.answer(id, pin.Symlink(c.target, c.at))
}
func (c *symlinkCall) close() { c.at.Close() }

// bindCall binds the target's own socket (performed, not continued: the
// kernel would read the sockaddr again). Only an AF_UNIX pathname creates
// a file (at); network and abstract addresses name no path.
type bindCall struct {
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

func (c *bindCall) perform(s *supervisor, id uint64) {
	h, err := pin.OpenHandle(c.tid, c.sock, nil)
	if err == nil {
		err = h.Bind(c.addr, c.at, c.cwd, c.umask)
		if err == nil && c.at != nil {
			s.net.own.record(h) // a socket file the tree's own server listens on
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

// Contents and metadata.

type truncateCall struct {
	path   *pin.Resolved
	length int64
}

func (c *truncateCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "truncate", c.path) }
func (c *truncateCall) perform(s *supervisor, id uint64) {
	s.answer(id, pin.Truncate(c.path, c.length))
}
func (c *truncateCall) close() { c.path.Close() }

type chmodCall struct {
	obj  object
	mode uint32
}

func (c *chmodCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "chmod", c.obj.res) }
func (c *chmodCall) perform(s *supervisor, id uint64) {
	s.answer(id, onObject(c.obj,
		func(h *pin.Handle) error { return h.Fchmod(c.mode) },
		func(r *pin.Resolved) error { return pin.Chmod(r, c.mode) }))
}
func (c *chmodCall) close() { c.obj.res.Close() }

type chownCall struct {
	obj      object
	uid, gid int
}

func (c *chownCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "chown", c.obj.res) }
func (c *chownCall) perform(s *supervisor, id uint64) {
	s.answer(id, onObject(c.obj,
		func(h *pin.Handle) error { return h.Fchown(c.uid, c.gid) },
		func(r *pin.Resolved) error { return pin.Chown(r, c.uid, c.gid) }))
}
func (c *chownCall) close() { c.obj.res.Close() }

type utimesCall struct {
	obj   object
	times *[2]unix.Timespec // nil: now
}

func (c *utimesCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "utimes", c.obj.res) }
func (c *utimesCall) perform(s *supervisor, id uint64) {
	s.answer(id, onObject(c.obj,
		func(h *pin.Handle) error { return h.Futimens(c.times) },
		func(r *pin.Resolved) error { return pin.Utimens(r, c.times) }))
}
func (c *utimesCall) close() { c.obj.res.Close() }

type setxattrCall struct {
	obj   object
	name  string
	value []byte
	flags int
}

func (c *setxattrCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "setxattr", c.obj.res) }
func (c *setxattrCall) perform(s *supervisor, id uint64) {
	s.answer(id, onObject(c.obj,
		func(h *pin.Handle) error { return h.Fsetxattr(c.name, c.value, c.flags) },
		func(r *pin.Resolved) error { return pin.Setxattr(r, c.name, c.value, c.flags) }))
}
func (c *setxattrCall) close() { c.obj.res.Close() }

type removexattrCall struct {
	obj  object
	name string
}

func (c *removexattrCall) judge(p *engine.Policy) verdict {
	return writeVerdict(p, "removexattr", c.obj.res)
}
func (c *removexattrCall) perform(s *supervisor, id uint64) {
	s.answer(id, onObject(c.obj,
		func(h *pin.Handle) error { return h.Fremovexattr(c.name) },
		func(r *pin.Resolved) error { return pin.Removexattr(r, c.name) }))
}
func (c *removexattrCall) close() { c.obj.res.Close() }

// ioctlCall is an attribute-changing ioctl (chattr's flags, the fsxattr):
// a write of the fd's file, performed on the target's open file with the
// argument read once.
type ioctlCall struct {
	obj object
	cmd uint64
	arg []byte
}

func (c *ioctlCall) judge(p *engine.Policy) verdict { return writeVerdict(p, "setattr", c.obj.res) }
func (c *ioctlCall) perform(s *supervisor, id uint64) {
	h, err := c.obj.handle()
	if err == nil {
		err = h.Ioctl(c.cmd, c.arg)
		h.Close()
	}
	s.answer(id, err)
}
func (c *ioctlCall) close() { c.obj.res.Close() }
