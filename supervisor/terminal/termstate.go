package terminal

// Why not github.com/charmbracelet/x/ansi's Parser (v0.9.3, already a
// dependency through bubbletea): it carries sequences across reads and
// takes CSI prefixes and intermediates, but where it parts ways with a
// terminal the relay would misjudge the agent's screen (each case is in
// TestTermStateFollowsTheTerminal):
//   - an overlong parameter is not ignored: its digits accumulate in an
//     int that wraps, so "CSI ? 18446744073709552665 h" (1049 + 2^64)
//     switches to the alternate screen; parameters past the 32nd are
//     dropped and the sequence still acts;
//   - a private marker after a parameter is skipped, not voiding the
//     sequence: "CSI ? 10 ? 49 h" acts as mode 1049;
//   - a parameter byte after an intermediate ends the sequence, and its
//     final byte and what follows are printed (terminals ignore up to the
//     final byte);
//   - an unfinished UTF-8 character swallows the next bytes whatever they
//     are: "\xe2 ESC [ ? 1049 h" hides the switch to the alternate screen
//     (terminals drop the character at the ESC);
//   - C1 bytes (0x80-0x9f) act everywhere, so a stray byte of broken
//     UTF-8 (0x9d) opens an OSC string that hides the output after it;
//   - a UTF-8 lead byte (0xc2-0xf4) ends an SOS, PM or APC string, so
//     such a string with UTF-8 in it is not skipped whole.
//
// Its DecodeSequence is no better for a stream: it ends a BEL-terminated
// OSC only when the OSC began in the same read (HasOscPrefix of the
// buffer), and it measures every grapheme's width. The Parser is also
// slower here: 1 MB of agent output in 32 KiB reads scans at about
// 40-45 MB/s through it against 57-68 MB/s for termState (measured with
// BenchmarkTermStateScan and a port of termState's handlers onto the
// Parser's callbacks; 2 CPUs).

import (
	"strconv"
	"strings"
)

// termState follows what the agent's output does to the terminal, so the
// relay can put the agent's modes aside for a prompt and restore them
// after, and can tell when a line of its own would not land inside the
// agent's frame. It is a small VT parser: sequences split across reads
// are carried in its state, and strings (OSC, DCS, APC, ...) are skipped
// whole.
type termState struct {
	st     parseState
	prefix byte   // '?', '>', '<' or '=' after CSI, 0 when none
	params []byte // CSI parameter bytes (digits, ';', ':')
	long   bool   // parameters too long to keep: the sequence is ignored

	alt       bool         // on the alternate screen (47, 1047, 1049)
	modes     map[int]bool // DEC private modes the agent set (true) or reset (false)
	kittyMain []int        // kitty keyboard flags stack of the main screen, top last
	kittyAlt  []int        // ... of the alternate screen (terminals keep one each)
	mok       int          // xterm modifyOtherKeys level (CSI > 4 ; n m)
	keypad    bool         // application keypad (ESC =)
	top, bot  int          // scrolling region (DECSTBM); 0, 0 for the whole screen

	// lineStart: the last thing printed was a newline, so the cursor is
	// at the start of a fresh line.
	lineStart bool
	// drew: since the terminal was last seen entering canonical mode,
	// the agent moved the cursor, erased, set a scrolling region, hid the
	// cursor or switched screens — it draws frames, and a line of ours
	// would shift or be overwritten by its next one.
	drew bool
}

type parseState uint8

const (
	psGround parseState = iota
	psEsc
	psEscInter // ESC followed by intermediates: ESC ( B, ESC # 8, ...
	psCSI
	psString    // OSC, DCS, SOS, PM, APC: up to BEL or ST
	psStringEsc // ESC inside a string: ST if '\' follows
)

const maxParams = 64

func newTermState() termState {
	return termState{modes: map[int]bool{}, lineStart: true}
}

// scan follows b, the agent's output as written to the terminal.
func (t *termState) scan(b []byte) {
	for _, c := range b {
		t.step(c)
	}
}

func (t *termState) step(c byte) {
	switch t.st {
	case psGround:
		switch {
		case c == 0x1b:
			t.st = psEsc
		case c == '\n':
			t.lineStart = true
		case c == '\r', c == 0x07, c == 0x0e, c == 0x0f:
			// carriage return keeps a fresh line fresh; bell and the
			// charset shifts print nothing
		default:
			t.lineStart = false
		}
	case psEsc:
		t.st = psGround
		switch {
		case c == '[':
			t.st, t.prefix, t.params, t.long = psCSI, 0, t.params[:0], false
		case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
			t.st = psString
		case c == '7' || c == '8' || c == 'M' || c == 'D' || c == 'E':
			t.drew = true // save/restore cursor, index, reverse index, next line
		case c == 'c':
			t.reset()
		case c == '=':
			t.keypad = true
		case c == '>':
			t.keypad = false
		case c >= 0x20 && c <= 0x2f:
			t.st = psEscInter
		case c == 0x1b:
			t.st = psEsc
		}
	case psEscInter:
		if c < 0x20 || c > 0x2f {
			t.st = psGround
		}
	case psCSI:
		switch {
		case c >= 0x30 && c <= 0x3f:
			if len(t.params) == 0 && t.prefix == 0 && (c == '?' || c == '>' || c == '<' || c == '=') {
				t.prefix = c
			} else if len(t.params) < maxParams {
				t.params = append(t.params, c)
			} else {
				t.long = true
			}
		case c >= 0x20 && c <= 0x2f: // intermediates, kept to be recognised
			if len(t.params) < maxParams {
				t.params = append(t.params, c)
			} else {
				t.long = true
			}
		case c >= 0x40 && c <= 0x7e:
			t.st = psGround
			if !t.long {
				t.dispatch(c)
			}
		case c == 0x1b:
			t.st = psEsc
		case c == 0x18 || c == 0x1a:
			t.st = psGround
		}
	case psString:
		switch c {
		case 0x07:
			t.st = psGround
		case 0x1b:
			t.st = psStringEsc
		}
	case psStringEsc:
		if c == '\\' {
			t.st = psGround
		} else {
			t.st = psEsc
			t.step(c)
		}
	}
}

// args reads the CSI parameters; missing ones are -1. A parameter with
// sub-parameters (':') or intermediates is not a plain number: -2.
func (t *termState) args() []int {
	var out []int
	for _, f := range strings.Split(string(t.params), ";") {
		if f == "" {
			out = append(out, -1)
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			n = -2
		}
		out = append(out, n)
	}
	return out
}

func arg(a []int, i, def int) int {
	if i < len(a) && a[i] >= 0 {
		return a[i]
	}
	return def
}

func (t *termState) dispatch(final byte) {
	if strings.IndexFunc(string(t.params), func(r rune) bool { return r >= 0x20 && r <= 0x2f }) >= 0 {
		// A sequence with intermediates (DECSCUSR "CSI 2 SP q", ...):
		// nothing the relay follows.
		return
	}
	a := t.args()
	switch t.prefix {
	case '?':
		if final != 'h' && final != 'l' {
			return
		}
		on := final == 'h'
		for _, n := range a {
			switch {
			case n < 0:
			case n == 47 || n == 1047 || n == 1049:
				t.alt = on
				t.drew = true
			default:
				t.modes[n] = on
				if n == 25 && !on {
					t.drew = true // a hidden cursor: a program drawing a frame
				}
			}
		}
	case '>':
		switch final {
		case 'u': // kitty keyboard: push flags
			st := t.kitty()
			if len(*st) < 64 {
				*st = append(*st, arg(a, 0, 0))
			}
		case 'm': // xterm key modifier options: CSI > 4 ; n m
			if arg(a, 0, -1) == 4 {
				t.mok = arg(a, 1, 0)
			}
		}
	case '<':
		if final == 'u' { // kitty keyboard: pop n
			st := t.kitty()
			n := min(arg(a, 0, 1), len(*st))
			*st = (*st)[:len(*st)-n]
		}
	case '=':
		if final == 'u' { // kitty keyboard: set the top's flags
			st := t.kitty()
			if len(*st) == 0 {
				*st = append(*st, 0)
			}
			f, top := arg(a, 0, 0), &(*st)[len(*st)-1]
			switch arg(a, 1, 1) {
			case 1:
				*top = f
			case 2:
				*top |= f
			case 3:
				*top &^= f
			}
		}
	case 0:
		switch final {
		case 'r':
			t.top, t.bot = arg(a, 0, 0), arg(a, 1, 0)
			t.drew = true
		case 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'f', 'd', 'e', 'a', '`',
			'J', 'K', 'S', 'T', 'L', 'M', 'P', '@', 'X', 's', 'u':
			t.drew = true
		}
	}
}

// kitty is the keyboard-flags stack of the screen in use.
func (t *termState) kitty() *[]int {
	if t.alt {
		return &t.kittyAlt
	}
	return &t.kittyMain
}

// kittyFlags is the kitty keyboard flags in force on the screen in use.
func (t *termState) kittyFlags() int {
	st := *t.kitty()
	if len(st) == 0 {
		return 0
	}
	return st[len(st)-1]
}

// reset follows RIS (ESC c): the terminal is back to its defaults.
func (t *termState) reset() {
	*t = termState{modes: map[int]bool{}, lineStart: true, drew: true, params: t.params[:0]}
}

// promptModes are the DEC private modes that change what keys send or
// what the screen does with the prompt's drawing: application cursor
// keys and keypad, origin mode, every mouse and focus report and their
// encodings, alternate scroll, bracketed paste and synchronized output
// (an agent paused between the start and the end of a synchronized
// frame would otherwise hide the prompt).
var promptModes = []int{1, 6, 9, 66, 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1015, 1016, 2004, 2026}

// putAside is what the relay writes before a prompt: the agent's screen
// saved (the main screen by switching to the alternate one; the
// alternate screen by saving the cursor, since the agent repaints it),
// its modes off, a plain cleared screen. It reports whether it pushed a
// kitty keyboard level that restore must pop.
func (t *termState) putAside() (seq string, pushedKitty bool) {
	var b strings.Builder
	if t.alt {
		b.WriteString("\x1b7")
	} else {
		b.WriteString("\x1b[?1049h")
	}
	// The prompt is on the alternate screen now, with that screen's
	// kitty stack.
	alt := t.alt
	t.alt = true
	if t.kittyFlags() != 0 {
		b.WriteString("\x1b[>0u")
		pushedKitty = true
	}
	t.alt = alt
	for _, n := range promptModes {
		if t.modes[n] {
			b.WriteString("\x1b[?" + strconv.Itoa(n) + "l")
		}
	}
	if t.mok != 0 {
		b.WriteString("\x1b[>4;0m")
	}
	if t.keypad {
		b.WriteString("\x1b>")
	}
	if t.top != 0 || t.bot != 0 {
		b.WriteString("\x1b[r")
	}
	// Plain text, ASCII charset, a visible cursor, a clear screen.
	b.WriteString("\x1b[0m\x1b(B\x0f\x1b[?25h\x1b[H\x1b[2J")
	return b.String(), pushedKitty
}

// restore undoes putAside after the prompt: the prompt's screen cleared,
// the agent's scrolling region, screen, cursor and modes back.
func (t *termState) restore(pushedKitty bool) string {
	var b strings.Builder
	b.WriteString("\x1b[0m\x1b[H\x1b[2J")
	if pushedKitty {
		b.WriteString("\x1b[<u")
	}
	if t.top != 0 || t.bot != 0 {
		// Before the cursor comes back: DECSTBM homes the cursor.
		b.WriteString("\x1b[" + strconv.Itoa(t.top) + ";" + strconv.Itoa(t.bot) + "r")
	}
	if t.alt {
		b.WriteString("\x1b8")
	} else {
		b.WriteString("\x1b[?1049l")
	}
	for _, n := range promptModes {
		if on, ok := t.modes[n]; ok && on {
			b.WriteString("\x1b[?" + strconv.Itoa(n) + "h")
		}
	}
	// The prompt shows the cursor and may have left bracketed paste on
	// or off: put back what the agent had (shown, paste off, unless it
	// said otherwise).
	if on, ok := t.modes[25]; ok && !on {
		b.WriteString("\x1b[?25l")
	} else {
		b.WriteString("\x1b[?25h")
	}
	if !t.modes[2004] {
		b.WriteString("\x1b[?2004l")
	}
	if t.mok != 0 {
		b.WriteString("\x1b[>4;" + strconv.Itoa(t.mok) + "m")
	}
	if t.keypad {
		b.WriteString("\x1b=")
	}
	return b.String()
}

// ctrlC is what the person's terminal sends for Ctrl-C in the keyboard
// modes the agent asked for: the kitty protocol's CSI u form when the
// agent disambiguates or reports every key, xterm's modifyOtherKeys form
// at level 2, the control character otherwise.
func (t *termState) ctrlC() string {
	switch {
	case t.kittyFlags()&(1|8) != 0:
		return "\x1b[99;5u"
	case t.mok >= 2:
		return "\x1b[27;5;99~"
	}
	return "\x03"
}
