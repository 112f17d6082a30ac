package authority

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/display"
)

// Screen lends the terminal to the prompt. The supervisor's PTY relay
// implements it: Acquire pauses the agent's output, puts the agent's
// terminal modes aside, switches to the alternate screen and returns the
// terminal's input and output with its size; release restores the
// agent's screen and modes and makes it redraw.
type Screen interface {
	Acquire(ctx context.Context) (in io.Reader, out io.Writer, width, height int, release func(), err error)
}

// Interrupter is a Screen that can hand a Ctrl-C typed at the prompt on
// to the program whose terminal it lent (the supervisor's relay): the
// person answered the question and interrupted the command, as Ctrl-C
// does in a shell. Interrupt is called after release.
type Interrupter interface {
	Interrupt()
}

// NoticeHolder is a Screen that holds permwrap's notices back while the
// agent draws (the supervisor's relay); the prompt shows the latest, as
// its screen is the one place they can be read during the run.
type NoticeHolder interface {
	HeldNotices() []string
}

// DefaultAskTimeout is how long a prompt waits for a person.
const DefaultAskTimeout = engine.DefaultAskTimeout

// PromptOptions tune the prompt.
type PromptOptions struct {
	AskTimeout time.Duration // ≤0: DefaultAskTimeout; counts from the ask, queueing included
	Rows       int           // row budget when the screen reports no height (0: 24)
	// Policy is the user's policy file: with it, the prompt offers
	// "always allow" and "always deny", which write the (editable)
	// suggested pattern there. nil: no such options.
	Policy *PolicyFile
	// Env checks the patterns a person edits, as the policy will read
	// them (empty fields: from the process).
	Env engine.Env
}

// PromptTerminal asks the person at the terminal. One prompt is on screen
// at a time; other asks queue. Asks for the same surface and value that
// are pending together share one prompt and its answer.
type PromptTerminal struct {
	screen Screen
	opts   PromptOptions
	slot   chan struct{} // one prompt at a time
	// dialog shows one request and returns the person's answer; tests
	// replace it to exercise the queue without a terminal.
	dialog func(ctx context.Context, in io.Reader, out io.Writer, width, height int, r Request) (Decision, error)

	mu      sync.Mutex
	pending map[askKey]*sharedAsk
	// denied are the "always deny" patterns a person gave in this run.
	// The caller adds them to the policy as session denies
	// (Decision.AddSessionRules), so later requests are denied before
	// they reach the chain; this copy answers the asks that were already
	// waiting for the prompt when the person gave it.
	denied []deniedPattern
}

type deniedPattern struct {
	surface engine.Surface
	match   func(string) bool
}

type askKey struct {
	surface   engine.Surface
	value     string
	humanOnly bool
}

type sharedAsk struct {
	done chan struct{}
	d    Decision
}

// NewPromptTerminal makes the local-user terminal over screen.
func NewPromptTerminal(screen Screen, opts PromptOptions) *PromptTerminal {
	if opts.AskTimeout <= 0 {
		opts.AskTimeout = DefaultAskTimeout
	}
	if opts.Rows <= 0 {
		opts.Rows = DefaultPromptRows
	}
	p := &PromptTerminal{screen: screen, opts: opts, slot: make(chan struct{}, 1), pending: map[askKey]*sharedAsk{}}
	p.dialog = p.runDialog
	return p
}

// SetPolicyFile names the file "always allow" and "always deny" write to
// (nil: no such options). Call it before the first ask.
func (p *PromptTerminal) SetPolicyFile(f *PolicyFile) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.opts.Policy = f
	if f != nil && p.opts.Env == (engine.Env{}) {
		p.opts.Env = f.Env
	}
}

func (p *PromptTerminal) Name() string { return "prompt" }
func (p *PromptTerminal) Human() bool  { return true }

// Decide shows r to the person and returns their answer, or a deny when
// nobody answers within the ask timeout.
func (p *PromptTerminal) Decide(ctx context.Context, r Request) Decision {
	ctx, cancel := context.WithTimeout(ctx, p.opts.AskTimeout)
	defer cancel()

	if d, ok := p.alwaysDenied(r); ok {
		return d
	}
	key := askKey{r.Check.Surface, r.Check.Value, r.HumanOnly}
	p.mu.Lock()
	if s, ok := p.pending[key]; ok {
		p.mu.Unlock()
		select {
		case <-s.done:
			// Same answer; the session rule and the saved rule, if any,
			// belong to the ask that owned the prompt.
			return s.d.withoutSession()
		case <-ctx.Done():
			return p.notAnswered(ctx)
		}
	}
	s := &sharedAsk{done: make(chan struct{})}
	p.pending[key] = s
	p.mu.Unlock()

	s.d = p.ask(ctx, r)

	p.mu.Lock()
	delete(p.pending, key)
	p.mu.Unlock()
	close(s.done)
	return s.d
}

// alwaysDenied answers an ask that matches an "always deny" given in this
// run. Only a person may approve a human-only ask, and the saved rule
// will not answer it either: it is shown.
func (p *PromptTerminal) alwaysDenied(r Request) (Decision, bool) {
	if r.HumanOnly {
		return Decision{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range p.denied {
		if d.surface == r.Check.Surface && d.match(r.Check.Value) {
			return Denied(ByUser{Via: AlwaysDenyVia}, ReasonDeniedByUser), true
		}
	}
	return Decision{}, false
}

func (p *PromptTerminal) ask(ctx context.Context, r Request) Decision {
	select {
	case p.slot <- struct{}{}:
	case <-ctx.Done():
		return p.notAnswered(ctx)
	}
	defer func() { <-p.slot }()
	// An "always deny" given while this ask waited its turn.
	if d, ok := p.alwaysDenied(r); ok {
		return d
	}

	in, out, w, h, release, err := p.screen.Acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return p.notAnswered(ctx)
		}
		reason := ReasonUnavailable + ": " + err.Error()
		return Denied(ByUnavailable{Reason: reason}, ReasonUnavailable)
	}
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	if h <= 0 {
		h = p.opts.Rows
	}
	if w <= 0 {
		w = 80
	}
	d, err := p.dialog(ctx, in, out, w, h, r)
	switch {
	case ctx.Err() != nil:
		return p.notAnswered(ctx)
	case err != nil:
		return Denied(ByError{Reason: "prompt failed: " + err.Error()}, ReasonUnavailable)
	}
	if r.HumanOnly {
		d = d.withoutSession()
	}
	if d.Action() == engine.Deny && d.Reason() == ReasonInterrupted {
		// The agent has its screen back before it gets the key.
		released = true
		release()
		if i, ok := p.screen.(Interrupter); ok {
			i.Interrupt()
		}
	}
	// Before the next ask in the queue gets the screen.
	p.rememberDenied(d)
	return d
}

// rememberDenied keeps the patterns of an "always deny" for the asks
// still waiting.
func (p *PromptTerminal) rememberDenied(d Decision) {
	if d.Action() != engine.Deny {
		return
	}
	for _, sp := range d.SessionRules() {
		if m, err := engine.RuleMatcher(sp.Surface, sp.Pattern, p.opts.Env); err == nil {
			p.mu.Lock()
			p.denied = append(p.denied, deniedPattern{sp.Surface, m})
			p.mu.Unlock()
		}
	}
}

func (p *PromptTerminal) notAnswered(ctx context.Context) Decision {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return Denied(ByUnavailable{Reason: ReasonTimedOut}, ReasonTimedOut)
	}
	return Denied(ByError{Reason: "ask abandoned: " + fmt.Sprint(ctx.Err())}, "ask abandoned")
}

// ReasonDeniedByUser is the reason of a plain deny at the prompt.
const ReasonDeniedByUser = "denied by the user"

// ReasonDismissed is the reason when the person dismisses the prompt
// (Esc).
const ReasonDismissed = "dismissed at the prompt"

// ReasonInterrupted is the reason when the person presses Ctrl-C at the
// prompt: the request is denied and, where the screen can (Interrupter),
// the Ctrl-C goes on to the program, which gets it as if typed to it (a
// SIGINT to the foreground job in a shell's cooked mode, the key in a
// full-screen agent's raw mode).
const ReasonInterrupted = "interrupted at the prompt (Ctrl-C)"

func (p *PromptTerminal) runDialog(ctx context.Context, in io.Reader, out io.Writer, width, height int, r Request) (Decision, error) {
	m := newPromptModel(r, width, height, p.opts)
	if h, ok := p.screen.(NoticeHolder); ok {
		m.held = h.HeldNotices()
	}
	prog := tea.NewProgram(m,
		tea.WithContext(ctx),
		tea.WithInput(in), tea.WithOutput(out),
		// The supervisor owns signals; the prompt only reads keys.
		tea.WithoutSignalHandler(),
		// No bubbletea panic handler: a panic is a bug to see, and the
		// relay restores the terminal either way.
		tea.WithoutCatchPanics(),
	)
	final, err := prog.Run()
	if err != nil {
		return Decision{}, err
	}
	fm := final.(*promptModel)
	if !fm.done {
		return Decision{}, errors.New("the prompt ended without an answer")
	}
	return fm.decision, nil
}

// The choices the prompt offers.
type choice int

const (
	choiceOnce choice = iota
	choiceSession
	choiceAlwaysAllow
	choiceDeny
	choiceDenyReason
	choiceAlwaysDeny
	choiceFull
)

type promptState int

const (
	stateChoose  promptState = iota
	statePattern             // editing the pattern for session / always
	stateReason              // typing a reason for the agent
	stateFull                // the full request, scrollable
	stateNotice              // a message (e.g. the policy file could not be written), then done
)

// promptModel is the prompt as a bubbletea model. It is laid out anew
// for every frame from the current size, so a resize re-wraps the facts.
type promptModel struct {
	r      Request
	opts   PromptOptions
	width  int
	height int

	state   promptState
	choices []choice
	cursor  int
	editing choice          // what statePattern is editing for
	input   textinput.Model // the reason
	// suggested are the session patterns offered (the request's, less any
	// the screen cannot show); patterns is the list being edited, one
	// input a pattern, focus the one keys go to.
	suggested []SessionPattern
	patterns  []textinput.Model
	focus     int
	errMsg    string // why the input was not accepted
	notice    []string
	fullTop   int
	held      []string // notices the relay holds back (see NoticeHolder)

	done     bool
	decision Decision
}

// byPrompt is who answers at the prompt.
var byPrompt = ByUser{Via: "dialog"}

func newPromptModel(r Request, width, height int, opts PromptOptions) *promptModel {
	m := &promptModel{r: r, opts: opts, width: width, height: height}
	m.choices = []choice{choiceOnce}
	if !r.HumanOnly {
		for _, sp := range r.Suggested {
			// A suggestion holding characters the screen cannot show is
			// not offered for editing: what the person saw would not be
			// what is kept.
			if sp.Pattern != "" && display.Printable(sp.Pattern) == sp.Pattern && len(m.suggested) < maxSuggested {
				m.suggested = append(m.suggested, sp)
			}
		}
	}
	canRemember := len(m.suggested) > 0
	if canRemember {
		m.choices = append(m.choices, choiceSession)
		if opts.Policy != nil {
			m.choices = append(m.choices, choiceAlwaysAllow)
		}
	}
	m.choices = append(m.choices, choiceDeny, choiceDenyReason)
	if canRemember && opts.Policy != nil {
		m.choices = append(m.choices, choiceAlwaysDeny)
	}
	m.choices = append(m.choices, choiceFull)
	m.input = textinput.New()
	m.input.Prompt = "> "
	return m
}

func (m *promptModel) Init() tea.Cmd { return nil }

func (m *promptModel) finish(d Decision) (tea.Model, tea.Cmd) {
	m.done, m.decision = true, d
	return m, tea.Quit
}

func (m *promptModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case tea.KeyMsg:
		if m.state == stateNotice {
			// The answer is given; any of these keys hands the screen back.
			switch msg.Type {
			case tea.KeyEnter, tea.KeySpace, tea.KeyEsc, tea.KeyCtrlC:
				return m, tea.Quit
			}
			return m, nil
		}
		// Esc and Ctrl-C deny, wherever the prompt is; Ctrl-C also
		// interrupts the command (PromptTerminal.ask).
		if msg.Type == tea.KeyEsc {
			return m.finish(Denied(byPrompt, ReasonDismissed))
		}
		if msg.Type == tea.KeyCtrlC {
			return m.finish(Denied(byPrompt, ReasonInterrupted))
		}
		switch m.state {
		case stateChoose:
			return m.updateChoose(msg)
		case statePattern, stateReason:
			return m.updateInput(msg)
		case stateFull:
			return m.updateFull(msg)
		}
	}
	var cmd tea.Cmd
	switch m.state {
	case statePattern:
		m.patterns[m.focus], cmd = m.patterns[m.focus].Update(msg)
	case stateReason:
		m.input, cmd = m.input.Update(msg)
	}
	return m, cmd
}

func (m *promptModel) updateChoose(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch msg.String() {
	case "up", "k", "shift+tab":
		if m.cursor > 0 {
			m.cursor--
		}
	case "down", "j", "tab":
		if m.cursor < len(m.choices)-1 {
			m.cursor++
		}
	case "home":
		m.cursor = 0
	case "end":
		m.cursor = len(m.choices) - 1
	case "enter":
		return m.choose(m.choices[m.cursor])
	}
	return m, nil
}

func (m *promptModel) choose(c choice) (tea.Model, tea.Cmd) {
	switch c {
	case choiceOnce:
		return m.finish(Allowed(byPrompt))
	case choiceDeny:
		return m.finish(Denied(byPrompt, ReasonDeniedByUser))
	case choiceSession, choiceAlwaysAllow, choiceAlwaysDeny:
		m.state, m.editing, m.errMsg = statePattern, c, ""
		m.patterns = make([]textinput.Model, len(m.suggested))
		for i, sp := range m.suggested {
			in := textinput.New()
			in.Prompt = sp.Surface.String() + ": "
			in.SetValue(sp.Pattern)
			in.CursorEnd()
			m.patterns[i] = in
		}
		return m, m.focusPattern(0)
	case choiceDenyReason:
		m.state, m.errMsg = stateReason, ""
		m.input.SetValue("")
		m.input.CharLimit = maxReasonBytes
		return m, m.input.Focus()
	case choiceFull:
		m.state, m.fullTop = stateFull, 0
	}
	return m, nil
}

func (m *promptModel) updateInput(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	if m.state == statePattern {
		return m.updatePatterns(msg)
	}
	if msg.Type != tea.KeyEnter {
		var cmd tea.Cmd
		m.input, cmd = m.input.Update(msg)
		m.errMsg = ""
		return m, cmd
	}
	reason := strings.TrimSpace(m.input.Value())
	if reason == "" {
		reason = ReasonDeniedByUser
	}
	return m.finish(Denied(byPrompt, reason))
}

// focusPattern moves the keys to pattern i.
func (m *promptModel) focusPattern(i int) tea.Cmd {
	m.focus = min(max(i, 0), len(m.patterns)-1)
	for j := range m.patterns {
		m.patterns[j].Blur()
	}
	return m.patterns[m.focus].Focus()
}

// updatePatterns edits the list of patterns: ↑/↓ (Tab) move between
// them, Enter takes the list as it is (an emptied pattern is left out).
func (m *promptModel) updatePatterns(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	switch msg.String() {
	case "up", "shift+tab":
		return m, m.focusPattern(m.focus - 1)
	case "down", "tab":
		return m, m.focusPattern(m.focus + 1)
	case "enter":
	default:
		var cmd tea.Cmd
		m.patterns[m.focus], cmd = m.patterns[m.focus].Update(msg)
		m.errMsg = ""
		return m, cmd
	}
	var list []SessionPattern
	for i, in := range m.patterns {
		pattern := strings.TrimSpace(in.Value())
		if pattern == "" {
			continue
		}
		surface := m.suggested[i].Surface
		if _, err := engine.RuleMatcher(surface, pattern, m.opts.Env); err != nil {
			m.errMsg = fmt.Sprintf("line %d: not a valid %s pattern: %v", i+1, surface, err)
			return m, m.focusPattern(i)
		}
		list = append(list, SessionPattern{Surface: surface, Pattern: pattern})
	}
	if len(list) == 0 {
		m.errMsg = "every pattern is empty"
		return m, nil
	}
	rules := func(a engine.Action) []engine.Rule {
		out := make([]engine.Rule, len(list))
		for i, sp := range list {
			out[i] = engine.Rule{Surface: sp.Surface, Pattern: sp.Pattern, Action: a}
		}
		return out
	}
	saved := func(a engine.Action) []SavedRule {
		out := make([]SavedRule, len(list))
		for i, sp := range list {
			out[i] = SavedRule{Surface: sp.Surface, Pattern: sp.Pattern, Action: a, File: m.opts.Policy.Path}
		}
		return out
	}
	switch m.editing {
	case choiceSession:
		return m.finish(AllowedForSession(byPrompt, list...))
	case choiceAlwaysAllow:
		d := AllowedForSession(byPrompt, list...)
		if err := m.opts.Policy.Remember(rules(engine.Allow), m.r.ID); err != nil {
			return m.showNotice(d, "Not saved: "+err.Error(), "Allowed for this session only.")
		}
		return m.finish(d.withSaved(saved(engine.Allow)...))
	case choiceAlwaysDeny:
		// Denied for the rest of the run whether or not the file could
		// be written: the person said never.
		d := DeniedForSession(byPrompt, ReasonDeniedByUser, list...)
		if err := m.opts.Policy.Remember(rules(engine.Deny), m.r.ID); err != nil {
			return m.showNotice(d, "Not saved: "+err.Error(), "Denied for the rest of this run only.")
		}
		return m.finish(d.withSaved(saved(engine.Deny)...))
	}
	return m, nil
}

// showNotice keeps the screen until the person has read what went wrong:
// permwrap never writes into the agent's screen, so this is the place.
func (m *promptModel) showNotice(d Decision, lines ...string) (tea.Model, tea.Cmd) {
	m.done, m.decision = true, d
	m.state, m.notice = stateNotice, lines
	m.input.Blur()
	return m, nil
}

func (m *promptModel) updateFull(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	lines := RenderFullRequest(m.r, max(m.width-2, 20))
	page := max(m.height-5, 1)
	maxTop := max(len(lines)-page, 0)
	switch msg.String() {
	case "up", "k":
		m.fullTop--
	case "down", "j":
		m.fullTop++
	case "pgup", "b":
		m.fullTop -= page
	case "pgdown", " ", "f":
		m.fullTop += page
	case "home", "g":
		m.fullTop = 0
	case "end", "G":
		m.fullTop = maxTop
	case "enter", "backspace", "q", "left", "h":
		m.state = stateChoose
	}
	m.fullTop = min(max(m.fullTop, 0), maxTop)
	return m, nil
}

// maxHeldShown is how many held notices the prompt shows.
const maxHeldShown = 3

// maxSuggested is how many session patterns the prompt offers for one
// request (a script with more parts is approved for the session with the
// first ones only; the rest ask when they come).
const maxSuggested = 32

const (
	styleTitle  = "\x1b[1m"
	styleChosen = "\x1b[7m"
	styleDim    = "\x1b[2m"
	styleReset  = "\x1b[0m"
)

func (m *promptModel) choiceLabel(c choice, width int) string {
	list := make([]string, len(m.suggested))
	for i, p := range m.suggested {
		list[i] = p.String()
	}
	sp := display.Printable(strings.Join(list, ", "))
	file := ""
	if m.opts.Policy != nil {
		file = baseName(m.opts.Policy.Path)
	}
	switch c {
	case choiceOnce:
		return "Allow once"
	case choiceSession:
		return "Allow for this session: " + fitWidth(sp, max(width-26, 10))
	case choiceAlwaysAllow:
		return "Always allow (" + file + "): " + fitWidth(sp, max(width-18-len(file), 10))
	case choiceDeny:
		return "Deny"
	case choiceDenyReason:
		return "Deny with a reason…"
	case choiceAlwaysDeny:
		return "Always deny (" + file + "): " + fitWidth(sp, max(width-17-len(file), 10))
	case choiceFull:
		return "Show the full request"
	}
	return "?"
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// View lays the prompt out for the current size: the facts get the rows
// the choices and help leave. The last line has no newline after it: the
// renderer keeps the last rows of a view taller than the screen, and a
// line break after the last line is one row more, which cost the title.
func (m *promptModel) View() string {
	return strings.TrimSuffix(m.view(), "\n")
}

func (m *promptModel) view() string {
	if m.done && m.state != stateNotice {
		return ""
	}
	w := max(m.width, 20)
	f := &frame{}
	f.line(styleTitle + "permwrap: permission request" + styleReset)
	switch m.state {
	case stateFull:
		m.viewFull(f, w)
		return f.String()
	case stateNotice:
		m.viewNotice(f, w)
		return f.String()
	}
	l := m.layoutAsk()
	m.viewRequest(f, w, l.factRows)
	m.viewHeld(f, w, l.held)
	switch m.state {
	case stateChoose:
		m.viewChoices(f, w)
	case statePattern:
		m.viewPatterns(f, w, l)
	case stateReason:
		m.viewReason(f, w)
	}
	return f.String()
}

// frame is one view being laid out, a line at a time.
type frame struct{ strings.Builder }

func (f *frame) line(s string) {
	f.WriteString(s)
	f.WriteString("\n")
}

// dim is a line of help or of what is said in passing.
func (f *frame) dim(s string) { f.line(styleDim + s + styleReset) }

// viewFull is the full request, a page of it, and how to scroll.
func (m *promptModel) viewFull(f *frame, w int) {
	f.line("The full request")
	lines := RenderFullRequest(m.r, max(w-2, 20))
	page := max(m.height-5, 1) // title, heading, blank, help, and the last line left free
	end := min(m.fullTop+page, len(lines))
	for _, l := range lines[m.fullTop:end] {
		f.line(l)
	}
	f.line("")
	f.dim(fitWidth(fmt.Sprintf("lines %d-%d of %d · ↑/↓ pgup/pgdn scroll · enter back · esc deny", m.fullTop+1, end, len(lines)), w))
}

// viewNotice is what went wrong after the answer, until it is read.
func (m *promptModel) viewNotice(f *frame, w int) {
	for _, n := range m.notice {
		for _, l := range wrapPlain(display.Printable(n), w) {
			f.line(l)
		}
	}
	f.line("")
	f.dim("enter: back to the agent")
}

// askLayout shares the screen's rows out while the person answers: the
// request's facts get the rows the rest leaves.
type askLayout struct {
	held              []string // the held notices shown (the latest)
	factRows          int      // rows for the request's facts
	listTop, listRows int      // the patterns shown, while editing them
}

func (m *promptModel) layoutAsk() askLayout {
	l := askLayout{held: m.held}
	below := 4 // blank, question, blank, help
	if len(l.held) > maxHeldShown {
		l.held = l.held[len(l.held)-maxHeldShown:]
	}
	if len(l.held) > 0 {
		below += 1 + len(l.held)
	}
	switch m.state {
	case stateChoose:
		below += len(m.choices)
	case statePattern:
		// The patterns get the rows the facts can spare (3 stay), and
		// scroll with the focus when they do not all fit.
		l.listRows = min(len(m.patterns), max(m.height-1-(below+2)-3-1, 1))
		if m.focus >= l.listRows {
			l.listTop = m.focus - l.listRows + 1
		}
		below += 2 + l.listRows // where it goes, the patterns, the error line
	default:
		below += 2 // the input and its error line
	}
	l.factRows = max(m.height-1-below, 1)
	return l
}

// viewRequest is the request's facts, in rows lines at most.
func (m *promptModel) viewRequest(f *frame, w, rows int) {
	for _, l := range RenderRequest(m.r, w, rows) {
		f.line(l)
	}
	f.line("")
}

// viewHeld is the latest of the notices the relay held back, if any.
func (m *promptModel) viewHeld(f *frame, w int, held []string) {
	if len(held) == 0 {
		return
	}
	f.dim(fitWidth(fmt.Sprintf("Not shown while the agent had the screen (%d; all are printed when it exits):", len(m.held)), w))
	for _, h := range held {
		f.dim(fitWidth("  "+display.Printable(h), w))
	}
}

// viewChoices is the question, the choices with the cursor, and help.
func (m *promptModel) viewChoices(f *frame, w int) {
	f.line("Allow this?")
	for i, c := range m.choices {
		label := m.choiceLabel(c, w-2)
		if i == m.cursor {
			f.line(styleChosen + "> " + label + styleReset)
		} else {
			f.line("  " + label)
		}
	}
	f.line("")
	f.dim(fitWidth("↑/↓ choose · enter confirm · esc deny", w))
}

// viewPatterns is the pattern editor: what the patterns are for and
// where they go, the patterns shown (l), why one was not accepted, help.
func (m *promptModel) viewPatterns(f *frame, w int, l askLayout) {
	what, where := m.editingFor()
	help := "enter confirm · esc deny"
	if len(m.patterns) == 1 {
		f.line(fitWidth(what+": "+m.suggested[0].Surface.String()+" pattern", w))
	} else {
		head := fmt.Sprintf("%s: %d patterns, one a line", what, len(m.patterns))
		if l.listRows < len(m.patterns) {
			head += fmt.Sprintf(" (%d-%d shown)", l.listTop+1, l.listTop+l.listRows)
		}
		f.line(fitWidth(head, w))
		help = "↑/↓ line · an emptied line is left out · enter confirm · esc deny"
	}
	f.dim(elideMiddle(where, w))
	for i := l.listTop; i < l.listTop+l.listRows; i++ {
		in := &m.patterns[i]
		in.Width = max(w-4-textWidth(in.Prompt), 10)
		mark := "  "
		if i == m.focus && len(m.patterns) > 1 {
			mark = "> "
		}
		f.line(mark + in.View())
	}
	f.dim(fitWidth(m.errMsg, w))
	f.dim(fitWidth(help, w))
}

// editingFor says what the patterns being edited are for, and where
// they are kept.
func (m *promptModel) editingFor() (what, where string) {
	switch m.editing {
	case choiceAlwaysAllow:
		return "Always allow", "written to " + display.Printable(m.opts.Policy.Path)
	case choiceAlwaysDeny:
		return "Always deny", "written to " + display.Printable(m.opts.Policy.Path)
	}
	return "Allow for this session", "until permwrap exits"
}

// viewReason is the input for a reason the agent sees, and help.
func (m *promptModel) viewReason(f *frame, w int) {
	f.line("Reason (the agent sees it)")
	m.input.Width = max(w-4, 10)
	f.line(m.input.View())
	f.line("")
	f.dim(fitWidth("enter deny with this reason · esc deny", w))
}

// wrapPlain cuts s into lines of at most width columns, at spaces where
// it can.
func wrapPlain(s string, width int) []string {
	var out []string
	cur := ""
	for _, word := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = word
		case textWidth(cur)+1+textWidth(word) <= width:
			cur += " " + word
		default:
			out = append(out, cur)
			cur = word
		}
		for textWidth(cur) > width { // a word longer than the line
			head := strings.TrimSuffix(fitWidth(cur, width), "…")
			if head == "" {
				break
			}
			out = append(out, head)
			cur = cur[len(head):]
		}
	}
	return append(out, cur)
}
