package supervisor

import (
	"errors"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/engine/shell"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// Exec: execve and execveat decoded (the image and its #! chain read
// once), judged, continued; verification at the next stop is
// execverify.go.

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
		// The environment, read once like argv: its loader variables
		// (LD_PRELOAD…) are judged, and verified to be what the kernel
		// used (execverify.go). One that cannot be read is refused.
		// Only the entries that may be loader entries are copied out.
		envp, err := args.EnvKept(d.arg(argvArg+1), maxArgs, maxArgvBytes, engine.MayBeLoaderEntry)
		if err != nil {
			errno := unix.EFAULT
			if errors.Is(err, unix.E2BIG) {
				errno = unix.E2BIG
			}
			return nil, &refusal{errno: errno, why: "the exec's environment (envp) could not be read, so what it loads cannot be judged", err: err}
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
			argv: argv, loaderEnv: engine.LoaderEnv(envp), cwd: cwd, image: img, readFile: sourceReader(d.tid)}
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

// execCall is an execve/execveat as decoded: the binary as invoked and as
// resolved, argv, the caller's cwd, the image the kernel will run, and
// what the engine needs to judge it (the program it is by content, a
// reader for the files a script sources).
type execCall struct {
	callDefaults
	tid      int
	tgid     int // the thread's group, from the decoder's lookup (0: none)
	path     *pin.Resolved
	raw      string // the path as the target passed it
	filename string // the kernel's name for the file (what a #! interpreter receives)
	argv     []string
	// loaderEnv are the environment's entries that make the dynamic
	// loader load code (engine.LoaderEnv): judged, and verified.
	loaderEnv []string
	cwd       string
	image     pin.Image
	identity  string              // the program the image is by content ("" unknown)
	identify  func(string) string // the same for a file run inside the process (ld.so FILE)
	readFile  shell.FileReader    // reads a sourced file as the target would
}

// judge: the engine judges the binary (exec and read), its command line
// in every spelling, what its wrappers and scripts run, and for a #!
// script each interpreter and the command line the kernel builds for it.
func (c *execCall) judge(p *engine.Policy) verdict {
	in := engine.ExecIntent{Path: c.raw, Resolved: c.path.Path, Argv: c.argv, Cwd: c.cwd,
		Identity: c.identity, Identify: c.identify, ReadFile: c.readFile, Env: c.loaderEnv, SystemFile: systemFile}
	for _, ip := range c.image.Interps {
		in.Interpreters = append(in.Interpreters, engine.Interp{Path: ip.Path, Arg: ip.Arg, Resolved: ip.Resolved})
	}
	d := p.DecideExec(in)
	argv := displayArgv(c.raw, c.path.Path, c.argv)
	return verdict{result: d.Result, access: "exec", value: shell.RenderArgv(argv), exec: &d, argv: argv}
}

// systemFile reports whether the tree cannot change the file or directory
// at p by itself: it and every directory above it (symlinks resolved)
// belong to root and are not writable by group or others, and the
// supervisor, whose user the tree runs as, is not root (for root,
// ownership says nothing: the policy's write rules alone tell). It is
// asked only about libraries an exec's environment names.
func systemFile(p string) bool {
	if unix.Geteuid() == 0 {
		return false
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil || !filepath.IsAbs(real) {
		return false
	}
	for d := real; ; d = filepath.Dir(d) {
		var st unix.Stat_t
		if unix.Lstat(d, &st) != nil || st.Uid != 0 || st.Mode&0o022 != 0 {
			return false
		}
		if d == "/" {
			return true
		}
	}
}

func (c *execCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	s.continueExec(id, c, nil)
}

func (c *execCall) close() { c.path.Close() }
