package authority

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/mattn/go-runewidth"

	"github.com/permwrap/permwrap/internal/display"
)

// DefaultPromptRows is the row budget of the facts when the screen size is
// unknown.
const DefaultPromptRows = 24

// RenderRequest renders the facts of a request, one per line, for a
// screen width columns wide, in at most rows lines. Each line is cut to
// the width with "…" marking the cut; when the facts do not fit, the last
// line says how many were left out. Control characters from the request
// (a path can hold an escape sequence) are shown escaped, never sent to
// the terminal.
//
// It is pure: the prompt, tests and `permwrap explain` can all use it.
func RenderRequest(r Request, width, rows int) []string {
	if width < 20 {
		width = 20
	}
	if rows < 1 {
		rows = 1
	}
	facts := requestFacts(r, width)
	var out []string
	for i, f := range facts {
		if len(out) == rows-1 && i < len(facts)-1 {
			out = append(out, fitWidth(fmt.Sprintf("… %d more (choose \"show the full request\")", len(facts)-i), width))
			break
		}
		out = append(out, fitWidth(f, width))
		if len(out) == rows {
			break
		}
	}
	return out
}

// RenderFullRequest renders every fact in full, long values wrapped at
// width rather than cut: what the prompt shows when asked for everything.
func RenderFullRequest(r Request, width int) []string {
	if width < 20 {
		width = 20
	}
	var out []string
	add := func(label, v string) {
		out = append(out, wrapLine(fmt.Sprintf("%-8s %s", label+":", printable(v)), width)...)
	}
	add("request", string(r.ID))
	if r.Node != "" {
		add("node", nodeLine(r))
	}
	add("process", r.Process.Comm+" ("+processIDs(r.Process)+")")
	add("exe", r.Process.Exe)
	add("cmdline", strings.Join(r.Process.Cmdline, " "))
	add("agent", strings.Join(r.Agent, " "))
	add("surface", r.Check.Surface.String())
	add("access", r.Access)
	if r.Command != "" {
		add("command", r.Command+"  ("+r.CommandBy+"'s shell tool)")
	}
	add("value", r.Check.Value)
	if len(r.Paths) == 2 {
		add("from", r.Paths[0])
		add("to", r.Paths[1])
	}
	if r.Through != "" {
		add("through", r.Through)
	}
	if r.Net != nil {
		add("dest", r.Net.String())
		if d := r.Net.Service.Detail(); d != "" {
			add("serves", d)
		}
	}
	for _, x := range r.Runs {
		add("runs", x)
	}
	for i, u := range r.Units {
		add("unit "+strconv.Itoa(i+1), u)
	}
	for _, x := range r.SetUp {
		add("set-up", x)
	}
	for _, x := range r.Covers {
		add("covers", x)
	}
	add("why", whyLine(r))
	if r.Managed {
		add("note", "the managed policy asks: only a person can allow it, and only once")
	} else if r.HumanOnly {
		add("note", "protected write: only a person can allow it, and only once")
	} else {
		for _, sp := range r.Suggested {
			add("session", sp.String())
		}
	}
	return out
}

// requestFacts are the prompt's lines in priority order: when rows run
// out, the last ones are left for the full view. Runs and units are
// lists, one command a line: they are separate commands, not a pipeline.
func requestFacts(r Request, width int) []string {
	who := "who:   " + printable(r.Process.Comm) + " (" + processIDs(r.Process) + ")"
	if len(r.Agent) > 0 {
		who += " under " + printable(strings.Join(r.Agent, " "))
	}
	what := "what:  " + r.Check.Surface.String()
	if r.Access != "" && r.Access != r.Check.Surface.String() {
		what += " (" + printable(r.Access) + ")"
	}
	// The end of a path or command (the file name, the last argument) is
	// what a person checks first, so a long value loses its middle.
	var more []string
	if len(r.Paths) == 2 {
		// A rename or link: both names, each on its own line.
		what += " " + elideMiddle(printable(r.Paths[0]), width-textWidth(what)-1)
		more = append(more, "       → "+elideMiddle(printable(r.Paths[1]), width-9))
	} else {
		what += " " + elideMiddle(printable(r.Check.Value), width-textWidth(what)-1)
	}
	if r.Through != "" {
		more = append(more, "       through "+elideMiddle(printable(path.Base(r.Through)), width-15)+", renamed over it")
	}
	facts := []string{who}
	if r.Command != "" {
		// The command the model sent, before anything about the script
		// the agent's shell tool wrapped it in.
		facts = append(facts, "command: "+elideMiddle(printable(r.Command), width-9))
	}
	if r.Node != "" {
		// A nested permwrap's subtree asked: which one, and what it runs.
		facts = append(facts, "node:  "+printable(nodeLine(r)))
	}
	facts = append(facts, what)
	facts = append(facts, more...)
	if r.Net != nil {
		// The value is the spelling that decided; a person sees the whole
		// destination: the name asked for, the address, the protocol.
		facts = append(facts, "dest:  "+printable(r.Net.String()))
		if d := r.Net.Service.Detail(); d != "" {
			// Who will act on the connection, as its command line says.
			facts = append(facts, "serves: "+elideMiddle(printable(d), width-8))
		}
	}
	facts = append(facts, "why:   "+whyLine(r))
	for i, x := range r.Covers {
		// What allowing it allows besides: the writes its job is, in a
		// place whose name ends the line (a long one loses its middle).
		label := "        "
		if i == 0 {
			label = "covers: "
		}
		facts = append(facts, label+elideMiddle(printable(x), width-len(label)))
	}
	for i, x := range r.Runs {
		label := "       "
		if i == 0 {
			label = "runs:  "
		}
		facts = append(facts, label+"- "+printable(x))
	}
	for i, u := range r.Units {
		label := "       "
		if i == 0 {
			label = "units: "
		}
		facts = append(facts, fmt.Sprintf("%s%d. %s", label, i+1, printable(u)))
	}
	if len(r.SetUp) > 0 {
		facts = append(facts, fmt.Sprintf("set-up: %s's shell set-up, %d more (\"show the full request\" lists them)", printable(r.CommandBy), len(r.SetUp)))
	}
	if r.Managed {
		facts = append(facts, "note:  the managed policy asks: allow once or deny")
	} else if r.HumanOnly {
		facts = append(facts, "note:  protected write: allow once or deny")
	}
	return facts
}

// nodeLine names the nested node a request came from and the command
// its permwrap runs: "reviewer#3 — pi --mode json".
func nodeLine(r Request) string {
	s := r.Node
	if len(r.NodeCommand) > 0 {
		s += " — permwrap -- " + strings.Join(MaskArgv(r.NodeCommand), " ")
	}
	return s
}

// processIDs is "pid 4242", or "pid 4242, thread 4250" when a thread
// other than the process's main one made the call.
func processIDs(p Process) string {
	s := "pid " + strconv.Itoa(p.PID)
	if p.TID != 0 && p.TID != p.PID {
		s += ", thread " + strconv.Itoa(p.TID)
	}
	return s
}

func whyLine(r Request) string {
	if !r.HasRule() {
		return "no rule (asking is the default)"
	}
	if r.Rule.Reason != "" {
		return r.Rule.String() + ": " + printable(r.Rule.Reason)
	}
	return r.Rule.String()
}

// printable is the one sanitiser (internal/display) under a short name.
func printable(s string) string { return display.Printable(s) }

// elideMiddle cuts s to width columns by replacing its middle with "…",
// keeping a third of the room for the start and the rest for the end.
func elideMiddle(s string, width int) string {
	if width < 8 || textWidth(s) <= width {
		return s
	}
	room := width - 1
	head := runewidth.Truncate(s, room/3, "")
	tailWidth := room - runewidth.StringWidth(head)
	rs := []rune(s)
	i := len(rs)
	for w := 0; i > 0; i-- {
		cw := runewidth.RuneWidth(rs[i-1])
		if w+cw > tailWidth {
			break
		}
		w += cw
	}
	return head + "…" + string(rs[i:])
}

// textWidth is the screen width of s; ASCII (most paths and commands)
// skips the grapheme segmentation, which costs microseconds per call.
func textWidth(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return runewidth.StringWidth(s)
		}
	}
	return len(s)
}

func fitWidth(s string, width int) string {
	if textWidth(s) <= width {
		return s
	}
	return runewidth.Truncate(s, width, "…")
}

// wrapLine cuts s into lines of at most width columns, continuing under
// the label column. It is linear in len(s): a full request can carry a
// 16 KiB command line.
func wrapLine(s string, width int) []string {
	const indent = "         "
	var out []string
	var line strings.Builder
	w := 0
	for _, c := range s {
		cw := runewidth.RuneWidth(c)
		if w+cw > width && w > len(indent) {
			out = append(out, line.String())
			line.Reset()
			line.WriteString(indent)
			w = len(indent)
		}
		line.WriteRune(c)
		w += cw
	}
	return append(out, line.String())
}

// String renders a request on one line for logs and tests:
// "write /x/y by bash (pid 12)".
func (r Request) String() string {
	return fmt.Sprintf("%s %s by %s (%s)", r.Check.Surface, printable(r.Check.Value), printable(r.Process.Comm), processIDs(r.Process))
}
