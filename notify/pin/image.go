package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Executables. An exec cannot be emulated (the kernel must load the image
// into the calling process), so the supervisor continues an allowed exec
// and verifies afterwards that the process runs what was judged. ReadImage
// predicts, before the exec, what the kernel will load and with which argv;
// Process reads what a process runs now.

// FileID identifies an inode: what /proc/PID/exe must be after an exec.
type FileID struct{ Dev, Ino uint64 }

// ID is the identity of the resolved object; meaningful when Exists.
func (r *Resolved) ID() FileID { return FileID{r.Stat.Dev, r.Stat.Ino} }

// ImageKind says how the kernel will run an executable.
type ImageKind uint8

const (
	// ImageELF: the file itself is loaded (a native ELF binary).
	ImageELF ImageKind = iota
	// ImageScript: a #! script; the kernel runs its interpreter chain,
	// whose last member is a native ELF binary.
	ImageScript
)

// Interpreter is one interpreter of a #! chain: the line as the kernel
// parses it, and the file it names resolved as the kernel will open it
// for the exec'ing thread (from its root and cwd, symlinks followed).
type Interpreter struct {
	Path     string // as the #! line names it (the new argv[0])
	Arg      string // the optional argument: the rest of the line, "" when none
	Resolved string // canonical path, as Resolve gives it
	ID       FileID
}

// Image is what an exec of a resolved file will run.
type Image struct {
	ID      FileID // the file exec'd
	Size    int64
	Kind    ImageKind
	Interps []Interpreter // for ImageScript: the #! chain, the script's own interpreter first
}

// Loaded is the file /proc/PID/exe shows once the exec is done: the image
// itself, or the last interpreter of its chain.
func (img Image) Loaded() FileID {
	if n := len(img.Interps); n > 0 {
		return img.Interps[n-1].ID
	}
	return img.ID
}

// KernelArgv is the argv the new program starts with, as the kernel
// builds it: argv as passed for an ELF binary; for a #! script, at each
// level of the chain the kernel drops argv[0] and puts the interpreter's
// name as written, its argument (if any) and the file it runs in front
// (fs/binfmt_script.c). filename is the kernel's name of the exec'd file
// (KernelFilename). An empty argv becomes {""} (Linux ≥ 5.18).
func (img Image) KernelArgv(filename string, argv []string) []string {
	out := append([]string(nil), argv...)
	if len(out) == 0 {
		out = []string{""}
	}
	file := filename
	for _, in := range img.Interps {
		head := []string{in.Path}
		if in.Arg != "" {
			head = append(head, in.Arg)
		}
		head = append(head, file)
		out = append(head, out[1:]...)
		file = in.Path
	}
	return out
}

// KernelFilename is the name the kernel gives the file an execve or
// execveat runs (bprm->filename), which a #! interpreter receives: the
// path as passed, or /dev/fd/N[/path] for execveat relative to a dirfd.
func KernelFilename(dirfd int, path string, atFlags int) string {
	switch {
	case dirfd == unix.AT_FDCWD || len(path) > 0 && path[0] == '/':
		return path
	case path == "" && atFlags&unix.AT_EMPTY_PATH != 0:
		return "/dev/fd/" + strconv.Itoa(dirfd)
	}
	return "/dev/fd/" + strconv.Itoa(dirfd) + "/" + path
}

// binprmBufSize is the kernel's BINPRM_BUF_SIZE: how much of a file's
// head the binary format handlers see.
const binprmBufSize = 256

// maxInterpDepth is how many files of a #! chain the kernel loads before
// ELOOP (exec_binprm: depths 0 to 5, the first being the file itself,
// the last the ELF binary).
const maxInterpDepth = 6

// ReadImage predicts what an exec of r by thread tid runs: a native ELF
// binary, or a #! chain ending in one, each interpreter resolved for tid
// as the kernel's open_exec would and read through the pinned object, not
// by name. Anything else is refused with the kernel's own errno: a file
// that is not regular (EACCES), a #! line the kernel would reject
// (ENOEXEC), too deep a chain (ELOOP), and ENOEXEC for an image that is
// neither a native ELF nor a #! script, which only binfmt_misc could run:
// its interpreter comes from a table outside the sandbox's view that can
// change between check and exec, so the result could not be verified
// (docs/security.md). A head permwrap cannot read is refused too, for the
// same reason.
func ReadImage(tid int, r *Resolved) (Image, error) {
	if err := checkPinned(r); err != nil {
		return Image{}, err
	}
	if !r.Exists || r.Object == nil {
		return Image{}, unix.ENOENT
	}
	if r.Stat.Mode&unix.S_IFMT != unix.S_IFREG {
		return Image{}, unix.EACCES
	}
	img := Image{ID: r.ID(), Size: r.Stat.Size}
	obj, path := r.Object, r.Path
	var held []*Resolved
	defer func() {
		for _, h := range held {
			h.Close()
		}
	}()
	for depth := 0; ; depth++ {
		if depth >= maxInterpDepth {
			return img, fmt.Errorf("pin: %s: more than %d nested #! scripts: %w", r.Path, maxInterpDepth-1, unix.ELOOP)
		}
		head, err := readImageHead(obj)
		if err != nil {
			return img, fmt.Errorf("pin: reading the head of %s to see what it runs: %w", path, err)
		}
		switch {
		case bytes.HasPrefix(head, []byte("\x7fELF")):
			if !nativeELF(head) {
				return img, fmt.Errorf("pin: %s is an ELF binary for another machine (binfmt_misc would pick its interpreter): %w", path, unix.ENOEXEC)
			}
			if depth == 0 {
				img.Kind = ImageELF
			} else {
				img.Kind = ImageScript
			}
			return img, nil
		case bytes.HasPrefix(head, []byte("#!")):
			name, arg, ok := ParseShebang(head)
			if !ok {
				return img, fmt.Errorf("pin: %s: the kernel would reject its #! line: %w", path, unix.ENOEXEC)
			}
			in, err := Resolve(tid, unix.AT_FDCWD, name, FollowLast)
			if err != nil {
				return img, err
			}
			held = append(held, in)
			if !in.Exists || in.Object == nil {
				return img, unix.ENOENT
			}
			if in.Stat.Mode&unix.S_IFMT != unix.S_IFREG {
				return img, unix.EACCES
			}
			img.Interps = append(img.Interps, Interpreter{Path: name, Arg: arg, Resolved: in.Path, ID: in.ID()})
			obj, path = in.Object, in.Path
		default:
			return img, fmt.Errorf("pin: %s is neither a native ELF binary nor a #! script (only binfmt_misc could run it): %w", path, unix.ENOEXEC)
		}
	}
}

// readImageHead reads the first bytes of a file (what the kernel's binary
// format handlers see) through its pinned O_PATH fd, without blocking.
func readImageHead(obj *File) ([]byte, error) {
	fd, err := openPathRetry(selfFd(obj), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	head := make([]byte, binprmBufSize)
	n := 0
	for n < len(head) {
		m, err := unix.Pread(fd, head[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return head[:n], nil
}

// ParseShebang parses a #! line as fs/binfmt_script.c does: the
// interpreter name runs to the first space, tab or NUL; the optional
// argument is the rest of the line with surrounding spaces and tabs
// trimmed (one argument, spaces included). Without a newline within the
// first 256 bytes the name must be followed by a space, tab or NUL, or the
// kernel assumes it truncated and refuses (ok false).
func ParseShebang(buf []byte) (name, arg string, ok bool) {
	if len(buf) < 2 || buf[0] != '#' || buf[1] != '!' {
		return "", "", false
	}
	if len(buf) > binprmBufSize {
		buf = buf[:binprmBufSize]
	}
	// The kernel's buffer is zero-padded when the file is shorter.
	b := make([]byte, binprmBufSize)
	copy(b, buf)
	spacetab := func(c byte) bool { return c == ' ' || c == '\t' }
	end := bytes.IndexByte(b, '\n')
	if end < 0 {
		i := 2
		for i < len(b)-1 && spacetab(b[i]) {
			i++
		}
		if i >= len(b)-1 && spacetab(b[i]) {
			return "", "", false // all spaces and tabs
		}
		term := -1
		for j := i; j <= len(b)-1; j++ {
			if spacetab(b[j]) || b[j] == 0 {
				term = j
				break
			}
		}
		if term < 0 {
			return "", "", false // the name may be truncated
		}
		end = len(b) - 1
	}
	for end > 2 && spacetab(b[end-1]) {
		end--
	}
	i := 2
	for i < end && spacetab(b[i]) {
		i++
	}
	if i >= end {
		return "", "", false // no interpreter name
	}
	sep := i
	for sep < end && !spacetab(b[sep]) && b[sep] != 0 {
		sep++
	}
	name = string(b[i:sep])
	if sep < end && b[sep] != 0 {
		a := sep
		for a < end && spacetab(b[a]) {
			a++
		}
		if a < end {
			arg = string(b[a:end])
		}
	}
	return name, arg, true
}

// nativeELF reports whether an ELF head is for a machine this kernel runs
// itself (rather than through a binfmt_misc emulator such as qemu-user).
func nativeELF(head []byte) bool {
	if len(head) < 20 {
		return false
	}
	class := head[4] // EI_CLASS: 1 = 32-bit, 2 = 64-bit
	var machine uint16
	switch head[5] { // EI_DATA
	case 1:
		machine = binary.LittleEndian.Uint16(head[18:20])
	case 2:
		machine = binary.BigEndian.Uint16(head[18:20])
	default:
		return false
	}
	switch runtime.GOARCH {
	case "amd64":
		return class == 2 && machine == 62 /* EM_X86_64 */ || class == 1 && machine == 3 /* EM_386, IA32 emulation */
	case "arm64":
		return class == 2 && machine == 183 /* EM_AARCH64 */ || class == 1 && machine == 40 /* EM_ARM */
	}
	return true // an architecture this table does not know: take the kernel's word
}

// ReadRegular reads at most max bytes of the regular file r names, with
// r's credentials (what the target could read), through the pinned
// object and without blocking: a FIFO or device is an error, not a wait.
func ReadRegular(r *Resolved, max int) ([]byte, error) {
	if err := checkPinned(r); err != nil {
		return nil, err
	}
	if !r.Exists || r.Object == nil {
		return nil, unix.ENOENT
	}
	if r.Stat.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("pin: %s is not a regular file: %w", r.Path, unix.EINVAL)
	}
	var out []byte
	err := asCred(r.Cred, func() error {
		fd, err := openPathRetry(selfFd(r.Object), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return unix.EINVAL
		}
		buf := make([]byte, max)
		n := 0
		for n < max {
			m, err := unix.Read(fd, buf[n:])
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			if m == 0 {
				break
			}
			n += m
		}
		out = buf[:n]
		return nil
	})
	return out, err
}

// BinfmtMiscHandlers lists the enabled binfmt_misc handlers of the
// supervisor's view (none when binfmt_misc is not mounted or disabled).
// permwrap refuses the execs only they could run (ReadImage); doctor
// names them.
func BinfmtMiscHandlers() []string {
	const dir = "/proc/sys/fs/binfmt_misc"
	st, err := os.ReadFile(dir + "/status")
	if err != nil || !bytes.HasPrefix(st, []byte("enabled")) {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); n != "status" && n != "register" {
			if b, err := os.ReadFile(dir + "/" + n); err == nil && bytes.HasPrefix(b, []byte("enabled")) {
				out = append(out, n)
			}
		}
	}
	return out
}

// ContentKey identifies a file's content as far as its metadata can: a
// digest taken for one key holds for the file while the key is the same
// (a write changes mtime and ctime).
type ContentKey struct {
	Dev, Ino     uint64
	Size         int64
	Mtime, Ctime unix.Timespec
}

// KeyOf is the ContentKey of a stat result.
func KeyOf(st *unix.Stat_t) ContentKey {
	return ContentKey{Dev: st.Dev, Ino: st.Ino, Size: st.Size, Mtime: st.Mtim, Ctime: st.Ctim}
}

// Digest is the SHA-256 of the regular file obj (an O_PATH fd, as
// Resolved.Object), read by the supervisor without blocking. It refuses
// files over max bytes.
func Digest(obj *File, max int64) ([32]byte, error) {
	fd, err := openPathRetry(selfFd(obj), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return [32]byte{}, err
	}
	f := newFile(fd, "image")
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return [32]byte{}, unix.EINVAL
	}
	if st.Size > max {
		return [32]byte{}, unix.EFBIG
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, max+1)); err != nil {
		return [32]byte{}, err
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

// DigestPath is Digest of the file at path (the supervisor's view),
// provided it still has the ContentKey want.
func DigestPath(path string, want ContentKey, max int64) ([32]byte, error) {
	fd, err := openPathRetry(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return [32]byte{}, err
	}
	f := newFile(fd, path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return [32]byte{}, err
	}
	if KeyOf(&st) != want {
		return [32]byte{}, fmt.Errorf("pin: %s changed: %w", path, unix.ESTALE)
	}
	return Digest(f, max)
}
