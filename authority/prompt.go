package authority

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/huh"

	"github.com/permwrap/permwrap/engine"
)

// Screen lends the terminal to the prompt. The supervisor's PTY relay
// implements it: Acquire pauses the agent's output, switches to the
// alternate screen and returns the terminal's input and output with its
// size; release restores the agent's screen and makes it redraw.
type Screen interface {
	Acquire(ctx context.Context) (in io.Reader, out io.Writer, width, height int, release func(), err error)
}

// DefaultAskTimeout is how long a prompt waits for a person.
const DefaultAskTimeout = engine.DefaultAskTimeout

// PromptOptions tune the prompt.
type PromptOptions struct {
	AskTimeout time.Duration // ≤0: DefaultAskTimeout; counts from the ask, queueing included
	Rows       int           // row budget when the screen reports no height (0: 24)
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
	return &PromptTerminal{screen: screen, opts: opts, slot: make(chan struct{}, 1), dialog: runDialog, pending: map[askKey]*sharedAsk{}}
}

func (p *PromptTerminal) Name() string { return "prompt" }
func (p *PromptTerminal) Human() bool  { return true }

// Decide shows r to the person and returns their answer, or a deny when
// nobody answers within the ask timeout.
func (p *PromptTerminal) Decide(ctx context.Context, r Request) Decision {
	ctx, cancel := context.WithTimeout(ctx, p.opts.AskTimeout)
	defer cancel()

	key := askKey{r.Check.Surface, r.Check.Value, r.HumanOnly}
	p.mu.Lock()
	if s, ok := p.pending[key]; ok {
		p.mu.Unlock()
		select {
		case <-s.done:
			// Same answer; the session rule, if any, is added once, by the
			// ask that owned the prompt.
			if _, ok := s.d.SessionRule(); ok {
				return Allowed(s.d.DecidedBy())
			}
			return s.d
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

func (p *PromptTerminal) ask(ctx context.Context, r Request) Decision {
	select {
	case p.slot <- struct{}{}:
	case <-ctx.Done():
		return p.notAnswered(ctx)
	}
	defer func() { <-p.slot }()

	in, out, w, h, release, err := p.screen.Acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return p.notAnswered(ctx)
		}
		reason := ReasonUnavailable + ": " + err.Error()
		return Denied(ByUnavailable{Reason: reason}, ReasonUnavailable)
	}
	defer release()
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
	case errors.Is(err, huh.ErrUserAborted):
		return Denied(ByUser{Via: "dialog"}, "dismissed at the prompt")
	case err != nil:
		return Denied(ByError{Reason: "prompt failed: " + err.Error()}, ReasonUnavailable)
	}
	if r.HumanOnly {
		if _, ok := d.SessionRule(); ok {
			d = Allowed(d.DecidedBy())
		}
	}
	return d
}

func (p *PromptTerminal) notAnswered(ctx context.Context) Decision {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return Denied(ByUnavailable{Reason: ReasonTimedOut}, ReasonTimedOut)
	}
	return Denied(ByError{Reason: "ask abandoned: " + fmt.Sprint(ctx.Err())}, "ask abandoned")
}

// The person's choices.
const (
	choiceOnce       = "once"
	choiceSession    = "session"
	choiceDeny       = "deny"
	choiceDenyReason = "deny-reason"
	choiceFull       = "full"
)

// optionRows is what the choice list and help take below the facts.
const optionRows = 10

// ReasonDeniedByUser is the reason of a plain deny at the prompt.
const ReasonDeniedByUser = "denied by the user"

func runDialog(ctx context.Context, in io.Reader, out io.Writer, width, height int, r Request) (Decision, error) {
	by := ByUser{Via: "dialog"}
	run := func(groups ...*huh.Group) error {
		return huh.NewForm(groups...).
			// The supervisor owns signals; the prompt only reads keys.
			// (WithProgramOptions replaces huh's defaults, so it goes
			// before WithInput/WithOutput, which append to them.)
			WithProgramOptions(tea.WithoutSignalHandler()).
			WithInput(in).WithOutput(out).
			WithWidth(width).
			WithShowHelp(true).
			RunWithContext(ctx)
	}
	factRows := max(height-optionRows, 3)
	for {
		choice := choiceOnce
		opts := []huh.Option[string]{huh.NewOption("Allow once", choiceOnce)}
		if !r.HumanOnly && r.Suggested.Pattern != "" {
			opts = append(opts, huh.NewOption("Allow for this session: "+fitWidth(printable(r.Suggested.String()), max(width-30, 10)), choiceSession))
		}
		opts = append(opts,
			huh.NewOption("Deny", choiceDeny),
			huh.NewOption("Deny with a reason…", choiceDenyReason),
			huh.NewOption("Show the full request", choiceFull),
		)
		// The facts are the select's description, not a Note before it: a
		// group starting on a Note focuses it first and skips to the next
		// field a moment later, and keys typed in that moment (a fast
		// typist's Enter) would go to the Note. Descriptions are plain text,
		// so nothing in the request is read as markup.
		sel := huh.NewSelect[string]().
			Title("permwrap: permission request").
			Description(strings.Join(RenderRequest(r, width-4, factRows), "\n") + "\n\nAllow this?").
			Options(opts...).Value(&choice)
		if err := run(huh.NewGroup(sel)); err != nil {
			return Decision{}, err
		}
		switch choice {
		case choiceOnce:
			return Allowed(by), nil
		case choiceDeny:
			return Denied(by, ReasonDeniedByUser), nil
		case choiceSession:
			pattern := r.Suggested.Pattern
			in := huh.NewInput().
				Title("Allow for this session (" + r.Suggested.Surface.String() + " pattern)").
				Value(&pattern).
				Validate(func(s string) error {
					if strings.TrimSpace(s) == "" {
						return errors.New("the pattern is empty")
					}
					return nil
				})
			if err := run(huh.NewGroup(in)); err != nil {
				return Decision{}, err
			}
			return AllowedForSession(by, SessionPattern{Surface: r.Suggested.Surface, Pattern: strings.TrimSpace(pattern)}), nil
		case choiceDenyReason:
			var reason string
			in := huh.NewInput().Title("Reason (the agent sees it)").CharLimit(maxReasonBytes).Value(&reason)
			if err := run(huh.NewGroup(in)); err != nil {
				return Decision{}, err
			}
			if reason = strings.TrimSpace(reason); reason == "" {
				reason = ReasonDeniedByUser
			}
			return Denied(by, reason), nil
		case choiceFull:
			full := huh.NewNote().Title("The full request").
				Description(noteText(RenderFullRequest(r, width-4))).
				Next(true).NextLabel("Back")
			if err := run(huh.NewGroup(full)); err != nil {
				return Decision{}, err
			}
		default:
			return Decision{}, fmt.Errorf("unknown choice %q", choice)
		}
	}
}

// noteText escapes the characters huh's Note reads as markup (a glob's
// '*' would turn bold), so facts show exactly as written.
func noteText(lines []string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `_`, `\_`, "`", "\\`")
	return r.Replace(strings.Join(lines, "\n"))
}
