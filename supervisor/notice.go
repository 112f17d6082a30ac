package supervisor

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// noticer writes the one-line denial notices a person sees on permwrap's
// stderr, rate-limited (a token bucket) so that a program looping on a
// denied path cannot flood the terminal. Suppressed lines are counted and
// the count is reported with the next line that gets through.
type noticer struct {
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

func newNoticer(w io.Writer) *noticer {
	return &noticer{w: w, tokens: noticeBurst, last: time.Now()}
}

// denied writes "permwrap: denied write /etc/hosts — reason (rule write:/etc/** from policy.jsonc:12)".
func (n *noticer) denied(v verdict, reason, by string) {
	n.line(denialLine(v, true, reason, by))
}

// denialLine is the one line that names a denial, for the person
// (noticer) and for the agent (tellAgent); withValue false leaves out the
// value (an exec's command body is not echoed to the agent). It is
// printable: a path may hold escape sequences, which must never reach a
// terminal.
func denialLine(v verdict, withValue bool, reason, by string) string {
	var b strings.Builder
	b.WriteString("permwrap: denied ")
	b.WriteString(v.access)
	if withValue && v.value != "" {
		b.WriteByte(' ')
		b.WriteString(v.value)
	}
	if reason != "" {
		b.WriteString(" — ")
		b.WriteString(reason)
	}
	if by != "" {
		b.WriteString(" (")
		b.WriteString(by)
		b.WriteByte(')')
	}
	return printable(b.String())
}

// printable replaces control characters with '?'.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

func (n *noticer) line(s string) {
	s = printable(s)
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

func (n *noticer) flush() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.suppressed > 0 {
		fmt.Fprintf(n.w, "permwrap: (%d more denials not shown; see the review log)\n", n.suppressed)
		n.suppressed = 0
	}
}
