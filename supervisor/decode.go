package supervisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/engine/shell"
	"github.com/permwrap/permwrap/forwarding"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// Decoding: a row's decoder reads every argument of one notification
// exactly once (strings and structs from the target's memory, paths
// resolved and pinned by pin.Resolve, the umask when the call creates,
// the exec image) into a typed call (calls.go). Nothing after decoding
// reads the target's memory or /proc for the decision or the operation.

// Bounds on what is read from a target's memory. Past them the call is
// refused (E2BIG/ENAMETOOLONG), never decided on a truncated copy.
const (
	maxPath      = notify.PathMax // including the NUL, as the kernel counts
	maxArgs      = 1 << 16
	maxArgvBytes = 4 << 20
	maxXattrName = 256   // XATTR_NAME_MAX + 1
	maxXattrSize = 65536 // XATTR_SIZE_MAX
	maxOpenHow   = 4096  // a page, as the kernel's copy_struct_from_user allows
)

// decodeFunc reads a notification into a call to decide, or into a
// direct answer (a continued call, a settled one, a knock).
type decodeFunc func(d *decoder) (decoded, error)

// decoded is a call or a direct answer.
type decoded any

// decoder reads one notification's arguments.
type decoder struct {
	n   *notify.Notif
	tid int
	// th is the calling thread, looked up (and validated) once per
	// notification when something needs it; the request keeps it.
	th *pin.Thread
	// net is the supervisor's network state (names, name servers, the
	// proxy, the tree's own sockets), for network calls.
	net *netState
	// pinned are the resolutions made so far, released if decoding fails.
	pinned []*pin.Resolved
	// ids recognises known programs by content (nil: not at all).
	ids *programIDs
	// tree says which processes are the sandbox's (nil: none are).
	tree *tree
}

// thread looks the calling thread up once.
func (d *decoder) thread() (*pin.Thread, error) {
	if d.th == nil {
		th, err := pin.LookupThread(d.tid)
		if err != nil {
			return nil, err
		}
		d.th = th
	}
	return d.th, nil
}

// takeThread hands the looked-up thread (or nil) to the request.
func (d *decoder) takeThread() *pin.Thread {
	th := d.th
	d.th = nil
	return th
}

func (d *decoder) arg(i int) uint64 { return d.n.Args[i] }

// fdArg is an int argument holding a file descriptor (or AT_FDCWD).
func (d *decoder) fdArg(i int) int { return int(int32(d.n.Args[i])) }

// release closes everything pinned, after a failed decode.
func (d *decoder) release() {
	for _, r := range d.pinned {
		r.Close()
	}
	d.pinned = nil
	d.th.Release()
	d.th = nil
}

// refusal is a notification the decoder could not turn into a call: the
// errno to answer and why. kernel marks an answer the kernel itself would
// have given (a bad pointer, a missing directory, an invalid flag): the
// call just fails. Otherwise permwrap could not read or resolve what it
// must judge, and says so (answer.go, fail) — never failing open.
type refusal struct {
	errno  unix.Errno
	why    string
	kernel bool
	err    error
	path   string // the path it was about, when there is one
}

func (e *refusal) Error() string {
	if e.err != nil {
		return e.why + ": " + e.err.Error()
	}
	return e.why
}

func (e *refusal) Unwrap() error { return e.err }

// kernelErr is the kernel's own answer for a malformed call.
func kernelErr(errno unix.Errno, why string) error {
	return &refusal{errno: errno, why: why, kernel: true}
}

// errnoOf is the errno to answer an error with: the refusal's, the errno
// inside, or EACCES when there is none (never an allow).
func errnoOf(err error) unix.Errno {
	var r *refusal
	if errors.As(err, &r) {
		return r.errno
	}
	return pin.Errno(err)
}

// memoryErr classifies a failed read of the target's memory. A bad
// pointer or an oversized string is the target's own mistake and gets the
// kernel's answer; anything else (a target that made itself unreadable,
// one that vanished) is permwrap's refusal.
func memoryErr(what string, err error) error {
	e := pin.Errno(err)
	switch e {
	case unix.EFAULT, unix.ENAMETOOLONG, unix.E2BIG:
		return &refusal{errno: e, why: "reading " + what, kernel: true, err: err}
	}
	return &refusal{errno: e, why: "reading " + what + " from the target's memory", err: err}
}

// str reads the NUL-terminated string argument i.
func (d *decoder) str(i, max int, what string) (string, error) {
	addr := d.arg(i)
	if addr == 0 {
		return "", strErr(addr, what, nil)
	}
	s, err := notify.ReadString(d.tid, addr, max)
	if err != nil {
		return "", strErr(addr, what, err)
	}
	return s, nil
}

// strErr is the refusal for a string argument at addr that could not be
// read.
func strErr(addr uint64, what string, err error) error {
	if addr == 0 {
		return kernelErr(unix.EFAULT, "NULL "+what)
	}
	return memoryErr(what, err)
}

// bytes reads n bytes at the pointer argument i.
func (d *decoder) bytes(i, n int, what string) ([]byte, error) {
	b, err := notify.ReadBytes(d.tid, d.arg(i), n)
	if err != nil {
		return nil, memoryErr(what, err)
	}
	return b, nil
}

// resolve resolves a path for the calling thread and pins it. Errors the
// kernel would give the target (ENOENT, ENOTDIR, ELOOP, ...) come back
// from pin as bare errnos; anything else is permwrap's refusal.
func (d *decoder) resolve(dirfd int, path string, flags pin.ResolveFlags) (*pin.Resolved, error) {
	th, err := d.thread()
	var r *pin.Resolved
	if err == nil {
		r, err = pin.ResolveThread(th, dirfd, path, flags)
	}
	if err != nil {
		var bare unix.Errno
		kernel := errors.As(err, &bare) && error(bare) == err
		return nil, &refusal{errno: pin.Errno(err), why: fmt.Sprintf("resolving %q", path), kernel: kernel, err: err, path: path}
	}
	d.pinned = append(d.pinned, r)
	return r, nil
}

// path reads and resolves the (dirfd, path) argument pair; a dirArg of
// argNone is AT_FDCWD.
func (d *decoder) path(dirArg, pathArg int, flags pin.ResolveFlags) (*pin.Resolved, string, error) {
	p, err := d.str(pathArg, maxPath, "path")
	if err != nil {
		return nil, "", err
	}
	r, err := d.resolve(d.dirfd(dirArg), p, flags)
	return r, p, err
}

// dirfd is the dirfd argument dirArg; argNone is AT_FDCWD.
func (d *decoder) dirfd(dirArg int) int {
	if dirArg == argNone {
		return unix.AT_FDCWD
	}
	return d.fdArg(dirArg)
}

// fdObject names the target's open file fd (fchmod and friends): it is
// resolved for judging, and the operation acts on the open file itself.
func (d *decoder) fdObject(fd int) (object, error) {
	r, err := d.resolve(fd, "", pin.AllowEmpty)
	if err != nil {
		return object{}, err
	}
	return object{res: r, tid: d.tid, fd: fd}, nil
}

// pathObject is a metadata call's path argument, acted on as pinned.
func (d *decoder) pathObject(dirArg, pathArg int, flags pin.ResolveFlags) (object, error) {
	r, _, err := d.path(dirArg, pathArg, flags)
	return object{res: r, fd: -1}, err
}

// umask is the calling thread's umask, read for calls that create.
func (d *decoder) umask() (uint32, error) {
	m, err := pin.Umask(d.tid)
	if err != nil {
		return 0, &refusal{errno: pin.Errno(err), why: "reading the umask", err: err}
	}
	return m, nil
}

// atFlags checks an *at call's AT_* flags against those it accepts (the
// kernel's EINVAL otherwise) and returns how its path resolves.
func atFlags(flags uint64, valid int, followByDefault bool) (pin.ResolveFlags, error) {
	if flags&^uint64(valid) != 0 {
		return 0, kernelErr(unix.EINVAL, fmt.Sprintf("flags %#x", flags))
	}
	return pin.AtResolveFlags(int(flags), followByDefault), nil
}

// optFlags reads an optional flags argument (0 when argNone).
func (d *decoder) optFlags(arg int) uint64 {
	if arg == argNone {
		return 0
	}
	return d.arg(arg) & 0xffffffff // flags are an int
}

// Opens.

// openValidFlags is the kernel's VALID_OPEN_FLAGS: open() ignores other
// bits, openat2 rejects them.
const openValidFlags = unix.O_ACCMODE | unix.O_CREAT | unix.O_EXCL | unix.O_NOCTTY | unix.O_TRUNC |
	unix.O_APPEND | unix.O_NONBLOCK | unix.O_DSYNC | unix.O_ASYNC | unix.O_DIRECT | 0x8000 /* O_LARGEFILE */ |
	unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NOATIME | unix.O_CLOEXEC | unix.O_SYNC | unix.O_PATH | unix.O_TMPFILE

// resolveValid are the RESOLVE_* flags openat2 knows (RESOLVE_CACHED,
// 0x20, is missing from x/sys).
const resolveValid = unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS |
	unix.RESOLVE_BENEATH | unix.RESOLVE_IN_ROOT | 0x20

// decodeOpen is open/openat. An O_PATH open in the flags register is
// continued without reading anything (answer.go explains why).
func decodeOpen(dirArg, pathArg, flagsArg, modeArg int) decodeFunc {
	return func(d *decoder) (decoded, error) {
		flags := int(uint32(d.arg(flagsArg)))
		if flags&unix.O_PATH != 0 {
			return continued{}, nil // grants no access; every use of the fd is judged
		}
		return d.open(dirArg, pathArg, flags, uint32(d.arg(modeArg)), 0)
	}
}

func decodeCreat(d *decoder) (decoded, error) {
	return d.open(argNone, 0, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, uint32(d.arg(1)), 0)
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
	case flags&^uint64(openValidFlags) != 0:
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

// Exec.

// decodeExec is execve/execveat: the binary (resolved as the kernel's
// exec will), argv, the caller's cwd (for relative paths in scripts), the
// image (what the kernel will load: the binary, or a #! chain, each
// member resolved and read through pinned fds) and the program the image
// is by content.
func decodeExec(dirArg, pathArg, argvArg, flagsArg int) decodeFunc {
	return func(d *decoder) (decoded, error) {
		flags := d.optFlags(flagsArg)
		// Exec acts on the object reached (its identity, its head), never
		// on a name in a directory: the fast path may resolve it.
		rf := pin.AtResolveFlags(int(flags), true) | pin.ObjectOnly
		// The path and argv through one reader (one process_vm_readv
		// for both first pages); argv is read once the path resolved.
		args := notify.NewExecArgs(d.tid, d.arg(pathArg), d.arg(argvArg))
		raw, err := args.Path(maxPath)
		if err != nil {
			return nil, strErr(d.arg(pathArg), "path", err)
		}
		r, err := d.resolve(d.dirfd(dirArg), raw, rf)
		if err != nil {
			return nil, err
		}
		if !r.Exists {
			return nil, kernelErr(unix.ENOENT, "exec of a missing file")
		}
		if r.Stat.Mode&unix.S_IFMT != unix.S_IFREG {
			return nil, kernelErr(unix.EACCES, "exec of a file that is not regular")
		}
		argv, err := args.Argv(maxArgs, maxArgvBytes)
		if err != nil {
			return nil, &refusal{errno: unix.E2BIG, why: "reading argv", kernel: true, err: err}
		}
		img, err := pin.ReadImage(d.tid, r)
		if err != nil {
			return nil, imageRefusal(r.Path, err)
		}
		dirfd := unix.AT_FDCWD
		if dirArg != argNone {
			dirfd = d.fdArg(dirArg)
		}
		cwd, tgid := "", 0
		if th, err := d.thread(); err == nil {
			cwd, tgid = th.Cwd(), th.Tgid
		}
		c := &execCall{tid: d.tid, tgid: tgid, path: r, raw: raw, filename: pin.KernelFilename(dirfd, raw, int(flags)),
			argv: argv, cwd: cwd, image: img, readFile: sourceReader(d.tid)}
		if d.ids != nil {
			c.identity = d.ids.identity(img.ID, img.Size, r)
			c.identify = d.ids.identifier(d.tid)
		}
		return c, nil
	}
}

// imageRefusal classifies a failure to predict what an exec runs. The
// kernel's own answers (a missing interpreter, a #! line it rejects, too
// deep a chain) are given silently. An image only binfmt_misc could run
// is refused with ENOEXEC, which is also what the kernel says when no
// handler is registered; when handlers are, the person is told why
// (docs/security.md, "Exec"). A head permwrap could not read is refused:
// what cannot be read cannot be verified.
func imageRefusal(path string, err error) error {
	var bare unix.Errno
	if errors.As(err, &bare) && error(bare) == err {
		return kernelErr(bare, "exec")
	}
	if errors.Is(err, unix.ENOEXEC) || errors.Is(err, unix.ELOOP) {
		if errors.Is(err, unix.ENOEXEC) && len(pin.BinfmtMiscHandlers()) > 0 {
			return &refusal{errno: unix.ENOEXEC, why: "exec of an image permwrap cannot verify (binfmt_misc handlers are not followed; run its interpreter explicitly)", err: err, path: path}
		}
		return kernelErr(pin.Errno(err), "exec")
	}
	return &refusal{errno: pin.Errno(err), why: "reading the executable", err: err, path: path}
}

// sourceReader reads a file a script sources as thread tid would: the
// path resolved for it, regular files only, read with its credentials,
// without blocking, at most limit+1 bytes. Each file is read once per
// exec (the engine may ask again).
func sourceReader(tid int) shell.FileReader {
	type read struct {
		b   []byte
		err error
	}
	var mu sync.Mutex
	seen := map[string]read{}
	return func(p string, limit int) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if r, ok := seen[p]; ok {
			return r.b, r.err
		}
		b, err := readAsTarget(tid, p, limit)
		seen[p] = read{b, err}
		return b, err
	}
}

func readAsTarget(tid int, p string, limit int) ([]byte, error) {
	r, err := pin.Resolve(tid, unix.AT_FDCWD, p, pin.FollowLast)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if !r.Exists {
		return nil, unix.ENOENT
	}
	return pin.ReadRegular(r, limit+1)
}

// decodeExecStop: arch_prctl(ARCH_SET_FS) is only a stop for exec
// verification, which runs before any notification is handled.
func decodeExecStop(*decoder) (decoded, error) {
	return continued{}, nil
}

// decodeChdir: chdir and fchdir are continued as they are (they were
// allowed in BPF before they were watched); the resolution cache is told
// first, while the thread waits in the call, so no cached cwd is used
// across the change (notify/pin/cwd.go).
func decodeChdir(d *decoder) (decoded, error) {
	pin.CwdChanging(d.tid, d.n.ID)
	return continued{}, nil
}

// decodeUnshare: unshare(CLONE_NEWNS) changes the calling thread's root
// to a copy of the mount tree. The thread waits in the call now, so
// telling the resolution cache before continuing leaves no window in which
// a lookup for it could use the old root.
func decodeUnshare(d *decoder) (decoded, error) {
	pin.RootChanged(d.tid)
	// The new tree's copy of the cwd becomes the thread's cwd too.
	pin.CwdChanging(d.tid, d.n.ID)
	return continued{}, nil
}

// Names.

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

// Metadata.

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
