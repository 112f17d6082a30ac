package supervisor

import (
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/forwarding"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// Opens: open, openat, openat2, creat — decoded, judged, the kernel's own
// answers, performed (the file opened by permwrap and installed in the
// target). Content rules are content.go.

// resolveValid are the RESOLVE_* flags openat2 knows (RESOLVE_CACHED,
// 0x20, is missing from x/sys).
const resolveValid = unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS |
	unix.RESOLVE_BENEATH | unix.RESOLVE_IN_ROOT | 0x20

// decodeOpen is open/openat. An O_PATH open in the flags register is
// continued without reading anything (answer.go explains why).
func decodeOpen(a openArgs) decodeFunc {
	return func(d *decoder) (decoded, error) {
		flags := int(uint32(d.arg(a.flags)))
		if flags&unix.O_PATH != 0 {
			return continued{}, nil // grants no access; every use of the fd is judged
		}
		return d.open(a.dirfd, a.path, flags, uint32(d.arg(a.mode)), 0)
	}
}

func decodeCreat(d *decoder) (decoded, error) {
	a := creatPositions
	return d.open(a.dirfd, a.path, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, uint32(d.arg(a.mode)), 0)
}

// decodeOpenat2 reads struct open_how {u64 flags; u64 mode; u64 resolve}
// once. An O_PATH there cannot be continued (the flags are in memory the
// kernel reads again) and ADDFD cannot install an O_PATH file: ENOSYS,
// and callers fall back to openat.
func decodeOpenat2(d *decoder) (decoded, error) {
	size := d.arg(3)
	if size < 24 {
		return nil, kernelErr(unix.EINVAL, "open_how too small")
	}
	if size > maxOpenHow {
		return nil, kernelErr(unix.E2BIG, "open_how too large")
	}
	b, err := d.bytes(2, int(size), "open_how")
	if err != nil {
		return nil, err
	}
	// Unknown trailing fields must be zero, as the kernel requires.
	for _, c := range b[24:] {
		if c != 0 {
			return nil, kernelErr(unix.E2BIG, "open_how has unknown fields")
		}
	}
	le := binary.LittleEndian
	flags, mode, resolve := le.Uint64(b[0:8]), le.Uint64(b[8:16]), le.Uint64(b[16:24])
	switch {
	case flags&^uint64(pin.OpenValidFlags) != 0:
		return nil, kernelErr(unix.EINVAL, "open_how flags out of range")
	case resolve&^uint64(resolveValid) != 0:
		return nil, kernelErr(unix.EINVAL, "unknown RESOLVE_ flags")
	case mode&^0o7777 != 0, mode != 0 && flags&(unix.O_CREAT|oTmpfileBit) == 0:
		return nil, kernelErr(unix.EINVAL, "open_how mode without O_CREAT")
	case flags&unix.O_PATH != 0:
		return nil, kernelErr(unix.ENOSYS, "openat2 with O_PATH: callers fall back to openat")
	}
	return d.open(0, 1, int(flags), uint32(mode), resolve)
}

func (d *decoder) open(dirArg, pathArg, flags int, mode uint32, resolve uint64) (decoded, error) {
	if flags&oTmpfileBit != 0 && (flags&(unix.O_TMPFILE|unix.O_CREAT) != unix.O_TMPFILE || flags&unix.O_ACCMODE == unix.O_RDONLY) {
		return nil, kernelErr(unix.EINVAL, "O_TMPFILE needs O_DIRECTORY, a write mode and no O_CREAT")
	}
	p, err := d.str(pathArg, maxPath, "path")
	if err != nil {
		return nil, err
	}
	// An inner permwrap's knock (forwarding.go), recognised on the path as
	// read, before anything is resolved.
	if resolve == 0 && forwarding.CouldKnock(flags) {
		if k, err := d.knock(p, flags); k != nil || err != nil {
			return k, err
		}
	}
	r, err := d.resolve(d.dirfd(dirArg), p, pin.OpenHowResolveFlags(flags, resolve))
	if err != nil {
		return nil, err
	}
	c := &openCall{path: r, flags: flags, mode: mode, access: openAccess(flags, r.Exists)}
	if flags&(unix.O_CREAT|oTmpfileBit) != 0 {
		if c.umask, err = d.umask(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// openAccess is what an open grants, by the kernel's rules (O_ACCMODE,
// O_TRUNC, O_CREAT of a missing file, O_TMPFILE), read conservatively.
func openAccess(f int, exists bool) engine.Access {
	var a engine.Access
	switch f & unix.O_ACCMODE {
	case unix.O_RDONLY:
		a = engine.AccessRead
	case unix.O_WRONLY:
		a = engine.AccessWrite
	default:
		a = engine.AccessRead | engine.AccessWrite
	}
	if f&(unix.O_TRUNC|oTmpfileBit) != 0 {
		a |= engine.AccessWrite
	}
	if f&unix.O_CREAT != 0 && !exists {
		a |= engine.AccessWrite
	}
	return a
}

// openCall takes every step of a call itself (content rules, the
// kernel's answers before perform): it embeds no callDefaults.
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
	looked       bool        // lookAtContent ran
	fact         contentFact // what it found
	openErr      error
	assumedPlain bool
	// retry: an existing file opened without O_CREAT vanished before
	// perform opened it; the call is decided again as the create it now
	// is (once: retried).
	retry, retried bool
	// quiet: the receiving goroutine's Quiet while perform runs on it,
	// for installFD.
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
func (c *openCall) perform(s *supervisor, id uint64, q *notify.Quiet) {
	c.quiet = q
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

// open opens path (or takes the file lookAtContent opened) and installs
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
				c.looked = false
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

// changed: perform found the file gone and asks for a second decision,
// once (retried).
func (c *openCall) changed() bool {
	ch := c.retry
	c.retry = false
	return ch
}

func (c *openCall) close() {
	if c.opened != nil {
		c.opened.Close()
		c.opened = nil
	}
	c.path.Close()
}

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
