package terminal

import (
	"fmt"
	"strings"
	"testing"
)

// tuiOutput is about n bytes of what agents write to their terminal: an
// incremental renderer's frames (synchronized output, lines erased
// upwards, 24-bit colours, box drawing, a hidden cursor), a title, a
// hyperlink, and plain log lines between frames.
func tuiOutput(n int) []byte {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString("\x1b[?2026h\x1b[?25l")
		for range 6 {
			b.WriteString("\x1b[2K\x1b[1A")
		}
		b.WriteString("\x1b[2K\x1b[G")
		fmt.Fprintf(&b, "\x1b[38;2;215;119;87m╭──────────────────────────────╮\x1b[39m\r\n")
		fmt.Fprintf(&b, "\x1b[38;2;215;119;87m│\x1b[39m \x1b[1m✻ Thinking…\x1b[22m (%ds · esc to interrupt) \x1b[38;2;215;119;87m│\x1b[39m\r\n", i%60)
		b.WriteString("\x1b[2m  ⎿  Read 120 lines (ctrl+r to expand)\x1b[22m\r\n")
		b.WriteString("\x1b[38;2;215;119;87m╰──────────────────────────────╯\x1b[39m\r\n")
		b.WriteString("\x1b[?2026l")
		if i%8 == 0 {
			fmt.Fprintf(&b, "\x1b]0;✳ permwrap task %d\x07", i)
			b.WriteString("\x1b]8;;https://example.com/docs\x1b\\docs\x1b]8;;\x1b\\\r\n")
			for j := range 5 {
				fmt.Fprintf(&b, "ok   github.com/example/pkg%d\t0.%03ds\n", j, i%1000)
			}
		}
	}
	return []byte(b.String())
}

// BenchmarkTermStateScan scans 1 MB of agent output in the relay's 32 KiB
// reads.
func BenchmarkTermStateScan(b *testing.B) {
	out := tuiOutput(1 << 20)
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		ts := newTermState()
		for chunk := range slicesOf(out, 32<<10) {
			ts.scan(chunk)
		}
	}
}

func slicesOf(b []byte, n int) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) > 0 {
			k := min(n, len(b))
			if !yield(b[:k]) {
				return
			}
			b = b[k:]
		}
	}
}
