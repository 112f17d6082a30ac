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

// contentFact is what looking at a file's content found.
type contentFact uint8

const (
	// contentUnknown: not looked at, or it cannot be known before the
	// call is performed: the stricter answer stands (fail-closed).
	contentUnknown contentFact = iota
	// contentPlain: no secret (an empty, new or truncated file, or not a
	// file with content at all).
	contentPlain
	// contentSecret: the file looks secret (or could not be read).
	contentSecret
)

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

// lookAtContent looks at what the open would hand over, once: the facts
// above, and for a plain read of an existing regular file, the file
// itself, opened now and kept for perform to install.
func (c *openCall) lookAtContent() contentFact {
	if !c.looked {
		c.looked = true
		c.fact = c.look()
	}
	return c.fact
}

func (c *openCall) look() contentFact {
	r := c.path
	switch {
	case r.Kind != pin.KindPath:
		return contentUnknown
	case c.flags&oTmpfileBit != 0:
		return contentPlain // a new, unnamed, empty file
	case !r.Exists && c.flags&unix.O_CREAT != 0:
		// The open creates the file: it is empty. Without O_EXCL a file
		// that appeared meanwhile would be opened instead: perform looks.
		c.assumedPlain = true
		return contentPlain
	case !r.Exists:
		return contentUnknown // answered ENOENT (kernelAnswer)
	case !isRegular(r):
		// Not a file with content; perform checks it is still so.
		c.assumedPlain = true
		return contentPlain
	case c.flags&unix.O_TRUNC != 0:
		// Only opened if the write is allowed too, and then emptied
		// before the fd exists: what it held cannot be read through it.
		return contentPlain
	case c.access != engine.AccessRead:
		return contentUnknown // read and write: it cannot be opened before deciding
	}
	f, err := pin.Open(r, c.openFlags(), c.mode, c.umask)
	if err != nil {
		// The kernel refused the target's own open: that is the answer
		// (kernelAnswer), whatever the content.
		c.openErr = err
		return contentUnknown
	}
	c.opened = f
	if looksSecret(r.Path, f) {
		return contentSecret
	}
	return contentPlain
}

// judgeContent is one policy's answer knowing the content. Pure.
func (c *openCall) judgeContent(p *engine.Policy, v verdict, f contentFact) verdict {
	if f == contentUnknown {
		return v
	}
	v.result = p.DecidePathContent(c.access, c.path.Path, f == contentSecret)
	return v
}

// plainStill checks, after perform opened a file that was decided on as
// holding no content (pinned as a directory, device, FIFO or socket, or
// missing and created by the open), that what it opened does not look
// secret: a file swapped in or created meanwhile.
func (c *openCall) plainStill(path *pin.Resolved, f *pin.File) bool {
	return !c.assumedPlain || !looksSecret(path.Path, f)
}
