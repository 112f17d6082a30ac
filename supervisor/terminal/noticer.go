package terminal

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/permwrap/permwrap/internal/display"
)

// Noticer writes the one-line notices a person sees, rate-limited (a
// token bucket) so that a program looping on a denied path cannot flood
// the terminal. Suppressed lines are counted and the count is reported
// with the next line that gets through. On a relayed terminal it writes
// to the Relay, which decides when a line may be shown.
type Noticer struct {
	mu         sync.Mutex
	w          io.Writer
	tokens     float64
	last       time.Time
	suppressed int
}

const (
	noticeBurst = 10  // lines at once
	noticeRate  = 2.0 // lines per second after the burst
	noticeWidth = 300 // characters of one line at most
)

// NewNoticer returns a Noticer writing to w (the Relay, or permwrap's
// stderr).
func NewNoticer(w io.Writer) *Noticer {
	return &Noticer{w: w, tokens: noticeBurst, last: time.Now()}
}

// Line writes s as one line, made printable and cut to noticeWidth
// characters, unless the rate limit suppresses it.
func (n *Noticer) Line(s string) {
	s = display.Printable(s)
	if len([]rune(s)) > noticeWidth {
		s = string([]rune(s)[:noticeWidth-1]) + "…"
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	n.tokens = min(noticeBurst, n.tokens+now.Sub(n.last).Seconds()*noticeRate)
	n.last = now
	if n.tokens < 1 {
		n.suppressed++
		return
	}
	n.tokens--
	if n.suppressed > 0 {
		fmt.Fprintf(n.w, "permwrap: (%d more denials not shown; see the review log)\n", n.suppressed)
		n.suppressed = 0
	}
	fmt.Fprintln(n.w, s)
}

// Flush reports the count of lines still suppressed, if any (at the end
// of the run).
func (n *Noticer) Flush() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.suppressed > 0 {
		fmt.Fprintf(n.w, "permwrap: (%d more denials not shown; see the review log)\n", n.suppressed)
		n.suppressed = 0
	}
}
