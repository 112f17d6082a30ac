package supervisor_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/internal/testutil"
)

// The prompt over real full-screen programs: after every answer, the
// program's screen under permwrap is the screen the same program draws
// without permwrap, for the same keys and the same outcomes (tmux
// capture-pane with attributes, the cursor and the terminal's modes).
// Without permwrap nothing refuses anything, so the bare run's target
// directory is missing where the wrapped run is denied: the programs
// show only "ok" or "refused", and the error codes go to a side log the
// test reads.

// needTool skips a test that needs a program the machine lacks, and
// fails it when kernel tests are required (CI installs them all:
// scripts/lib.sh ensure_test_deps).
func needTool(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		kerneltest.Tool(t, tool)
	}
}

func tuiProg(name string) string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(filepath.Dir(self)), "testdata", "tui", name)
}

const tuiPolicy = `{ "extends": "none", "permission": { "*": "allow",
  "write": { "*": "allow", "${WORKSPACE}/ASK/**": "ask" },
  "bash": { "*": "allow", "rm -rf nothing*": { "action": "deny", "reason": "nothing to delete here" } } } }`

// tuiSide is one run of a program in its own tmux server: bare, or under
// permwrap.
type tuiSide struct {
	ts      *tmuxSession
	s       *sandbox
	wrapped bool
	log     string // the program's side log
}

func startTUI(t *testing.T, wrapped bool, target string, argv ...string) *tuiSide {
	t.Helper()
	s := newSandbox(t, tuiPolicy)
	if err := os.MkdirAll(s.path("ASK"), 0o755); err != nil {
		t.Fatal(err)
	}
	side := &tuiSide{s: s, wrapped: wrapped, log: filepath.Join(s.dir, "tui.log")}
	env := []string{"TUI_TARGET=" + target, "TUI_LOG=" + side.log, "LANG=C.UTF-8", "LC_ALL=C.UTF-8"}
	if wrapped {
		side.ts = newTmuxEnv(t, s, true, env, argv...)
	} else {
		side.ts = newTmuxEnv(t, s, false, env, argv...)
	}
	// A Ctrl-C the bare program gets reaches the script around it too,
	// which then ends without its exit line: keep the pane to read.
	side.ts.tmux("set-option", "-t", side.ts.name, "remain-on-exit", "on")
	side.ts.waitFor("APP ")
	return side
}

// state is what a person sees: the screen with its attributes, the
// cursor and the modes the terminal is in.
func (side *tuiSide) state() string {
	scr := side.ts.tmux("capture-pane", "-t", side.ts.name, "-p", "-e")
	modes := side.ts.tmux("display", "-p", "-t", side.ts.name,
		"cursor #{cursor_x},#{cursor_y} visible=#{cursor_flag} alt=#{alternate_on} mouse=#{mouse_any_flag},#{mouse_sgr_flag} keypad=#{keypad_flag},#{keypad_cursor_flag} insert=#{insert_flag} wrap=#{wrap_flag} origin=#{origin_flag} region=#{scroll_region_upper},#{scroll_region_lower} size=#{pane_width}x#{pane_height}")
	return scr + "--\n" + modes
}

// settle waits until the screen shows want and has not changed for a
// while (a repaint after a prompt comes within a second).
func (side *tuiSide) settle(t *testing.T, want string) string {
	t.Helper()
	side.ts.waitFor(want)
	deadline := time.Now().Add(testutil.Scale(20 * time.Second))
	last, since := side.state(), time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(150 * time.Millisecond)
		cur := side.state()
		if cur != last {
			last, since = cur, time.Now()
			continue
		}
		if time.Since(since) >= 1500*time.Millisecond && strings.Contains(cur, want) {
			return cur
		}
	}
	t.Fatalf("screen never settled on %q:\n%s", want, last)
	return ""
}

// ended waits until the screen shows operation n's result or the
// program's end, and returns "ended" when it ended (its exit line shown,
// or its pane dead: the Ctrl-C ended the script around it too), "" when
// it goes on.
func (side *tuiSide) ended(t *testing.T, n int) string {
	t.Helper()
	op := fmt.Sprintf("op %d:", n)
	deadline := time.Now().Add(testutil.Scale(20 * time.Second))
	for {
		dead := func() bool {
			return strings.TrimSpace(side.ts.tmux("display", "-p", "-t", side.ts.name, "#{pane_dead}")) == "1"
		}
		scr := side.ts.screen()
		if strings.Contains(scr, "PERMWRAP-EXIT=") || dead() {
			return "ended"
		}
		if strings.Contains(scr, op) {
			// Give a signal time to land before calling it "goes on".
			time.Sleep(testutil.Scale(500 * time.Millisecond))
			if scr = side.ts.screen(); !strings.Contains(scr, "PERMWRAP-EXIT=") && !dead() {
				return ""
			}
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("neither %q nor the program's end on screen:\n%s", op, scr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// records reads the program's side log.
func (side *tuiSide) records(t *testing.T) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(side.log)
	if err != nil {
		t.Fatalf("side log: %v", err)
	}
	return testutil.ParseRecords(t, "side log", b)
}

// prompt is one answer at the prompt: the option chosen by its label
// ("" for none), then keys sent in turn (each one send-keys call; "lit:"
// sends text literally), after an optional resize of the terminal while
// the prompt is up.
type prompt struct {
	resize bool
	choose string
	keys   []string
}

// answer chooses the option whose label starts with p.choose from the
// list on screen, wherever the selection is now, then sends p.keys.
func (ts *tmuxSession) answer(p prompt) {
	ts.t.Helper()
	if p.choose != "" {
		scr := ts.waitFor(p.choose)
		lines := strings.Split(scr, "\n")
		start := -1
		for i, l := range lines {
			if strings.Contains(l, "Allow this?") {
				start = i + 1
				break
			}
		}
		idx := -1
		for i := start; start >= 0 && i < len(lines); i++ {
			opt := strings.TrimSpace(strings.TrimLeft(lines[i], " >┃│"))
			if opt == "" {
				break
			}
			if strings.HasPrefix(opt, p.choose) {
				idx = i - start
				break
			}
		}
		if idx < 0 {
			ts.t.Fatalf("no option %q on the prompt:\n%s", p.choose, scr)
		}
		ts.keys(append([]string{"Home"}, append(repeat("Down", idx), "Enter")...)...)
	}
	for _, key := range p.keys {
		time.Sleep(100 * time.Millisecond)
		if lit, ok := strings.CutPrefix(key, "lit:"); ok {
			ts.tmux("send-keys", "-t", ts.name, "-l", lit)
		} else {
			ts.keys(key)
		}
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

type tuiCase struct {
	name    string
	keys    string   // keys for the program, one operation each
	prompts []prompt // one per key that asks (in order)
	denied  bool     // the operations are refused (the bare run gets a missing target)
	expect  string   // what the settled screen shows
	// interrupt: the answer is Ctrl-C, which denies and reaches the
	// program as if typed; bare, the person types it after the
	// operation. A program that reads keys raw (Node) gets the key and
	// goes on; one whose terminal makes it a signal (curses' cbreak) is
	// interrupted, bare and wrapped alike.
	interrupt bool
}

var tuiCases = []tuiCase{
	{name: "allow once", keys: "w", prompts: []prompt{{choose: "Allow once"}}, expect: "op 1: write ok"},
	{name: "deny", keys: "w", prompts: []prompt{{choose: "Deny"}}, denied: true, expect: "op 1: write refused"},
	{name: "deny with a reason", keys: "w", prompts: []prompt{{choose: "Deny with a reason", keys: []string{"lit:use the tmp dir", "Enter"}}}, denied: true, expect: "op 1: write refused"},
	{name: "allow for the session", keys: "ww", prompts: []prompt{{choose: "Allow for this session", keys: []string{"Enter"}}}, expect: "op 2: write ok"},
	{name: "esc", keys: "w", prompts: []prompt{{keys: []string{"Escape"}}}, denied: true, expect: "op 1: write refused"},
	{name: "ctrl-c", keys: "w", prompts: []prompt{{keys: []string{"C-c"}}}, denied: true, expect: "op 1: write refused", interrupt: true},
	{name: "resize during the prompt", keys: "w", prompts: []prompt{{resize: true, choose: "Allow once"}}, expect: "op 1: write ok"},
}

// drive runs one case on both sides and compares what they show.
func (c tuiCase) drive(t *testing.T, argv ...string) (bare, wrapped *tuiSide) {
	bareTarget := "ASK"
	if c.denied {
		bareTarget = "missing"
	}
	bare = startTUI(t, false, bareTarget, argv...)
	wrapped = startTUI(t, true, "ASK", argv...)
	// The same starting screen, or nothing after it can match.
	if b, w := bare.settle(t, "keys:"), wrapped.settle(t, "keys:"); b != w {
		t.Fatalf("the programs start differently\nbare:\n%s\nwrapped:\n%s", b, w)
	}
	asks := c.prompts
	for i, k := range c.keys {
		bare.ts.keys(string(k))
		wrapped.ts.keys(string(k))
		bare.settle(t, fmt.Sprintf("op %d:", i+1))
		if len(asks) > 0 {
			p := asks[0]
			asks = asks[1:]
			wrapped.ts.waitFor("permwrap: permission request")
			if p.resize {
				wrapped.ts.tmux("resize-window", "-t", wrapped.ts.name, "-x", "80", "-y", "24")
				wrapped.ts.waitFor("permwrap: permission request")
				bare.ts.tmux("resize-window", "-t", bare.ts.name, "-x", "80", "-y", "24")
			}
			wrapped.ts.answer(p)
		}
		if c.interrupt {
			bare.ts.keys("C-c")
			bEnd, wEnd := bare.ended(t, i+1), wrapped.ended(t, i+1)
			if bEnd != wEnd {
				t.Fatalf("Ctrl-C: bare the program %q, wrapped %q (\"\": it went on)", bEnd, wEnd)
			}
			if bEnd != "" {
				return bare, wrapped // interrupted alike: nothing more to compare
			}
		}
		wrapped.ts.waitFor(fmt.Sprintf("op %d:", i+1))
	}
	b, w := bare.settle(t, c.expect), wrapped.settle(t, c.expect)
	if b != w {
		t.Errorf("the screen under permwrap differs from the bare run\nbare:\n%s\nwrapped:\n%s", b, w)
	}
	if strings.Contains(w, "permwrap") {
		t.Errorf("permwrap wrote into the program's screen:\n%s", w)
	}
	return bare, wrapped
}

// finish quits the wrapped program and checks that every decision is in
// the review log, and the exit summary of notices held back.
func (c tuiCase) finish(t *testing.T, wrapped *tuiSide) string {
	t.Helper()
	var scr string
	if c.interrupt && wrapped.ended(t, len(c.keys)) != "" {
		scr = wrapped.ts.waitFor("PERMWRAP-EXIT=")
	} else {
		wrapped.ts.keys("q")
		scr = wrapped.ts.waitFor("PERMWRAP-EXIT=0")
	}
	var decided int
	for _, rec := range wrapped.s.logRecords() {
		if rec["requestId"] == nil || rec["decidedBy"] == nil {
			t.Errorf("record without requestId/decidedBy: %v", rec)
		}
		switch rec["event"] {
		case "permission_request.approved", "permission_request.rejected":
			decided++
		}
	}
	if decided != len(c.prompts) {
		t.Errorf("%d decisions by a person in the review log, want %d", decided, len(c.prompts))
	}
	if c.denied && !strings.Contains(scr, "permwrap: denied write") {
		t.Errorf("the denial notice held back while the program ran was not shown after it exited:\n%s", scr)
	}
	return scr
}

// runTUICases drives the cases named in only (all when empty) over argv.
func runTUICases(t *testing.T, only []string, argv ...string) {
	for _, c := range tuiCases {
		if len(only) > 0 && !slices.Contains(only, c.name) {
			continue // the other answers exercise nothing new for this program
		}
		t.Run(c.name, func(t *testing.T) {
			_, wrapped := c.drive(t, argv...)
			c.finish(t, wrapped)
		})
	}
}

func TestPromptOverNodeInline(t *testing.T) {
	kerneltest.Long(t)
	needTool(t, "tmux", "node")
	runTUICases(t, nil, "node", tuiProg("app.js"), "inline")
}

func TestPromptOverNodeFullScreen(t *testing.T) {
	kerneltest.Long(t)
	needTool(t, "tmux", "node")
	runTUICases(t, nil, "node", tuiProg("app.js"), "fullscreen")
}

func TestPromptOverPythonCurses(t *testing.T) {
	kerneltest.Long(t)
	needTool(t, "tmux", "python3")
	runTUICases(t, nil, "python3", tuiProg("curses_app.py"))
}

// The reason reaches the model through the child's stderr when that is
// a socketpair (what Node's child_process gives), both for a write the
// person denied with a reason and for a script refused whole at exec:
// that spawn succeeds, and the child is killed before it runs anything,
// with the reason on its stderr (a spawn failed with EACCES would leave
// the agent "spawn /bin/bash EACCES", and the line arriving after it).
func TestReasonReachesNodeChild(t *testing.T) {
	needTool(t, "tmux", "node")
	wrapped := startTUI(t, true, "ASK", "node", tuiProg("app.js"), "inline")
	wrapped.ts.keys("s")
	wrapped.ts.waitFor("permwrap: permission request")
	wrapped.ts.answer(prompt{choose: "Deny with a reason", keys: []string{"lit:use the tmp dir", "Enter"}})
	wrapped.ts.waitFor("op 1: child refused")
	wrapped.ts.keys("x")
	wrapped.ts.waitFor("op 2: spawn refused")
	recs := wrapped.records(t)
	if len(recs) != 2 {
		t.Fatalf("side log: %v", recs)
	}
	child, spawned := recs[0], recs[1]
	stderr, _ := child["stderr"].(string)
	for _, want := range []string{"permwrap: denied write " + wrapped.s.path("ASK/child1.txt") + ": use the tmp dir — by the person at the prompt; request ", "EACCES"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the denied child's stderr lacks %q:\n%s", want, stderr)
		}
	}
	if spawned["spawnError"] != "" || spawned["signal"] != "SIGKILL" {
		t.Errorf("the refused script: %v, want a spawn that succeeded and a child killed by SIGKILL", spawned)
	}
	stderr, _ = spawned["stderr"].(string)
	want := "permwrap: denied exec of bash: nothing to delete here — rule bash:rm -rf nothing* (deny, "
	if !strings.Contains(stderr, want) {
		t.Errorf("the refused spawn's stderr lacks %q:\n%q", want, stderr)
	}
	if strings.Contains(stderr, "rm -rf nothing-2") {
		t.Errorf("the agent's line repeats the command body:\n%s", stderr)
	}
}

// A Go program on bubbletea, whose renderer rewrites only changed lines.
func TestPromptOverGoBubbletea(t *testing.T) {
	kerneltest.Long(t)
	needTool(t, "tmux")
	runTUICases(t, []string{"allow once", "deny", "resize during the prompt"}, teaApp(t))
}

// teaApp is the bubbletea program: $PERMWRAP_TEST_TEAAPP when set (what
// ./scripts/test builds once, before the tests, so that no test builds
// it under the load of the others), else built here, bounded
// (testutil.GoBuild).
func teaApp(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PERMWRAP_TEST_TEAAPP"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("PERMWRAP_TEST_TEAAPP: %v", err)
		}
		return p
	}
	bin := filepath.Join(t.TempDir(), "teaapp")
	testutil.GoBuild(t, filepath.Dir(filepath.Dir(tuiProg(""))), bin, "./testdata/tui/teaapp")
	return bin
}

// While a full-screen program runs, a denial notice waits: the next
// prompt shows it, and the summary after the program exits lists it.
func TestHeldNoticesAtPromptAndExit(t *testing.T) {
	needTool(t, "tmux", "node")
	wrapped := startTUI(t, true, "ASK", "node", tuiProg("app.js"), "fullscreen")
	wrapped.ts.keys("w")
	wrapped.ts.waitFor("permwrap: permission request")
	wrapped.ts.answer(prompt{choose: "Deny"})
	wrapped.ts.waitFor("op 1: write refused")
	if scr := wrapped.ts.screen(); strings.Contains(scr, "permwrap") {
		t.Fatalf("a notice was written into the program's screen:\n%s", scr)
	}
	wrapped.ts.keys("w")
	scr := wrapped.ts.waitFor("Not shown while the agent had the screen (1;")
	mustContain(t, "prompt", scr, "permwrap: denied write "+wrapped.s.path("ASK/1.txt"))
	wrapped.ts.keys("Escape")
	wrapped.ts.waitFor("op 2: write refused")
	wrapped.ts.keys("q")
	wrapped.ts.waitFor("PERMWRAP-EXIT=0")
	scr = wrapped.ts.tmux("capture-pane", "-t", wrapped.ts.name, "-p", "-J") // wrapped lines joined
	mustContain(t, "exit summary", scr, "permwrap: 2 notices were not shown while the command had the terminal:")
	mustContain(t, "exit summary", scr, "permwrap: denied write "+wrapped.s.path("ASK/1.txt")+" — by the person at the prompt; request ")
	mustContain(t, "exit summary", scr, "permwrap: denied write "+wrapped.s.path("ASK/2.txt")+" — dismissed at the prompt; request ")
}

// A program that writes plain lines (a shell running a command, in
// canonical mode) gets the notice at once, in order with its own output;
// one that left the cursor mid-line gets it once the line is finished.
func TestNoticeInlineForLinePrograms(t *testing.T) {
	needTool(t, "tmux")
	s := newSandbox(t, `{ "permission": { "*": "allow", "write": { "*": "allow", "DENIED*": { "action": "deny", "reason": "test says no" } } } }`)
	ts := newTmux(t, s, "bash", "--norc", "--noprofile", "-i")
	ts.waitFor("$")
	// Markers the typed command line does not contain.
	ts.keys("echo x > DENIED1; echo after-$((0+1))", "Enter")
	ts.waitFor("after-1")
	joined := ts.tmux("capture-pane", "-t", ts.name, "-p", "-J") // wrapped lines joined
	notice := "permwrap: denied write " + s.path("DENIED1") + ": test says no — rule write:DENIED* (deny, "
	if i := strings.Index(joined, notice); i < 0 || i > strings.LastIndex(joined, "after-1") {
		t.Fatalf("the notice is not shown before the command's next line:\n%s", joined)
	}
	ts.keys("printf 'half-'; { echo y > DENIED2; } 2>/dev/null; sleep 1; echo line; echo done-$((1+1))", "Enter")
	ts.waitFor("done-2")
	time.Sleep(500 * time.Millisecond)
	joined = ts.tmux("capture-pane", "-t", ts.name, "-p", "-J")
	notice = "permwrap: denied write " + s.path("DENIED2")
	mustContain(t, "the screen", joined, "half-line\n")
	if !strings.Contains(joined, notice) || strings.Index(joined, notice) < strings.Index(joined, "half-line") {
		t.Fatalf("the notice should come after the line the program was writing, not cut into it:\n%s", joined)
	}
	ts.keys("exit", "Enter")
	ts.waitFor("PERMWRAP-EXIT=")
}
