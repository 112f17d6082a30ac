package supervisor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// relay puts the command on a pseudo-terminal and copies between it and
// the real terminal, so that permwrap owns the screen: for a prompt it can
// pause the agent's output, show the question on the alternate screen,
// and give the agent its screen back (authority.Screen).
//
// Pausing is not buffering: while a prompt is up the relay stops reading
// the pty master, so the agent blocks in its own write once the pty's
// buffer is full, and nothing it printed is lost or replayed out of
// order. Input is routed by the same lock: keys typed at a prompt never
// reach the agent.
type relay struct {
	tty  *os.File // the real terminal (our stdin)
	out  *os.File // the real terminal (our stdout)
	ptmx *os.File // the pty master
	pts  *os.File // the pty slave: the command's stdio until started

	saved *term.State

	mu     sync.Mutex // held while a chunk is written to out, or to flip paused
	cond   *sync.Cond
	paused bool
	modes  modeTracker

	notes []byte // notices written while a prompt was up, shown after it

	inMu sync.Mutex // held while a chunk of input is read and forwarded
	wake [2]int     // a pipe that interrupts the input poll
	done chan struct{}
}

// newRelay opens a pty sized like the terminal. It does not touch the
// terminal's mode until start.
func newRelay(tty, out *os.File) (*relay, error) {
	ptmx, pts, err := pty.Open()
	if err != nil {
		return nil, err
	}
	if ws, err := unix.IoctlGetWinsize(int(out.Fd()), unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(int(ptmx.Fd()), unix.TIOCSWINSZ, ws)
	}
	r := &relay{tty: tty, out: out, ptmx: ptmx, pts: pts, done: make(chan struct{})}
	r.cond = sync.NewCond(&r.mu)
	if err := unix.Pipe2(r.wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		ptmx.Close()
		pts.Close()
		return nil, err
	}
	return r, nil
}

// start puts the real terminal in raw mode (the pty's line discipline
// does the cooking now) and starts copying. Call after the command has
// been started on r.pts.
func (r *relay) start() error {
	r.pts.Close()
	st, err := term.MakeRaw(int(r.tty.Fd()))
	if err != nil {
		return err
	}
	r.saved = st
	go r.copyOut()
	go r.copyIn()
	return nil
}

// stop restores the terminal. Output still queued in the pty is drained
// first (the command has exited by now).
func (r *relay) stop() {
	unix.Write(r.wake[1], []byte{1})
	r.mu.Lock()
	r.paused = false
	r.cond.Broadcast()
	r.mu.Unlock()
	if r.saved != nil {
		_ = term.Restore(int(r.tty.Fd()), r.saved)
	}
}

// resize copies the terminal's size to the pty; the kernel signals the
// command's foreground process group.
func (r *relay) resize() {
	if ws, err := unix.IoctlGetWinsize(int(r.out.Fd()), unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(int(r.ptmx.Fd()), unix.TIOCSWINSZ, ws)
	}
}

func (r *relay) copyOut() {
	defer close(r.done)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.ptmx.Read(buf)
		if n > 0 {
			r.mu.Lock()
			for r.paused {
				r.cond.Wait()
			}
			r.modes.scan(buf[:n])
			_, _ = r.out.Write(buf[:n])
			r.mu.Unlock()
		}
		if err != nil {
			return // EIO once every holder of the slave is gone
		}
	}
}

func (r *relay) copyIn() {
	buf := make([]byte, 4096)
	fds := []unix.PollFd{{Fd: int32(r.tty.Fd()), Events: unix.POLLIN}, {Fd: int32(r.wake[0]), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			var b [64]byte
			unix.Read(r.wake[0], b[:])
			select {
			case <-r.done:
				return
			default:
			}
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 && fds[0].Revents&unix.POLLIN == 0 {
			return
		}
		if fds[0].Revents&unix.POLLIN == 0 {
			continue
		}
		r.inMu.Lock()
		if r.isPaused() {
			// A prompt owns the keyboard; it reads the terminal itself.
			r.inMu.Unlock()
			r.waitUnpaused()
			continue
		}
		n, err := unix.Read(int(r.tty.Fd()), buf)
		if n > 0 {
			_, _ = r.ptmx.Write(buf[:n])
		}
		r.inMu.Unlock()
		if err != nil && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			return
		}
		if n == 0 && err == nil {
			return
		}
	}
}

func (r *relay) isPaused() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paused
}

func (r *relay) waitUnpaused() {
	r.mu.Lock()
	for r.paused {
		r.cond.Wait()
	}
	r.mu.Unlock()
}

// Acquire implements authority.Screen: the agent's output stops, its
// terminal modes are put aside, and the prompt gets the terminal on the
// alternate screen. release undoes all of it and asks the agent to redraw.
func (r *relay) Acquire(ctx context.Context) (io.Reader, io.Writer, int, int, func(), error) {
	select {
	case <-r.done:
		return nil, nil, 0, 0, nil, errors.New("the terminal relay has stopped")
	default:
	}
	r.inMu.Lock() // no input is being forwarded past this point
	r.mu.Lock()   // no output is being written past this point
	r.paused = true
	modes := r.modes
	var pre bytes.Buffer
	if !modes.alt {
		pre.WriteString("\x1b[?1049h") // save the agent's screen on the main buffer
	}
	pre.WriteString(modes.resetSeq())
	pre.WriteString("\x1b[H\x1b[2J")
	_, _ = r.out.Write(pre.Bytes())
	r.mu.Unlock()
	r.inMu.Unlock()

	w, h := 80, 24
	if ws, err := unix.IoctlGetWinsize(int(r.out.Fd()), unix.TIOCGWINSZ); err == nil {
		w, h = int(ws.Col), int(ws.Row)
	}
	in, err := dupFile(r.tty)
	if err != nil {
		r.resume(modes)
		return nil, nil, 0, 0, nil, err
	}
	var once sync.Once
	release := func() {
		once.Do(func() {
			in.Close()
			// The prompt's terminal library may have changed the mode;
			// the relay needs raw.
			if r.saved != nil {
				_, _ = term.MakeRaw(int(r.tty.Fd()))
			}
			r.resume(modes)
		})
	}
	return in, r.out, w, h, release, nil
}

// resume gives the agent its screen back and makes it redraw.
func (r *relay) resume(modes modeTracker) {
	r.mu.Lock()
	var post bytes.Buffer
	post.WriteString("\x1b[H\x1b[2J")
	if !modes.alt {
		post.WriteString("\x1b[?1049l")
	}
	post.WriteString(modes.restoreSeq())
	post.Write(r.notes)
	r.notes = nil
	_, _ = r.out.Write(post.Bytes())
	r.paused = false
	r.cond.Broadcast()
	r.mu.Unlock()
	// A full-screen agent repaints on SIGWINCH; a line-oriented one got
	// its screen back byte for byte from the alternate-screen switch.
	if pgrp, err := unix.IoctlGetInt(int(r.ptmx.Fd()), unix.TIOCGPGRP); err == nil && pgrp > 0 {
		_ = unix.Kill(-pgrp, unix.SIGWINCH)
	}
}

func dupFile(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// modeTracker follows the DEC private modes an agent turns on and off in
// its output, so a prompt can put them aside and restore them: the
// alternate screen, cursor visibility, application cursor keys, mouse
// reporting and bracketed paste. Sequences split across reads are
// handled by keeping a short tail.
type modeTracker struct {
	alt   bool
	set   map[int]bool // mode → on
	carry []byte
}

var trackedModes = []int{1, 25, 1000, 1002, 1003, 1006, 2004}

func (m *modeTracker) scan(b []byte) {
	if m.set == nil {
		m.set = map[int]bool{}
	}
	data := b
	if len(m.carry) > 0 {
		data = append(append([]byte(nil), m.carry...), b...)
		m.carry = m.carry[:0]
	}
	for i := 0; i < len(data); i++ {
		if data[i] != 0x1b {
			continue
		}
		rest := data[i:]
		if len(rest) < 4 {
			m.carry = append(m.carry[:0], rest...)
			return
		}
		if rest[1] != '[' || rest[2] != '?' {
			continue
		}
		j := 3
		for j < len(rest) && (rest[j] >= '0' && rest[j] <= '9' || rest[j] == ';') {
			j++
		}
		if j == len(rest) {
			if len(rest) < 32 {
				m.carry = append(m.carry[:0], rest...)
			}
			return
		}
		on := rest[j] == 'h'
		if !on && rest[j] != 'l' {
			continue
		}
		for _, f := range bytes.Split(rest[3:j], []byte{';'}) {
			n, err := strconv.Atoi(string(f))
			if err != nil {
				continue
			}
			switch n {
			case 47, 1047, 1049:
				m.alt = on
			default:
				m.set[n] = on
			}
		}
		i += j
	}
}

// resetSeq turns off what the agent turned on (and shows the cursor).
func (m *modeTracker) resetSeq() string {
	var b bytes.Buffer
	for _, n := range trackedModes {
		if n == 25 {
			continue
		}
		if m.set[n] {
			b.WriteString("\x1b[?" + strconv.Itoa(n) + "l")
		}
	}
	b.WriteString("\x1b[?25h")
	return b.String()
}

// restoreSeq puts the agent's modes back.
func (m *modeTracker) restoreSeq() string {
	var b bytes.Buffer
	for _, n := range trackedModes {
		on, ok := m.set[n]
		if !ok {
			continue
		}
		c := "l"
		if on {
			c = "h"
		}
		b.WriteString("\x1b[?" + strconv.Itoa(n) + c)
	}
	return b.String()
}

// Write shows permwrap's own notices on the relayed terminal: lines end in
// CRLF (the terminal is raw), they never cut into the middle of a chunk of
// the agent's output, and while a prompt is up they wait (bounded) and are
// shown when it ends. It never blocks on a prompt.
func (r *relay) Write(p []byte) (int, error) {
	line := bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.paused {
		if len(r.notes) < 64<<10 {
			r.notes = append(r.notes, line...)
		}
		return len(p), nil
	}
	_, err := r.out.Write(line)
	return len(p), err
}
