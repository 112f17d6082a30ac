package terminal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/notify/host"
)

// The prompt borrows the screen through authority.Screen and finds the
// held notices by asserting authority.NoticeHolder: a renamed method
// would fail silently there, so the compiler checks both.
var (
	_ authority.Screen       = (*Relay)(nil)
	_ authority.NoticeHolder = (*Relay)(nil)
)

// Relay puts the command on a pseudo-terminal and copies between it and
// the real terminal, so that permwrap owns the screen: for a prompt it can
// pause the agent's output, show the question on the alternate screen,
// and give the agent its screen back (authority.Screen).
//
// Pausing is not buffering: while a prompt is up the relay stops reading
// the pty master, so the agent blocks in its own write once the pty's
// buffer is full, and nothing it printed is lost or replayed out of
// order. Input is routed by the same lock: keys typed at a prompt never
// reach the agent.
//
// Nothing permwrap prints lands inside the agent's frame. A notice (Write)
// is shown at once only when the agent is plainly writing lines:
// the pty is in canonical mode (no program has taken the keyboard raw, as
// every full-screen or incremental renderer does), the agent is on the
// main screen, the last thing it printed was a newline, and it has not
// drawn (cursor movement, erasing, a hidden cursor) since the terminal
// last entered canonical mode. Otherwise the notice waits for such a
// moment, and what never found one is printed when the command has
// exited and the terminal is the person's again.
type Relay struct {
	tty    *os.File // the real terminal (our stdin)
	out    *os.File // the real terminal (our stdout)
	outFd  int
	ptmx   *os.File // the pty master
	ptmxFd int
	pts    *os.File // the pty slave: the command's stdio until started

	saved *term.State

	mu      sync.Mutex // held while a chunk is written to out, or to flip paused
	cond    *sync.Cond
	paused  bool
	stopped bool
	screen  termState
	canon   bool // the pty's canonical mode when last looked at
	notes   noteQueue
	// settling: a flush of newly written notices is scheduled (Write).
	settling bool
	// pendingKey: the Ctrl-C typed at a prompt, waiting for the line
	// about the request it interrupted (Interrupt).
	pendingKey string
	outSeq     uint64    // chunks of the agent's output relayed
	lastOut    time.Time // when the last one was
	// shrunk: the pty is one column narrower than the terminal, so that
	// giving it its real width back is a real size change (see resume).
	shrunk   bool
	shrinkID uint64

	inMu sync.Mutex // held while a chunk of input is read and forwarded
	wake [2]int     // a pipe that interrupts the input poll
	done chan struct{}
}

// NewRelay opens a pty sized like the terminal: tty is the real
// terminal as permwrap reads it (its stdin), out as it writes it (its
// stdout). It does not touch the terminal's mode until Start.
func NewRelay(tty, out *os.File) (*Relay, error) {
	ptmx, pts, err := pty.Open()
	if err != nil {
		return nil, err
	}
	// The descriptors are used in raw system calls from here on (Fd puts
	// a file in blocking mode once, not at every call).
	r := &Relay{tty: tty, out: out, outFd: int(out.Fd()), ptmx: ptmx, ptmxFd: int(ptmx.Fd()), pts: pts,
		done: make(chan struct{}), screen: newTermState(), canon: true}
	if ws, err := host.WinSize(r.outFd); err == nil {
		_ = host.SetWinSize(r.ptmxFd, ws)
	}
	r.cond = sync.NewCond(&r.mu)
	if err := host.WakePipe(&r.wake); err != nil {
		ptmx.Close()
		pts.Close()
		return nil, err
	}
	return r, nil
}

// PTS is the pty's slave end, the command's terminal: give it to the
// command as its stdio. Start closes permwrap's copy.
func (r *Relay) PTS() *os.File { return r.pts }

// Done is closed when the command's side of the pty is gone (every holder
// of the slave has closed it) and its last output has been relayed.
func (r *Relay) Done() <-chan struct{} { return r.done }

// Start puts the real terminal in raw mode (the pty's line discipline
// does the cooking now) and starts copying. Call after the command has
// been started on PTS.
func (r *Relay) Start() error {
	r.pts.Close()
	st, err := term.MakeRaw(int(r.tty.Fd()))
	if err != nil {
		return err
	}
	r.saved = st
	go r.copyOut()
	go r.copyIn()
	go r.notesLoop()
	return nil
}

// Stop restores the terminal and prints the notices that found no safe
// moment while the command ran. The command has exited by now and its
// output has been drained.
func (r *Relay) Stop() {
	host.Write(r.wake[1], []byte{1})
	r.mu.Lock()
	r.paused = false
	r.stopped = true
	r.cond.Broadcast()
	lines, dropped := r.notes.take()
	alt := r.screen.alt
	r.mu.Unlock()
	if r.saved != nil {
		_ = term.Restore(int(r.tty.Fd()), r.saved)
	}
	if len(lines) == 0 {
		return
	}
	var b strings.Builder
	if alt {
		// The command left the alternate screen on; the summary belongs
		// on the main one, under what the person last saw there.
		b.WriteString("\x1b[?1049l")
	}
	b.WriteString("\x1b[0m\r\n")
	n := len(lines) + dropped
	fmt.Fprintf(&b, "permwrap: %d %s not shown while the command had the terminal:\r\n", n, plural(n, "notice was", "notices were"))
	b.WriteString(noteText(lines, dropped))
	_, _ = r.out.WriteString(b.String())
}

// noteText is the held notices as terminal lines, the count of those
// dropped first.
func noteText(lines []string, dropped int) string {
	var b strings.Builder
	if dropped > 0 {
		fmt.Fprintf(&b, "permwrap: (%d earlier notices dropped; see the review log: permwrap log --denied)\r\n", dropped)
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\r\n")
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Resize copies the terminal's size to the pty; the kernel signals the
// command's foreground process group. While the pty is shrunk for a
// repaint, it stays one column narrower than the terminal.
func (r *Relay) Resize() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setSizeLocked()
}

func (r *Relay) setSizeLocked() {
	ws, err := host.WinSize(r.outFd)
	if err != nil {
		return
	}
	if r.shrunk && ws.Col > 1 {
		ws.Col--
	}
	_ = host.SetWinSize(r.ptmxFd, ws)
}

func (r *Relay) copyOut() {
	defer close(r.done)
	buf := make([]byte, 32<<10)
	fds := []unix.PollFd{{Fd: int32(r.ptmxFd), Events: unix.POLLIN}}
	for {
		// Wait for output without taking it: until it is read below, under
		// the lock, it is unread for a notice (safeLocked), so no notice
		// is shown ahead of output the agent wrote before it. (Read
		// outside the lock, a chunk the relay held but had not relayed
		// yet was invisible to that check: under load a notice came
		// first.)
		fds[0].Revents = 0
		if _, err := host.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		r.mu.Lock()
		for r.paused {
			r.cond.Wait()
		}
		// Only this goroutine reads the master: what poll saw is there,
		// so the read does not wait (a hang-up answers EIO at once).
		n, err := host.Read(r.ptmxFd, buf)
		if n > 0 {
			r.sampleCanonLocked()
			r.relayLocked(buf[:n])
			r.outSeq++
			r.lastOut = time.Now()
			r.flushNotesLocked(true)
		}
		r.mu.Unlock()
		if err != nil && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			return // EIO once every holder of the slave is gone
		}
		if n == 0 && err == nil {
			return
		}
	}
}

// relayLocked writes a chunk of the agent's output. While notices wait,
// it goes line by line, so a notice can follow the first line the agent
// finishes instead of waiting for a chunk that happens to end with one.
func (r *Relay) relayLocked(data []byte) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if r.notes.empty() || i < 0 {
			r.screen.scan(data)
			_, _ = r.out.Write(data)
			return
		}
		r.screen.scan(data[:i+1])
		_, _ = r.out.Write(data[:i+1])
		data = data[i+1:]
		r.flushNotesLocked(false)
	}
}

// copyIn forwards the person's keys to the command. It reads the
// terminal through an open file description of its own in non-blocking
// mode: another reader of the terminal (a prompt's terminal library,
// whose reading goroutine can outlive its prompt by a moment) may take
// the bytes a poll announced, and a blocking read would then wait, with
// inMu held, for the next key, and the next prompt (Acquire) with it,
// with nothing on the screen to answer.
func (r *Relay) copyIn() {
	buf := make([]byte, 4096)
	ttyFd := int(r.tty.Fd())
	readFd := ttyFd
	if fd, err := host.Open("/proc/self/fd/"+strconv.Itoa(ttyFd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err == nil {
		readFd = fd
		defer host.Close(fd)
	}
	fds := []unix.PollFd{{Fd: int32(ttyFd), Events: unix.POLLIN}, {Fd: int32(r.wake[0]), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := host.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			var b [64]byte
			host.Read(r.wake[0], b[:])
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
		// Still there? (Without a description of its own, when /proc is
		// missing, this narrows the window in which another reader can
		// leave the read below waiting.)
		still := []unix.PollFd{{Fd: int32(ttyFd), Events: unix.POLLIN}}
		if n, err := host.Poll(still, 0); err == nil && (n == 0 || still[0].Revents&unix.POLLIN == 0) {
			r.inMu.Unlock()
			continue
		}
		n, err := host.Read(readFd, buf)
		if n > 0 {
			_, _ = host.Write(r.ptmxFd, buf[:n])
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

func (r *Relay) isPaused() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paused
}

func (r *Relay) waitUnpaused() {
	r.mu.Lock()
	for r.paused {
		r.cond.Wait()
	}
	r.mu.Unlock()
}

// forwardTypedAhead hands the agent the keys that were typed before the
// prompt appeared: they were meant for it, not for the question the
// person has not seen yet. Called with inMu held.
func (r *Relay) forwardTypedAhead() {
	fd := int(r.tty.Fd())
	buf := make([]byte, 4096)
	for i := 0; i < 16; i++ {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if n, err := host.Poll(fds, 0); err != nil || n == 0 || fds[0].Revents&unix.POLLIN == 0 {
			return
		}
		n, err := host.Read(fd, buf)
		if n > 0 {
			_, _ = host.Write(r.ptmxFd, buf[:n])
		}
		if err != nil || n == 0 {
			return
		}
	}
}

// Acquire implements authority.Screen: the agent's output stops, its
// terminal modes are put aside, and the prompt gets the terminal on the
// alternate screen. release undoes all of it and makes the agent redraw
// when its screen was lost.
func (r *Relay) Acquire(ctx context.Context) (io.Reader, io.Writer, int, int, func(), error) {
	select {
	case <-r.done:
		return nil, nil, 0, 0, nil, errors.New("the terminal relay has stopped")
	default:
	}
	r.inMu.Lock() // no input is being forwarded past this point
	r.forwardTypedAhead()
	r.mu.Lock() // no output is being written past this point
	if r.stopped {
		r.mu.Unlock()
		r.inMu.Unlock()
		return nil, nil, 0, 0, nil, errors.New("the terminal relay has stopped")
	}
	r.paused = true
	screen := r.screen
	pre, pushedKitty := screen.putAside()
	_, _ = r.out.WriteString(pre)
	if screen.alt && !r.shrunk {
		// The prompt clears the agent's alternate screen, so the agent
		// must repaint after it. Full-screen programs repaint on a real
		// size change (Node only then); make the pty one column narrower
		// now, while the person reads, and give the width back after.
		r.shrunk = true
		r.setSizeLocked()
	}
	r.shrinkID++ // a restore still pending from an earlier prompt is void
	r.mu.Unlock()
	r.inMu.Unlock()

	w, h := 80, 24
	if ws, err := host.WinSize(r.outFd); err == nil {
		w, h = int(ws.Col), int(ws.Row)
	}
	in, err := dupFile(r.tty)
	if err != nil {
		r.resume(screen, pushedKitty)
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
			r.resume(screen, pushedKitty)
		})
	}
	return in, r.out, w, h, release, nil
}

// Interrupt implements authority.Interrupter: the Ctrl-C the person
// pressed at the prompt reaches the program as if typed to it. The pty's
// line discipline makes it a SIGINT for the foreground job when the
// program reads lines (a shell, a build), and a full-screen agent reading
// raw keys gets the key in the encoding it asked for.
//
// The key waits for the person's line about the request it interrupted,
// which the supervisor writes before it answers the call (Write): sent
// at once, it ends the job, and the shell's next prompt (and its line
// editor's raw mode) is on the screen before that line, which then finds
// no safe moment until the next command. So the line is shown, or held,
// and then the key sent, while the call still waits (the supervisor
// waits for the job to take the signal before answering). With no line
// (one the Noticer's rate limit dropped) the key goes after
// interruptWait.
func (r *Relay) Interrupt() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	r.pendingKey = r.screen.ctrlC()
	time.AfterFunc(interruptWait, r.sendPendingKey)
}

// interruptWait bounds how long an interrupting key waits for the line
// about the request it interrupted.
const interruptWait = 250 * time.Millisecond

// sendPendingKey writes the interrupting key Interrupt held, once.
func (r *Relay) sendPendingKey() {
	r.inMu.Lock()
	defer r.inMu.Unlock()
	r.mu.Lock()
	key, stopped := r.pendingKey, r.stopped
	r.pendingKey = ""
	r.mu.Unlock()
	if key == "" || stopped {
		return
	}
	_, _ = host.Write(r.ptmxFd, []byte(key))
}

// resume gives the agent its screen and modes back. A main screen comes
// back byte for byte from the terminal's own save; an alternate screen
// is repainted by the agent, on the real size change that giving the pty
// its width back makes.
func (r *Relay) resume(screen termState, pushedKitty bool) {
	r.mu.Lock()
	_, _ = r.out.WriteString(screen.restore(pushedKitty))
	r.paused = false
	r.cond.Broadcast()
	r.flushNotesLocked(true)
	if !r.shrunk {
		r.mu.Unlock()
		return
	}
	id, seq := r.shrinkID, r.outSeq
	r.mu.Unlock()
	go r.unshrink(id, seq)
}

// Repaint timing: the agent must see the narrow size before the real one
// comes back, or a program that compares sizes (Node) sees no change. It
// handles the first SIGWINCH once its output can flow again, so the
// width is given back when its output has gone quiet after resuming (it
// has drawn the narrow frame), and at the latest after repaintMax.
const (
	repaintQuiet = 100 * time.Millisecond
	repaintMax   = time.Second
)

func (r *Relay) unshrink(id, seq uint64) {
	deadline := time.Now().Add(repaintMax)
	for {
		time.Sleep(repaintQuiet / 4)
		r.mu.Lock()
		if r.shrinkID != id || r.stopped {
			r.mu.Unlock()
			return // another prompt took the screen; its resume gives the width back
		}
		drew := r.outSeq != seq
		quiet := time.Since(r.lastOut) >= repaintQuiet
		if (drew && quiet) || time.Now().After(deadline) {
			r.shrunk = false
			r.setSizeLocked()
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
	}
}

// sampleCanonLocked looks at the pty's line discipline. A return to
// canonical mode means no program holds the keyboard raw any more (a
// shell runs the next command): what was drawn before is not the frame
// of whatever writes now.
func (r *Relay) sampleCanonLocked() bool {
	canon, err := host.Canonical(r.ptmxFd)
	if err != nil {
		return false
	}
	if canon && !r.canon {
		r.screen.drew = false
	}
	r.canon = canon
	return canon
}

// safeLocked reports whether a line of permwrap's can be written now
// without landing inside the agent's frame (see Relay). unread: the
// agent may have written output the relay has not read yet, which came
// before the notice and must be shown first.
func (r *Relay) safeLocked(unread bool) bool {
	if r.paused || r.stopped {
		return false
	}
	// A notice queued while the terminal was in line mode was about a
	// process writing lines; the output still to be relayed from then is
	// scanned on its way (drawing would show), so line mode then counts.
	canon := r.sampleCanonLocked() || r.notes.canon
	if !canon || r.screen.alt || r.screen.drew || !r.screen.lineStart {
		return false
	}
	// Output the agent wrote but the relay has not read yet comes first:
	// the state above does not know it (copyOut flushes after it). A
	// slave's write reaches the master's read buffer from a work queue,
	// late on a loaded machine; a poll of the master runs that work
	// (n_tty_poll flushes the port's buffer when nothing is readable), so
	// output written before the call this notice is about is counted.
	if unread {
		fds := []unix.PollFd{{Fd: int32(r.ptmxFd), Events: unix.POLLIN}}
		if _, err := host.Poll(fds, 0); err == nil && fds[0].Revents&unix.POLLIN != 0 {
			return false
		}
		if n, err := host.Unread(r.ptmxFd); err != nil || n > 0 {
			return false
		}
	}
	return true
}

func (r *Relay) flushNotesLocked(unread bool) {
	if r.notes.empty() || !r.safeLocked(unread) {
		return
	}
	_, _ = r.out.WriteString(noteText(r.notes.take()))
}

// notesLoop retries pending notices now and then: a shell returning to
// canonical mode for the next command prints nothing by itself.
func (r *Relay) notesLoop() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
			r.mu.Lock()
			r.flushNotesLocked(true)
			r.mu.Unlock()
		}
	}
}

// Write takes permwrap's own notices for the person (one or more lines):
// shown now when that is safe, else kept for a safe moment or for the
// summary at exit (see Relay). It never blocks on a prompt.
func (r *Relay) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		r.notes.add(strings.TrimRight(l, "\r"))
	}
	if !r.stopped && r.sampleCanonLocked() {
		r.notes.canon = true
	}
	if r.pendingKey != "" && !r.stopped {
		// The line about the request a Ctrl-C at the prompt interrupted:
		// shown now if that is safe (else held like any other), and
		// then the key goes, while the interrupted call still waits.
		r.flushNotesLocked(true)
		r.mu.Unlock()
		r.sendPendingKey()
		r.mu.Lock()
		return len(p), nil
	}
	if r.stopped {
		// The terminal is the person's again (cooked): print directly.
		lines, _ := r.notes.take()
		_, err := r.out.WriteString(strings.Join(lines, "\n") + "\n")
		return len(p), err
	}
	// Not at once: what the agent wrote just before the call that was
	// denied may still be on its way through the pty (the kernel moves a
	// slave's write to the master's buffer from a work queue, so the
	// unread count can still be 0). A moment later it has been read and
	// relayed, and the notice follows it; notesLoop retries after that.
	if !r.settling {
		r.settling = true
		time.AfterFunc(noticeSettle, func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.settling = false
			r.flushNotesLocked(true)
		})
	}
	return len(p), nil
}

// noticeSettle is how long a new notice waits for the agent's output
// written before it to come through the pty.
const noticeSettle = 30 * time.Millisecond

// HeldNotices lists the notices waiting for a safe moment, newest last,
// for the prompt to show (authority.NoticeHolder): its screen is the one
// place a person can read them while the agent draws.
func (r *Relay) HeldNotices() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.notes.lines...)
	if r.notes.dropped > 0 {
		out = append([]string{fmt.Sprintf("(%d earlier)", r.notes.dropped)}, out...)
	}
	return out
}

// noteQueue holds the notices waiting to be shown, the newest
// maxNotes of them; older ones are counted.
type noteQueue struct {
	lines   []string
	dropped int
	canon   bool // a notice was queued while the terminal was in line mode
}

const maxNotes = 50

func (q *noteQueue) add(l string) {
	if len(q.lines) == maxNotes {
		q.lines = append(q.lines[:0], q.lines[1:]...)
		q.dropped++
	}
	q.lines = append(q.lines, l)
}

func (q *noteQueue) empty() bool { return len(q.lines) == 0 && q.dropped == 0 }

func (q *noteQueue) take() ([]string, int) {
	l, d := q.lines, q.dropped
	q.lines, q.dropped, q.canon = nil, 0, false
	return l, d
}

func dupFile(f *os.File) (*os.File, error) {
	fd, err := host.DupCloexec(f)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
