package authority

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/mattn/go-runewidth"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/testutil"
)

// ptyScreen lends a real pseudo-terminal to the prompt, like the
// supervisor's relay does; the test types on the master side.
type ptyScreen struct {
	tty, ptmx *os.File
	screen    *testutil.PTY
	mu        sync.Mutex
	acquired  int
	released  int
	// interrupts counts Interrupt calls; releasedAt is released at the
	// first one (the agent must have its screen back first).
	interrupts int
	releasedAt int
}

func (s *ptyScreen) Interrupt() {
	s.mu.Lock()
	if s.interrupts == 0 {
		s.releasedAt = s.released
	}
	s.interrupts++
	s.mu.Unlock()
}

func newPtyScreen(t *testing.T) *ptyScreen {
	t.Helper()
	p := testutil.OpenPTY(t, 30, 100)
	return &ptyScreen{tty: p.Slave, ptmx: p.Master, screen: p}
}

func (s *ptyScreen) Acquire(ctx context.Context) (io.Reader, io.Writer, int, int, func(), error) {
	s.mu.Lock()
	s.acquired++
	s.mu.Unlock()
	return s.tty, s.tty, 100, 30, func() { s.mu.Lock(); s.released++; s.mu.Unlock() }, nil
}

var ansiSeq = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\x1b\][^\x07]*\x07`)

// screenText is everything the prompt drew, escape sequences removed.
func (s *ptyScreen) screenText() string {
	return ansiSeq.ReplaceAllString(s.screen.Text(), "")
}

func (s *ptyScreen) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(s.screenText(), want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("prompt never showed %q; screen:\n%s", want, s.screenText())
}

// typeKeys sends keys one at a time, so each is read as its own key.
func (s *ptyScreen) typeKeys(t *testing.T, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, err := s.ptmx.Write([]byte(k)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

func (s *ptyScreen) clear() { s.screen.Reset() }

const (
	keyDown  = "\x1b[B"
	keyUp    = "\x1b[A"
	keyHome  = "\x1b[H"
	keyEnter = "\r"
	keyCtrlU = "\x15"
	keyEsc   = "\x1b"
	keyCtrlC = "\x03"
)

// choose picks the n-th option (0-based) of the list on screen, from the
// top whatever is selected now. The keys go in one write, so the result
// does not depend on how fast the screen redraws. Arrow keys, not "j": bubbletea reads a run of printable
// bytes that arrive together as one key ("jj"), which the select ignores;
// escape sequences it splits one per key.
func (s *ptyScreen) choose(t *testing.T, n int) {
	t.Helper()
	s.clear() // what the caller waits for next must come from the next screen
	s.typeKeys(t, keyHome+strings.Repeat(keyDown, n)+keyEnter)
}

func promptRequest() Request {
	r := NewRequest(engine.Check{Surface: engine.SurfaceBash, Value: "git checkout main"})
	r.Process = Process{PID: 4242, Comm: "git", Exe: "/usr/bin/git"}
	r.Agent = []string{"claude", "--model", "x"}
	r.Access = "exec"
	r.Rule = engine.Rule{Surface: engine.SurfaceBash, Pattern: "git *", Action: engine.Ask, Origin: engine.OriginGlobal, Pos: engine.Position{File: "policy.jsonc", Line: 9, Column: 5}}
	r.Suggested = []SessionPattern{{Surface: engine.SurfaceBash, Pattern: "git checkout *"}}
	return r
}

func runPrompt(t *testing.T, s *ptyScreen, r Request) <-chan Decision {
	t.Helper()
	p := NewPromptTerminal(s, PromptOptions{AskTimeout: time.Minute})
	ch := make(chan Decision, 1)
	go func() { ch <- p.Decide(context.Background(), r) }()
	return ch
}

func await(t *testing.T, ch <-chan Decision) Decision {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(20 * time.Second):
		t.Fatal("no decision")
	}
	return Decision{}
}

func TestPromptAllowOnce(t *testing.T) {
	s := newPtyScreen(t)
	ch := runPrompt(t, s, promptRequest())
	s.waitFor(t, "Allow once")
	text := s.screenText()
	for _, want := range []string{"who:   git (pid 4242) under claude --model x", "what:  bash (exec) git checkout main", "why:   rule bash:git * (ask, policy.jsonc:9:5)", "Allow for this session: bash:git checkout *"} {
		if !strings.Contains(text, want) {
			t.Errorf("prompt lacks %q:\n%s", want, text)
		}
	}
	s.typeKeys(t, keyEnter)
	d := await(t, ch)
	if d.Action() != engine.Allow || d.DecidedBy() != (ByUser{Via: "dialog"}) {
		t.Fatalf("%v", d)
	}
	if len(d.SessionRules()) != 0 {
		t.Fatal("allow once carries a session rule")
	}
	if s.acquired != 1 || s.released != 1 {
		t.Fatalf("screen acquired %d released %d", s.acquired, s.released)
	}
}

func TestPromptAllowForSessionEdited(t *testing.T) {
	s := newPtyScreen(t)
	ch := runPrompt(t, s, promptRequest())
	s.waitFor(t, "Allow once")
	s.choose(t, 1)
	s.waitFor(t, "Allow for this session: bash pattern")
	s.waitFor(t, "git checkout *")
	s.typeKeys(t, keyCtrlU+"git checkout feature/*"+keyEnter)
	d := await(t, ch)
	if rules := d.SessionRules(); d.Action() != engine.Allow || len(rules) != 1 || rules[0] != (SessionPattern{engine.SurfaceBash, "git checkout feature/*"}) {
		t.Fatalf("%v", d)
	}
	if d.DecidedBy().Kind() != "user" {
		t.Fatalf("%v", d.DecidedBy())
	}
}

func TestPromptDenyWithReason(t *testing.T) {
	s := newPtyScreen(t)
	ch := runPrompt(t, s, promptRequest())
	s.waitFor(t, "Allow once")
	s.choose(t, 3)
	s.waitFor(t, "Reason")
	s.typeKeys(t, "stay on the feature branch"+keyEnter)
	d := await(t, ch)
	if d.Action() != engine.Deny || d.Reason() != "stay on the feature branch" || d.DecidedBy().Kind() != "user" {
		t.Fatalf("%v", d)
	}
}

func TestPromptFullRequestThenDeny(t *testing.T) {
	s := newPtyScreen(t)
	r := promptRequest()
	r.Units = []string{"git checkout main", "git pull --rebase"}
	ch := runPrompt(t, s, r)
	s.waitFor(t, "Allow once")
	s.choose(t, 4)
	s.waitFor(t, "unit 2:  git pull --rebase")
	s.clear()
	s.typeKeys(t, keyEnter) // Back
	s.waitFor(t, "Allow once")
	s.waitFor(t, "Show the full request")
	s.choose(t, 2)
	d := await(t, ch)
	if d.Action() != engine.Deny || d.Reason() != ReasonDeniedByUser {
		t.Fatalf("%v", d)
	}
}

func TestPromptHumanOnlyHasNoSessionOption(t *testing.T) {
	s := newPtyScreen(t)
	r := promptRequest()
	r.HumanOnly = true
	ch := runPrompt(t, s, r)
	s.waitFor(t, "Allow once")
	if strings.Contains(s.screenText(), "for this session") {
		t.Fatalf("session option on a human-only prompt:\n%s", s.screenText())
	}
	s.choose(t, 1) // Deny: there is no session option
	if d := await(t, ch); d.Action() != engine.Deny {
		t.Fatalf("%v", d)
	}
}

// fakeScreen hands out nothing; the dialog is replaced.
type fakeScreen struct{ err error }

func (f fakeScreen) Acquire(context.Context) (io.Reader, io.Writer, int, int, func(), error) {
	return nil, nil, 80, 24, func() {}, f.err
}

func TestPromptQueueAndShare(t *testing.T) {
	p := NewPromptTerminal(fakeScreen{}, PromptOptions{AskTimeout: time.Minute})
	var mu sync.Mutex
	var shown []string
	active := 0
	release := make(chan struct{})
	p.dialog = func(ctx context.Context, _ io.Reader, _ io.Writer, _, _ int, r Request) (Decision, error) {
		mu.Lock()
		active++
		if active > 1 {
			t.Error("two prompts on screen at once")
		}
		shown = append(shown, r.Check.Value)
		mu.Unlock()
		<-release
		mu.Lock()
		active--
		mu.Unlock()
		return AllowedForSession(ByUser{Via: "dialog"}, r.Suggested...), nil
	}
	reqs := []Request{promptRequest(), promptRequest(), promptRequest()}
	reqs[2].Check.Value = "git status"
	var wg sync.WaitGroup
	out := make([]Decision, len(reqs))
	for i, r := range reqs {
		wg.Add(1)
		go func() { defer wg.Done(); out[i] = p.Decide(context.Background(), r) }()
		time.Sleep(20 * time.Millisecond) // in order: the first owns the prompt
	}
	release <- struct{}{}
	release <- struct{}{}
	wg.Wait()
	if len(shown) != 2 || shown[0] != "git checkout main" || shown[1] != "git status" {
		t.Fatalf("prompts shown: %q", shown)
	}
	var sessionRules int
	for _, d := range out {
		if d.Action() != engine.Allow || d.DecidedBy().Kind() != "user" {
			t.Fatalf("%v", d)
		}
		if len(d.SessionRules()) > 0 {
			sessionRules++
		}
	}
	if sessionRules != 2 { // the sharer gets the answer, not a second copy of the rule
		t.Fatalf("%d session rules", sessionRules)
	}
}

func TestPromptTimeout(t *testing.T) {
	p := NewPromptTerminal(fakeScreen{}, PromptOptions{AskTimeout: 50 * time.Millisecond})
	p.dialog = func(ctx context.Context, _ io.Reader, _ io.Writer, _, _ int, r Request) (Decision, error) {
		<-ctx.Done()
		return Decision{}, ctx.Err()
	}
	d := p.Decide(context.Background(), promptRequest())
	if d.Action() != engine.Deny || d.Reason() != ReasonTimedOut || d.DecidedBy() != (ByUnavailable{Reason: ReasonTimedOut}) {
		t.Fatalf("%v", d)
	}
	if OutcomeEvent(true, d) != EventTimedOut {
		t.Fatalf("event %s", OutcomeEvent(true, d))
	}
}

func TestPromptScreenUnavailable(t *testing.T) {
	p := NewPromptTerminal(fakeScreen{err: io.ErrClosedPipe}, PromptOptions{})
	d := p.Decide(context.Background(), promptRequest())
	if d.Action() != engine.Deny || d.DecidedBy().Kind() != "unavailable" {
		t.Fatalf("%v", d)
	}
}

// Esc and Ctrl-C dismiss the prompt with a deny, from the list and from
// the text fields alike; Ctrl-C also interrupts the command, after the
// screen is given back, and Esc does not.
func TestPromptEscAndCtrlCDeny(t *testing.T) {
	for _, c := range []struct {
		name  string
		open  int // the option opened first (-1: none)
		wait  string
		key   string
		extra string
	}{
		{"esc at the list", -1, "", keyEsc, ""},
		{"ctrl-c at the list", -1, "", keyCtrlC, ""},
		{"esc while typing a reason", 3, "Reason", keyEsc, ""},
		{"ctrl-c while editing a pattern", 1, "bash pattern", keyCtrlC, ""},
		{"esc in the full request", 4, "The full request", keyEsc, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newPtyScreen(t)
			ch := runPrompt(t, s, promptRequest())
			s.waitFor(t, "Allow once")
			if c.open >= 0 {
				s.choose(t, c.open)
				if c.wait != "" {
					s.waitFor(t, c.wait)
				}
			}
			time.Sleep(100 * time.Millisecond) // a lone ESC must not read as the start of a sequence
			s.typeKeys(t, c.key)
			d := await(t, ch)
			want, interrupts := ReasonDismissed, 0
			if c.key == keyCtrlC {
				want, interrupts = ReasonInterrupted, 1
			}
			if d.Action() != engine.Deny || d.Reason() != want || d.DecidedBy() != (ByUser{Via: "dialog"}) {
				t.Fatalf("%v", d)
			}
			if len(d.SessionRules()) != 0 {
				t.Fatal("a dismissal carries a session rule")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.interrupts != interrupts {
				t.Fatalf("%d interrupts, want %d", s.interrupts, interrupts)
			}
			if interrupts > 0 && s.releasedAt != 1 {
				t.Fatalf("interrupted with the screen still lent (%d releases before)", s.releasedAt)
			}
			if s.released != 1 {
				t.Fatalf("%d releases", s.released)
			}
		})
	}
}

func policyFile(t *testing.T, text string) *PolicyFile {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.jsonc")
	if err := os.WriteFile(p, []byte(text), 0o640); err != nil {
		t.Fatal(err)
	}
	return &PolicyFile{Path: p, Loaded: []byte(text)}
}

const userPolicy = `// mine
{
  "permission": {
    "bash": {
      "*": "allow",
      "git *": "ask" // ask about git
    }
  }
}
`

func runPromptWith(t *testing.T, s *ptyScreen, opts PromptOptions, r Request) (*PromptTerminal, <-chan Decision) {
	t.Helper()
	opts.AskTimeout = time.Minute
	p := NewPromptTerminal(s, opts)
	ch := make(chan Decision, 1)
	go func() { ch <- p.Decide(context.Background(), r) }()
	return p, ch
}

// "Always allow" writes the (edited) pattern to the policy file with a
// comment naming the date and the request, keeps the file's comments, and
// allows for the rest of this session too.
func TestPromptAlwaysAllow(t *testing.T) {
	pf := policyFile(t, userPolicy)
	s := newPtyScreen(t)
	r := promptRequest()
	_, ch := runPromptWith(t, s, PromptOptions{Policy: pf}, r)
	s.waitFor(t, "Always allow (policy.jsonc): bash:git checkout *")
	s.waitFor(t, "Always deny (policy.jsonc): bash:git checkout *")
	s.choose(t, 2)
	s.waitFor(t, "Always allow: bash pattern")
	s.waitFor(t, "written to "+pf.Path)
	s.typeKeys(t, keyCtrlU+"git checkout feature/*"+keyEnter)
	d := await(t, ch)
	want := SessionPattern{engine.SurfaceBash, "git checkout feature/*"}
	if rules := d.SessionRules(); d.Action() != engine.Allow || len(rules) != 1 || rules[0] != want {
		t.Fatalf("%v", d)
	}
	saved := d.Saved()
	if len(saved) != 1 || saved[0] != (SavedRule{engine.SurfaceBash, "git checkout feature/*", engine.Allow, pf.Path}) {
		t.Fatalf("saved %v", saved)
	}
	b, _ := os.ReadFile(pf.Path)
	text := string(b)
	for _, frag := range []string{"// mine", "// ask about git", `"git checkout feature/*": "allow"`,
		"// permwrap: always allow, " + time.Now().Format("2006-01-02") + ", request " + string(r.ID)} {
		if !strings.Contains(text, frag) {
			t.Errorf("policy file lacks %q:\n%s", frag, text)
		}
	}
	if _, _, err := engine.CheckFile(pf.Path, b, engine.FileGlobal, engine.Env{Home: "/h", Workspace: "/w", TmpDir: "/tmp"}); err != nil {
		t.Fatalf("written policy does not load: %v", err)
	}
	if st, _ := os.Stat(pf.Path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the file's own 0640", st.Mode().Perm())
	}
}

// "Always deny" writes a deny rule, and a later matching ask in this run
// is denied without a prompt.
func TestPromptAlwaysDeny(t *testing.T) {
	pf := policyFile(t, userPolicy)
	s := newPtyScreen(t)
	p, ch := runPromptWith(t, s, PromptOptions{Policy: pf}, promptRequest())
	s.waitFor(t, "Always deny")
	s.choose(t, 5)
	s.waitFor(t, "Always deny: bash pattern")
	s.typeKeys(t, keyEnter)
	d := await(t, ch)
	if saved := d.Saved(); d.Action() != engine.Deny || len(saved) != 1 || saved[0].Action != engine.Deny || saved[0].Pattern != "git checkout *" {
		t.Fatalf("%v", d)
	}
	if b, _ := os.ReadFile(pf.Path); !strings.Contains(string(b), `"git checkout *": "deny"`) {
		t.Fatalf("policy file:\n%s", b)
	}
	again := promptRequest()
	again.Check.Value = "git checkout other"
	d2 := p.Decide(context.Background(), again)
	if d2.Action() != engine.Deny || d2.DecidedBy() != (ByUser{Via: "always deny"}) {
		t.Fatalf("second ask: %v", d2)
	}
	if s.acquired != 1 {
		t.Fatalf("the screen was taken %d times, want 1 (no second prompt)", s.acquired)
	}
}

// A policy file changed since it was loaded is not written; the person
// reads why on the prompt's own screen, and the approval holds for the
// session.
func TestPromptAlwaysRefusedWhenFileChanged(t *testing.T) {
	pf := policyFile(t, userPolicy)
	edited := strings.Replace(userPolicy, `"git *": "ask"`, `"git *": "deny"`, 1)
	if err := os.WriteFile(pf.Path, []byte(edited), 0o640); err != nil {
		t.Fatal(err)
	}
	s := newPtyScreen(t)
	_, ch := runPromptWith(t, s, PromptOptions{Policy: pf}, promptRequest())
	s.waitFor(t, "Always allow")
	s.choose(t, 2)
	s.waitFor(t, "bash pattern")
	s.typeKeys(t, keyEnter)
	s.waitFor(t, "loaded it; not written")
	s.waitFor(t, "Allowed for this session only.")
	select {
	case d := <-ch:
		t.Fatalf("the screen was given back before the person read the notice: %v", d)
	case <-time.After(200 * time.Millisecond):
	}
	s.typeKeys(t, keyEnter)
	d := await(t, ch)
	if len(d.SessionRules()) != 1 || d.Action() != engine.Allow {
		t.Fatalf("%v", d)
	}
	if len(d.Saved()) != 0 {
		t.Fatal("reported as saved")
	}
	if b, _ := os.ReadFile(pf.Path); string(b) != edited {
		t.Fatalf("the changed file was written:\n%s", b)
	}
}

// Human-only requests offer neither session nor "always" options.
func TestPromptHumanOnlyHasNoAlways(t *testing.T) {
	pf := policyFile(t, userPolicy)
	s := newPtyScreen(t)
	r := promptRequest()
	r.HumanOnly = true
	_, ch := runPromptWith(t, s, PromptOptions{Policy: pf}, r)
	s.waitFor(t, "Show the full request")
	if text := s.screenText(); strings.Contains(text, "Always") || strings.Contains(text, "session") {
		t.Fatalf("human-only prompt offers more than once or deny:\n%s", text)
	}
	s.typeKeys(t, keyEsc)
	if d := await(t, ch); d.Action() != engine.Deny {
		t.Fatalf("%v", d)
	}
}

// A resize lays the facts out again for the new width.
func TestPromptRelayoutOnResize(t *testing.T) {
	s := newPtyScreen(t)
	r := promptRequest()
	r.Check = engine.Check{Surface: engine.SurfaceWrite, Value: "/home/u/projects/permwrap/a-rather-long-directory-name/and/a/file-at-the-end.txt"}
	r.Access = "create"
	ch := runPrompt(t, s, r)
	s.waitFor(t, "file-at-the-end.txt")
	if strings.Contains(s.screenText(), "…/file-at-the-end.txt") {
		t.Fatal("elided at 100 columns")
	}
	s.clear()
	if err := pty.Setsize(s.ptmx, &pty.Winsize{Rows: 30, Cols: 60}); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGWINCH)
	// The tail of the 100-column screen may still arrive after clear (it
	// was written before the resize): wait for a "what:" line laid out
	// for 60 columns, elided and still naming the file.
	relaid := func() (bool, []string) {
		var wide []string
		for _, l := range strings.Split(s.screenText(), "\n") {
			l = strings.TrimRight(l, "\r")
			if !strings.HasPrefix(l, "what:") {
				continue
			}
			if runewidth.StringWidth(l) <= 60 && strings.Contains(l, "…") && strings.HasSuffix(strings.TrimSpace(l), "file-at-the-end.txt") {
				return true, nil
			}
			wide = append(wide, l)
		}
		return false, wide
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, wide := relaid()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no \"what:\" line laid out for the new 60 columns; seen: %q", wide)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.typeKeys(t, keyEsc)
	await(t, ch)
}

type holdingScreen struct {
	*ptyScreen
	held []string
}

func (h holdingScreen) HeldNotices() []string { return h.held }

// Notices the relay holds back while the agent draws are shown on the
// prompt's own screen, the latest few, with how many there are.
func TestPromptShowsHeldNotices(t *testing.T) {
	s := newPtyScreen(t)
	held := []string{"permwrap: denied read /a", "permwrap: denied read /b", "permwrap: denied read /c", "permwrap: denied read /d\x1b[2J"}
	p := NewPromptTerminal(holdingScreen{s, held}, PromptOptions{AskTimeout: time.Minute})
	ch := make(chan Decision, 1)
	go func() { ch <- p.Decide(context.Background(), promptRequest()) }()
	s.waitFor(t, "Allow once")
	s.waitFor(t, "Not shown while the agent had the screen (4; all are printed when it exits):")
	text := s.screenText()
	for _, want := range []string{"denied read /b", "denied read /c", `denied read /d\x1b[2J`} {
		if !strings.Contains(text, want) {
			t.Errorf("prompt lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "denied read /a") {
		t.Errorf("more than the latest three shown:\n%s", text)
	}
	s.typeKeys(t, keyEsc)
	await(t, ch)
}

// scriptRequest is an exec of a script whose command and redirect asked:
// two session patterns are suggested.
func scriptRequest() Request {
	r := promptRequest()
	r.Check.Value = "bash -c 'make > build/out.txt'"
	r.Units = []string{"make"}
	r.Suggested = []SessionPattern{
		{Surface: engine.SurfaceBash, Pattern: "make"},
		{Surface: engine.SurfaceWrite, Pattern: "/w/build/**"},
	}
	return r
}

// A script's session patterns are all offered, each on its own line, and
// the person may edit any of them or leave one out by emptying it.
func TestPromptSessionPatternList(t *testing.T) {
	s := newPtyScreen(t)
	ch := runPrompt(t, s, scriptRequest())
	s.waitFor(t, "Allow for this session: bash:make, write:/w/build/**")
	s.choose(t, 1)
	s.waitFor(t, "Allow for this session: 2 patterns, one a line")
	s.waitFor(t, "bash: make")
	s.waitFor(t, "write: /w/build/**")
	// An invalid line is refused, naming it; the list stays.
	s.typeKeys(t, keyDown, keyCtrlU+"/w/[unclosed"+keyEnter)
	s.waitFor(t, "line 2: not a valid write pattern")
	// Emptied: left out. The first line, edited.
	s.typeKeys(t, keyCtrlU, keyUp, keyCtrlU+"make test"+keyEnter)
	d := await(t, ch)
	want := []SessionPattern{{engine.SurfaceBash, "make test"}}
	if got := d.SessionRules(); d.Action() != engine.Allow || !reflect.DeepEqual(got, want) {
		t.Fatalf("%v: session rules %v, want %v", d, got, want)
	}

	// Accepted as offered: both.
	s = newPtyScreen(t)
	ch = runPrompt(t, s, scriptRequest())
	s.waitFor(t, "Allow once")
	s.choose(t, 1)
	s.waitFor(t, "write: /w/build/**")
	s.typeKeys(t, keyEnter)
	d = await(t, ch)
	if got := d.SessionRules(); !reflect.DeepEqual(got, scriptRequest().Suggested) {
		t.Fatalf("session rules %v, want %v", got, scriptRequest().Suggested)
	}

	// Every line emptied: nothing to allow for the session; the prompt
	// says so and waits.
	s = newPtyScreen(t)
	ch = runPrompt(t, s, scriptRequest())
	s.waitFor(t, "Allow once")
	s.choose(t, 1)
	s.waitFor(t, "write: /w/build/**")
	s.typeKeys(t, keyCtrlU, keyDown, keyCtrlU+keyEnter)
	s.waitFor(t, "every pattern is empty")
	s.typeKeys(t, keyEsc)
	if d := await(t, ch); d.Action() != engine.Deny || len(d.SessionRules()) != 0 {
		t.Fatalf("%v", d)
	}
}

// "Always allow" of a script writes every pattern of the list, in one
// replacement of the file.
func TestPromptAlwaysAllowList(t *testing.T) {
	pf := policyFile(t, userPolicy)
	s := newPtyScreen(t)
	_, ch := runPromptWith(t, s, PromptOptions{Policy: pf}, scriptRequest())
	s.waitFor(t, "Always allow")
	s.choose(t, 2)
	s.waitFor(t, "Always allow: 2 patterns, one a line")
	s.typeKeys(t, keyEnter)
	d := await(t, ch)
	if len(d.SessionRules()) != 2 || len(d.Saved()) != 2 {
		t.Fatalf("%v", d)
	}
	b, _ := os.ReadFile(pf.Path)
	for _, frag := range []string{`"make": "allow"`, `"/w/build/**": "allow"`, "// ask about git"} {
		if !strings.Contains(string(b), frag) {
			t.Errorf("policy file lacks %q:\n%s", frag, b)
		}
	}
}

// "Always deny" of a list denies for the rest of the run: the decision
// carries the patterns as session denies, and an ask that was already
// waiting for the prompt is denied without one.
func TestPromptAlwaysDenyListAndQueued(t *testing.T) {
	pf := policyFile(t, userPolicy)
	s := newPtyScreen(t)
	p, ch := runPromptWith(t, s, PromptOptions{Policy: pf}, scriptRequest())
	s.waitFor(t, "Always deny")
	// A second ask, queued behind the prompt on screen.
	queued := promptRequest()
	queued.Check = engine.Check{Surface: engine.SurfaceWrite, Value: "/w/build/other.o"}
	qch := make(chan Decision, 1)
	go func() { qch <- p.Decide(context.Background(), queued) }()
	time.Sleep(100 * time.Millisecond)
	s.choose(t, 5)
	s.waitFor(t, "Always deny: 2 patterns")
	s.typeKeys(t, keyEnter)
	d := await(t, ch)
	if d.Action() != engine.Deny || !reflect.DeepEqual(d.SessionRules(), scriptRequest().Suggested) || len(d.Saved()) != 2 {
		t.Fatalf("%v", d)
	}
	q := await(t, qch)
	if q.Action() != engine.Deny || q.DecidedBy() != (ByUser{Via: AlwaysDenyVia}) {
		t.Fatalf("the queued ask: %v", q)
	}
	if s.acquired != 1 {
		t.Fatalf("the screen was taken %d times, want 1", s.acquired)
	}
}

// The prompt fits the screen it is drawn on, title included, however
// much the request holds: the renderer keeps the last rows of a view
// taller than the screen, so one line too many loses the title.
func TestPromptFitsTheScreen(t *testing.T) {
	r := promptRequest()
	for i := range 200 {
		r.Runs = append(r.Runs, fmt.Sprintf("command number %d of a long script", i))
	}
	for height := 14; height <= 50; height++ { // 14: the title, one fact and the seven choices with their lines
		m := newPromptModel(r, 80, height, PromptOptions{AskTimeout: time.Minute})
		lines := strings.Split(m.View(), "\n")
		if len(lines) > height {
			t.Fatalf("height %d: the view has %d lines", height, len(lines))
		}
		if !strings.Contains(lines[0], "permwrap: permission request") {
			t.Fatalf("height %d: the first line is %q", height, lines[0])
		}
	}
}
