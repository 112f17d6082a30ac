package pin

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Executables. An exec cannot be emulated (the kernel must load the image
// into the calling process), so the supervisor continues an allowed exec
// and verifies afterwards that the process runs what was judged. These are
// the identities it compares: what was resolved before, and what /proc
// shows after.

// FileID identifies an inode: what /proc/PID/exe must be after an exec.
type FileID struct{ Dev, Ino uint64 }

// ID is the identity of the resolved object; meaningful when Exists.
func (r *Resolved) ID() FileID { return FileID{r.Stat.Dev, r.Stat.Ino} }

// ImageKind says how the kernel will run an executable.
type ImageKind uint8

const (
	// ImageELF: the file itself is loaded.
	ImageELF ImageKind = iota
	// ImageScript: a #! script; the kernel runs its interpreter chain.
	ImageScript
	// ImageOther: neither, or unreadable; binfmt_misc may pick any
	// interpreter, which permwrap cannot predict.
	ImageOther
)

// Interpreter is one interpreter of a #! chain, resolved as the kernel
// will resolve it for the exec'ing thread.
type Interpreter struct {
	Path string
	ID   FileID
}

// Image is what an exec of a resolved file will run.
type Image struct {
	ID      FileID // the file exec'd
	Kind    ImageKind
	Interps []Interpreter // for ImageScript: each interpreter, outermost last
}

// maxInterpDepth is the kernel's limit on nested #! interpreters (4), plus
// the file itself.
const maxInterpDepth = 5

// ReadImage identifies the executable r names for thread tid and reads its
// head: for a #! script each interpreter of the chain (up to the kernel's
// depth), resolved from tid's root and cwd with symlinks followed, with
// the identity /proc/PID/exe will show. r must exist.
func ReadImage(tid int, r *Resolved) (Image, error) {
	if err := checkPinned(r); err != nil {
		return Image{}, err
	}
	if !r.Exists || r.Object == nil {
		return Image{}, unix.ENOENT
	}
	img := Image{ID: r.ID(), Kind: ImageOther}
	cur := selfFd(r.Object)
	for depth := 0; depth < maxInterpDepth; depth++ {
		head, err := readHead(cur)
		if err != nil {
			return img, nil // unreadable here: the kernel decides; verification takes any image
		}
		switch {
		case bytes.HasPrefix(head, []byte("\x7fELF")):
			if depth == 0 {
				img.Kind = ImageELF
			} else {
				img.Kind = ImageScript
			}
			return img, nil
		case bytes.HasPrefix(head, []byte("#!")):
			line := head[2:]
			if i := bytes.IndexByte(line, '\n'); i >= 0 {
				line = line[:i]
			}
			fields := bytes.Fields(line)
			if len(fields) == 0 {
				return img, nil
			}
			in, err := Resolve(tid, unix.AT_FDCWD, string(fields[0]), FollowLast)
			if err != nil {
				return img, nil
			}
			ok := in.Exists && in.Object != nil
			interp := Interpreter{Path: in.Path, ID: in.ID()}
			in.Close()
			if !ok {
				return img, nil
			}
			img.Interps = append(img.Interps, interp)
			cur = interp.Path
		default:
			return img, nil
		}
	}
	return img, nil
}

// readHead reads the first bytes of an executable (enough for ELF's magic
// and a #! line).
func readHead(path string) ([]byte, error) {
	fd, err := openPathRetry(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	head := make([]byte, 256)
	n, err := unix.Read(fd, head)
	if err != nil {
		return nil, err
	}
	return head[:n], nil
}

// Running is what a process runs now, as /proc shows it: its executable's
// identity and its command line (argv as NUL-terminated strings).
type Running struct {
	Exe     FileID
	Cmdline []byte
}

// ReadRunning reads /proc/PID/exe and /proc/PID/cmdline as one consistent
// pair. They are two reads and an exec can land between them; both come
// from the process's mm, so reading exe again and retrying when it changed
// gives a consistent pair. ok is false when it kept changing (look again
// later); err means the process is gone or unreadable.
func ReadRunning(pid int) (run Running, ok bool, err error) {
	base := "/proc/" + strconv.Itoa(pid)
	for try := 0; try <= 10; try++ {
		e1, err := exeID(base)
		if err != nil {
			return Running{}, false, err
		}
		c, err := os.ReadFile(base + "/cmdline")
		if err != nil {
			return Running{}, false, err
		}
		e2, err := exeID(base)
		if err != nil {
			return Running{}, false, err
		}
		if e1 == e2 {
			return Running{Exe: e1, Cmdline: c}, true, nil
		}
	}
	return Running{}, false, nil
}

func exeID(base string) (FileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(base+"/exe", &st); err != nil {
		return FileID{}, fmt.Errorf("pin: stat %s/exe: %w", base, err)
	}
	return FileID{st.Dev, st.Ino}, nil
}

// Kill sends SIGKILL to process pid.
func Kill(pid int) error { return unix.Kill(pid, unix.SIGKILL) }
