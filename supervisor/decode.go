package supervisor

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

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

// umask is the calling thread's umask, read for calls that create
// (cached per thread between umask calls: pin.Thread.Umask).
func (d *decoder) umask() (uint32, error) {
	th, err := d.thread()
	var m uint32
	if err == nil {
		m, err = th.Umask()
	}
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
