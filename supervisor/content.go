package supervisor

import (
	"sync"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify/pin"
)

// Content rules (`{"action": "ask", "content": "secret"}`): a `.pem`,
// `.key`, `.env.*` or `.npmrc` asks only when it holds secret material.
// The engine answers such a read with DependsOnContent set and the
// stricter answer; the supervisor then looks at the content and asks the
// engine again (engine.DecidePathContent).
//
// It looks at the very file it will hand over, never at the path again:
// for a read-only open of what was pinned as a regular file, the open is
// made first (with the target's own flags and credentials: a read-only
// open changes nothing), the first engine.SecretScanLimit bytes are read
// from offset 0 of that fd with pread (the target's offset stays 0), and
// that same fd is installed if the answer allows. A name swapped after
// the check cannot slip another file in.
//
// An open that creates the file (O_CREAT of a missing name, O_TMPFILE)
// or truncates it (O_TRUNC) gets an empty file: not secret. Anything else
// keeps the stricter answer (fail-closed):
//   - an open of an existing file that reads and writes it without
//     truncating (O_RDWR): it cannot be made before the decision;
//   - renames and links of such files (engine.DecideMoveContent): they
//     act on names, and a file swapped under the name between the look
//     and the rename would be moved on the strength of another file's
//     content — there is no fd to hold on to.
//
// A directory, device, FIFO or socket holds no secret (it is not opened
// early: a FIFO's open blocks, a device's may act). If one is swapped
// for a regular file before perform opens it, perform looks at what it
// opened and refuses it when it looks secret.

// contentCall is a call whose decision can depend on its file's content.
type contentCall interface {
	// judgeContent looks at the content (I/O on the object the call will
	// use) and answers again; v is judge's answer, with DependsOnContent.
	judgeContent(p *engine.Policy, v verdict) verdict
}

// headBufs are scan buffers of engine.SecretScanLimit bytes.
var headBufs = sync.Pool{New: func() any { b := make([]byte, engine.SecretScanLimit); return &b }}

// looksSecret reads f's head and asks engine.LooksSecret. Only a regular
// file holds content; one that cannot be read is secret.
func looksSecret(path string, f *pin.File) bool {
	var st unix.Stat_t
	if err := f.Stat(&st); err != nil {
		return true
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	bp := headBufs.Get().(*[]byte)
	defer headBufs.Put(bp)
	head, err := pin.ReadHead(f, *bp)
	if err != nil {
		return true
	}
	return engine.LooksSecret(path, head)
}

func (c *openCall) judgeContent(p *engine.Policy, v verdict) verdict {
	r := c.path
	if c.opened != nil {
		// Looked at already, for another layer of a nested chain.
		v.result = p.DecidePathContent(c.access, r.Path, c.openedSecret)
		return v
	}
	if c.openErr != nil {
		return v
	}
	plain := func() verdict {
		v.result = p.DecidePathContent(c.access, r.Path, false)
		return v
	}
	switch {
	case r.Kind != pin.KindPath:
		return v
	case c.flags&oTmpfileBit != 0:
		return plain() // a new, unnamed, empty file
	case !r.Exists && c.flags&unix.O_CREAT != 0:
		// The open creates the file: it is empty. Without O_EXCL a file
		// that appeared meanwhile would be opened instead: perform looks.
		c.assumedPlain = true
		return plain()
	case !r.Exists:
		return v // answered ENOENT (kernelAnswer)
	case !isRegular(r):
		// Not a file with content; perform checks it is still so.
		c.assumedPlain = true
		return plain()
	case c.flags&unix.O_TRUNC != 0:
		// Only opened if the write is allowed too, and then emptied
		// before the fd exists: what it held cannot be read through it.
		return plain()
	case c.access != engine.AccessRead:
		return v // read and write: it cannot be opened before deciding
	}
	f, err := pin.Open(r, c.openFlags(), c.mode, c.umask)
	if err != nil {
		// The kernel refused the target's own open: that is the answer
		// (kernelAnswer), whatever the content.
		c.openErr = err
		return v
	}
	c.opened = f
	c.openedSecret = looksSecret(r.Path, f)
	v.result = p.DecidePathContent(c.access, r.Path, c.openedSecret)
	return v
}

// plainStill checks, after perform opened a file that was decided on as
// holding no content (pinned as a directory, device, FIFO or socket, or
// missing and created by the open), that what it opened does not look
// secret: a file swapped in or created meanwhile.
func (c *openCall) plainStill(path *pin.Resolved, f *pin.File) bool {
	return !c.assumedPlain || !looksSecret(path.Path, f)
}
