package terminal

import (
	"strings"
	"testing"
)

// scanSplit feeds s one byte at a time and whole, and checks both give
// the same state: sequences split across reads are followed.
func scanSplit(t *testing.T, s string) termState {
	t.Helper()
	whole, split := newTermState(), newTermState()
	whole.scan([]byte(s))
	for i := 0; i < len(s); i++ {
		split.scan([]byte{s[i]})
	}
	if a, b := whole.putAsideString(), split.putAsideString(); a != b {
		t.Fatalf("split reads differ:\n%q\n%q", a, b)
	}
	return whole
}

func (t termState) putAsideString() string {
	s, _ := t.putAside()
	return s + "|" + t.restore(true)
}

func TestTermStateModes(t *testing.T) {
	ts := scanSplit(t, "\x1b[?1049h\x1b[?1000;1006h\x1b[?2004h\x1b[?25l\x1b[>4;2m\x1b=\x1b[>1u\x1b[3;20r")
	if !ts.alt || !ts.modes[1000] || !ts.modes[1006] || !ts.modes[2004] || ts.modes[25] || ts.mok != 2 || !ts.keypad || ts.kittyFlags() != 1 || ts.top != 3 || ts.bot != 20 {
		t.Fatalf("%+v", ts)
	}
	pre, pushed := ts.putAside()
	for _, want := range []string{"\x1b7", "\x1b[>0u", "\x1b[?1000l", "\x1b[?1006l", "\x1b[?2004l", "\x1b[>4;0m", "\x1b>", "\x1b[r", "\x1b[?25h", "\x1b[2J"} {
		if !strings.Contains(pre, want) {
			t.Errorf("put aside lacks %q: %q", want, pre)
		}
	}
	if strings.Contains(pre, "\x1b[?1049h") {
		t.Error("switched screens for an agent already on the alternate screen")
	}
	post := ts.restore(pushed)
	for _, want := range []string{"\x1b[<u", "\x1b[3;20r", "\x1b8", "\x1b[?1000h", "\x1b[?1006h", "\x1b[?2004h", "\x1b[?25l", "\x1b[>4;2m", "\x1b="} {
		if !strings.Contains(post, want) {
			t.Errorf("restore lacks %q: %q", want, post)
		}
	}
	if strings.Index(post, "\x1b[3;20r") > strings.Index(post, "\x1b8") {
		t.Error("the scrolling region (which homes the cursor) comes after the cursor is restored")
	}
}

// Kitty keyboard flags are kept per screen, as terminals keep them.
func TestTermStateKittyPerScreen(t *testing.T) {
	ts := scanSplit(t, "\x1b[>1u\x1b[?1049h")
	if ts.kittyFlags() != 0 {
		t.Fatalf("the alternate screen has its own stack: %d", ts.kittyFlags())
	}
	pre, pushed := ts.putAside()
	if pushed || strings.Contains(pre, "\x1b[>0u") {
		t.Fatal("pushed for a screen whose flags are 0")
	}
	ts = scanSplit(t, "\x1b[>1u\x1b[>3u\x1b[<u\x1b[=8;2u")
	if ts.kittyFlags() != 1|8 {
		t.Fatalf("flags %d", ts.kittyFlags())
	}
	// On the main screen the prompt goes to the alternate one, whose
	// stack is empty: nothing to push.
	if _, pushed := ts.putAside(); pushed {
		t.Fatal("pushed for the prompt's own (alternate) screen")
	}
}

func TestTermStateLineStartAndDrawing(t *testing.T) {
	for _, c := range []struct {
		out             string
		lineStart, drew bool
	}{
		{"hello\r\n", true, false},
		{"hello", false, false},
		{"50%\r", false, false},
		{"\x1b[1mbold\x1b[0m\r\n", true, false},
		{"\x1b]0;title\x07done\r\n", true, false},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\r\n", true, false},
		// log-update (ink): erase lines upwards, then the frame.
		{"\x1b[2K\x1b[1A\x1b[2K\x1b[G frame\n", true, true},
		{"\x1b[?25lspinner\n", true, true},
		{"\x1b[5;1Hx\r\n", true, true},
		{"\x1b7\x1b8\n", true, true},
		// A sequence split in the middle of its parameters.
		{"\x1b[1", true, false},
	} {
		ts := scanSplit(t, c.out)
		if ts.lineStart != c.lineStart || ts.drew != c.drew {
			t.Errorf("%q: lineStart %v drew %v, want %v %v", c.out, ts.lineStart, ts.drew, c.lineStart, c.drew)
		}
	}
}

// Output crafted to break the parser (overlong parameters, strings that
// never end) leaves it working for what follows.
func TestTermStateHostile(t *testing.T) {
	ts := newTermState()
	ts.scan([]byte("\x1b[" + strings.Repeat("9", 10000) + "h"))
	ts.scan([]byte("\x1b[?1049h"))
	if !ts.alt {
		t.Fatal("parser stuck after an overlong sequence")
	}
	ts.scan([]byte("\x1b]" + strings.Repeat("x", 100000)))
	ts.scan([]byte("\x07\x1b[?1049l"))
	if ts.alt {
		t.Fatal("parser stuck after a long string")
	}
	ts.scan([]byte("\x1bc"))
	if ts.alt || len(ts.modes) != 0 || !ts.drew {
		t.Fatal("RIS did not reset")
	}
}

// Where a terminal (xterm, VTE) and a general-purpose parser part ways,
// termState follows the terminal: these are the cases that kept
// github.com/charmbracelet/x/ansi's Parser out (see termstate.go).
func TestTermStateFollowsTheTerminal(t *testing.T) {
	for _, c := range []struct {
		name, out      string
		alt, lineStart bool
	}{
		// 1049 + 2^64: a parameter too large for an int is no mode.
		{"overlong parameter", "\x1b[?18446744073709552665h", false, true},
		{"private marker after a parameter voids the sequence", "\x1b[?10?49h", false, true},
		{"a parameter after an intermediate voids the sequence", "\r\n\x1b[ 1q", false, true},
		{"an escape ends an unfinished UTF-8 character", "\xe2\x1b[?1049h", true, false},
		{"a stray C1 byte starts no string", "x\x9dok\n", false, true},
		{"an APC string with UTF-8 is skipped whole", "ok\n\x1b_é x\x1b\\", false, true},
	} {
		ts := scanSplit(t, c.out)
		if ts.alt != c.alt || ts.lineStart != c.lineStart {
			t.Errorf("%s: %q: alt %v lineStart %v, want %v %v", c.name, c.out, ts.alt, ts.lineStart, c.alt, c.lineStart)
		}
	}
}

// A Ctrl-C passed on from the prompt is spelled as the person's terminal
// would spell it for the keyboard mode the agent set.
func TestTermStateCtrlC(t *testing.T) {
	for _, c := range []struct{ name, out, want string }{
		{"plain", "", "\x03"},
		{"kitty disambiguate", "\x1b[>1u", "\x1b[99;5u"},
		{"kitty all keys", "\x1b[>8u", "\x1b[99;5u"},
		{"kitty event types only", "\x1b[>2u", "\x03"},
		{"kitty popped", "\x1b[>1u\x1b[<u", "\x03"},
		{"kitty on the other screen", "\x1b[>1u\x1b[?1049h", "\x03"},
		{"modifyOtherKeys 2", "\x1b[>4;2m", "\x1b[27;5;99~"},
		{"modifyOtherKeys 1", "\x1b[>4;1m", "\x03"},
	} {
		ts := scanSplit(t, c.out)
		if got := ts.ctrlC(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
