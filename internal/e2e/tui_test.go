package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/internal/testutil"
)

// The agents' own terminal interfaces under permwrap, in tmux, with a
// policy where writes to one workspace file and one command ask: the
// agent's own Write and Edit each raise exactly one permwrap prompt,
// naming that file; a shell-tool call raises one prompt whose first
// command is the model's command; answering "Allow once" lets each go
// through, and the agent goes on to the end of its script.

// The write rule, in two shapes: one for every write in a directory, so
// a temporary file an agent's tool saves through (and renames over the
// file) is under it too, and one for the file alone, where only the
// rename over it asks.
var tuiPolicies = []struct{ name, write string }{
	{"a rule for the directory", `"${WORKSPACE}/notes/**": "ask"`},
	{"a rule for the file", `"${WORKSPACE}/notes/w.txt": "ask"`},
}

func tuiPolicy(write string) string {
	return `{
  "permission": {
    "write": { ` + write + ` },
    "bash": { "touch tui-marker*": "ask" }
  }
}`
}

// term is one program in a tmux server of its own.
type term struct {
	t    *testing.T
	sock string
}

// startTerm runs argv in a 120×40 tmux window in dir, with exactly the
// environment env (nothing of the test's own). The window stays open
// after the program exits.
func startTerm(t *testing.T, sockDir, dir string, env, argv []string) *term {
	t.Helper()
	kerneltest.Tool(t, "tmux")
	tm := &term{t: t, sock: filepath.Join(sockDir, "tmux.sock")}
	cmd := append(append([]string{"env", "-i"}, env...), argv...)
	tm.tmux("new-session", "-d", "-s", "e2e", "-x", "120", "-y", "40", "-c", dir,
		testutil.ShellQuote(cmd)+"; echo E2E-EXIT=$?; sleep 600")
	t.Cleanup(func() { exec.Command("tmux", "-S", tm.sock, "kill-server").Run() })
	return tm
}

func (tm *term) tmux(args ...string) string {
	tm.t.Helper()
	return testutil.Tmux(tm.t, tm.sock, args...)
}

func (tm *term) screen() string { return tm.tmux("capture-pane", "-p", "-t", "e2e") }

func (tm *term) keys(k ...string) { tm.tmux(append([]string{"send-keys", "-t", "e2e"}, k...)...) }

// promptShown reports permwrap's prompt on screen (by its question and
// key line: a long prompt's title can be above the window's top).
func promptShown(scr string) bool {
	return strings.Contains(scr, "Allow this?") && strings.Contains(scr, "enter confirm · esc deny")
}

// promptField is the text of a field of the prompt on screen ("what:",
// "units:"), with the lines that continue it, trimmed.
func promptField(scr, field string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(scr, "\n") {
		tl := strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(tl, field); ok {
			in = true
			out = append(out, strings.TrimSpace(rest))
			continue
		}
		if in {
			// A continuation is indented under the value; another
			// field or a blank line ends it.
			if tl == "" || (strings.Contains(tl, ":") && !strings.HasPrefix(l, "       ")) {
				break
			}
			out = append(out, tl)
		}
	}
	return out
}

// tuiAgent is how an agent runs on a terminal.
type tuiAgent struct {
	*agent
	setup       func(e *env, url string)
	env         func(e *env, url string) []string
	interactive func(prompt string) []string
}

var tuiAgents = []*tuiAgent{
	{
		agent: claudeCode,
		// Onboarding done, the workspace trusted, bypass mode accepted;
		// a token rather than an API key, which the interactive Claude
		// Code would ask about.
		setup: func(e *env, url string) {
			e.writeFile(filepath.Join(e.home, ".claude.json"), fmt.Sprintf(`{"hasCompletedOnboarding": true, "theme": "dark",
 "bypassPermissionsModeAccepted": true,
 "projects": {%q: {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}}}`, e.ws), 0o644)
			// A home Claude Code has started in before: its first start
			// with --dangerously-skip-permissions records that in its
			// settings, which the default policy guards (they can hold
			// hooks), so that start asks once. Its claude-cli:// URL
			// handler (a desktop entry, which the default guards: it
			// names a program to start) is turned off, as README says
			// to (it would ask at the first start, and a day after a
			// refusal).
			e.writeFile(filepath.Join(e.home, ".claude", "settings.json"), `{"skipDangerousModePermissionPrompt": true, "disableDeepLinkRegistration": "disable"}`+"\n", 0o644)
		},
		env: func(e *env, url string) []string {
			return []string{"IS_SANDBOX=1", "ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_AUTH_TOKEN=e2e-not-a-token",
				"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
				// Interactive, it would otherwise git-clone its plugin
				// marketplace from GitHub into ~/.claude/plugins.
				"CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1", "DISABLE_INSTALLATION_CHECKS=1"}
		},
		interactive: func(prompt string) []string {
			return []string{filepath.Join(nodeModules(), "@anthropic-ai/claude-code-linux-x64/claude"),
				"--dangerously-skip-permissions", "--model", "claude-sonnet-4-5", prompt}
		},
	},
	{
		agent: pi,
		setup: func(e *env, url string) {
			pi.setup(e, url)
			// A home pi has started in before: its first start of a
			// version records the version in its settings, which the
			// default policy guards (they load extensions), so that
			// start asks once.
			e.writeFile(filepath.Join(e.home, ".pi", "agent", "settings.json"), `{"lastChangelogVersion": "`+installedVersion(e.t, "@mariozechner/pi-coding-agent")+`"}`+"\n", 0o644)
		},
		env: func(e *env, url string) []string { return pi.env(url) },
		interactive: func(prompt string) []string {
			return []string{"node", filepath.Join(nodeModules(), "@mariozechner/pi-coding-agent/dist/cli.js"),
				"--no-session", "--model", "e2e/e2e-model", prompt}
		},
	},
}

// prompted is what one action raised.
type prompted struct {
	screens []string // each prompt as it was on screen
	asked   []string // the review log's answers at the prompt meanwhile
	stuck   bool     // the agent never went on
}

func TestAgentTUIPrompts(t *testing.T) {
	kerneltest.Long(t)
	for _, pol := range tuiPolicies {
		t.Run(pol.name, func(t *testing.T) {
			for _, a := range tuiAgents {
				t.Run(a.name, func(t *testing.T) { tuiRun(t, a, tuiPolicy(pol.write)) })
			}
		})
	}
}

// tuiRun is one agent's run on a terminal under policy.
func tuiRun(t *testing.T, a *tuiAgent, policy string) {
	requireSupervision(t)
	needAgent(t, a.agent)
	e := newEnv(t, policy)
	guarded := filepath.Join(e.ws, "notes", "w.txt")
	if err := os.MkdirAll(filepath.Dir(guarded), 0o755); err != nil {
		t.Fatal(err)
	}
	const bashCmd = "touch tui-marker && echo made-marker"
	write := &action{name: "own write tool", steps: a.write(guarded, "one\n")}
	edit := &action{name: "own edit tool", steps: a.edit(guarded, "one", "two")}
	bash := &action{name: "shell tool", steps: a.bash(bashCmd)}
	actions := []*action{write, edit, bash}
	srv := startModel(t, buildScript(actions))
	e.allowModel(srv.URL)
	a.setup(e, srv.URL)
	env := append(e.baseEnv(), "TERM=xterm-256color", "LC_ALL=C.UTF-8")
	env = append(env, a.env(e, srv.URL)...)
	argv := append(e.wrapArgs(), a.interactive("Follow the e2e script.")...)
	tm := startTerm(t, e.base, e.ws, env, argv)

	// Each action's result waits at the model until the test has
	// read the review log: the agent is idle meanwhile, so the
	// asks counted are the action's own.
	srv.Hold(0)
	for _, act := range actions {
		srv.Hold(act.last + 1)
	}
	seenAsks := 0
	// collect answers every prompt ("Allow once", the first
	// choice) until the conversation reaches turn, then takes
	// the asks the review log gained.
	var other []string // prompts and answers about nothing the script did
	collect := func(what string, turn int, related func(string) bool) *prompted {
		p := &prompted{}
		deadline := time.Now().Add(testutil.Scale(90 * time.Second))
		for srv.AtTurn(turn) == nil {
			if time.Now().After(deadline) {
				t.Errorf("%s: the agent never made its request at turn %d (%d prompts answered meanwhile)\nscreen:\n%s\nrequests:\n%s",
					what, turn, len(p.screens), tm.screen(), srv.Summary())
				p.stuck = true
				break
			}
			scr := tm.screen()
			if !promptShown(scr) {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if related(strings.Join(promptField(scr, "what:"), " ")) {
				p.screens = append(p.screens, scr)
			} else {
				other = append(other, scr)
			}
			tm.keys("Enter")
			// Wait for this prompt to go (a next one is another
			// screen: another request).
			gone := time.Now().Add(3 * time.Second)
			for time.Now().Before(gone) && tm.screen() == scr {
				time.Sleep(100 * time.Millisecond)
			}
		}
		var n int
		for _, rec := range e.logRecords() {
			if byPrompt(rec) {
				n++
				if n <= seenAsks {
					continue
				}
				if related(fmt.Sprint(rec["value"])) {
					p.asked = append(p.asked, describe(rec))
				} else {
					other = append(other, describe(rec))
				}
			}
		}
		seenAsks = n
		srv.Release(turn)
		return p
	}
	// Everything before the first request to the model is the
	// agent's start-up.
	startup := collect("start-up", 0, func(string) bool { return true })
	// A prompt belongs to an action when it is about the file
	// (or a file beside it) or the command the action used.
	aboutFile := func(v string) bool { return strings.Contains(v, guarded) }
	aboutCmd := func(v string) bool { return strings.Contains(v, "tui-marker") }
	got := map[*action]*prompted{}
	for _, act := range actions {
		rel := aboutFile
		if act == bash {
			rel = aboutCmd
		}
		if got[act] = collect(act.name, act.last+1, rel); got[act].stuck {
			break
		}
	}
	last := len(srv.Script()) - 1
	deadline := time.Now().Add(testutil.Scale(60 * time.Second))
	for srv.AtTurn(last) == nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	finalScreen := tm.screen()

	t.Run("a start after the first asks nothing", func(t *testing.T) {
		for i, scr := range startup.screens {
			t.Errorf("prompt %d before the agent's first request to the model:\n%s", i+1, scr)
		}
		if len(startup.asked) > 0 {
			t.Errorf("answers at the prompt in the review log before the first request:\n%s", strings.Join(startup.asked, "\n"))
		}
	})
	t.Run("no other prompt", func(t *testing.T) {
		for _, o := range other {
			t.Errorf("a prompt or answer about nothing the script did:\n%s", o)
		}
	})
	t.Run("own write tool", func(t *testing.T) { checkFilePrompt(t, got[write], guarded) })
	t.Run("own edit tool", func(t *testing.T) { checkFilePrompt(t, got[edit], guarded) })
	t.Run("shell tool", func(t *testing.T) {
		p := got[bash]
		checkOnePrompt(t, p)
		if p.stuck {
			t.Errorf("the agent was stuck at the prompts")
		}
		if len(p.screens) == 0 {
			return
		}
		first := firstCommand(p.screens[0])
		if !strings.HasPrefix(first, "touch tui-marker") {
			t.Errorf("the prompt's first command is %q, want the model's command %q:\n%s", first, bashCmd, p.screens[0])
		}
	})
	t.Run("went on", func(t *testing.T) {
		if b := e.readFile(guarded); b != "two\n" {
			t.Errorf("notes/w.txt holds %q, want \"two\\n\" (written, then edited)", b)
		}
		if _, err := os.Stat(filepath.Join(e.ws, "tui-marker")); err != nil {
			t.Errorf("the allowed command did not run: %v", err)
		}
		if srv.AtTurn(last) == nil {
			t.Errorf("the agent did not reach the end of its script\nscreen:\n%s\nrequests:\n%s", finalScreen, srv.Summary())
		}
		for _, rec := range e.logRecords() {
			if isDenial(rec) {
				t.Errorf("denied: %s", describe(rec))
			}
		}
	})
}

// byPrompt reports a record of an answer a person gave at the prompt
// (asks answered by an earlier approval of the same script are recorded
// as asked too, but decided "via script approval", without a prompt).
func byPrompt(rec map[string]any) bool {
	if rec["event"] != "permission_request.approved" && rec["event"] != "permission_request.rejected" {
		return false
	}
	d, _ := rec["decidedBy"].(map[string]any)
	return d["kind"] == "user" && d["via"] == "dialog"
}

// checkOnePrompt checks that an action raised exactly one prompt, on
// screen and in the review log.
func checkOnePrompt(t *testing.T, p *prompted) {
	t.Helper()
	if p == nil {
		t.Fatal("not reached: the agent was stuck before")
	}
	if len(p.screens) != 1 {
		t.Errorf("%d prompts on screen, want 1", len(p.screens))
		for i, s := range p.screens {
			t.Logf("prompt %d:\n%s", i+1, s)
		}
	}
	if len(p.asked) != 1 {
		t.Errorf("%d answers at the prompt in the review log, want 1:\n%s", len(p.asked), strings.Join(p.asked, "\n"))
	}
}

// checkFilePrompt checks that an own-tool write raised one prompt, and
// that it names the file (not a temporary file beside it).
func checkFilePrompt(t *testing.T, p *prompted, path string) {
	t.Helper()
	checkOnePrompt(t, p)
	if p.stuck {
		t.Errorf("the agent was stuck at the prompts")
	}
	// The file is named on the "what:" line (a write, a save through a
	// temporary file) or on the line after it (a rename's "→ FILE").
	for i, s := range p.screens {
		named := false
		for _, l := range promptField(s, "what:") {
			named = named || strings.HasSuffix(l, " "+path)
		}
		if !named {
			t.Errorf("prompt %d does not name the file %s:\n%s", i+1, path, s)
		}
	}
	for _, a := range p.asked {
		if !strings.Contains(a, fmt.Sprintf("%q", path)) {
			t.Errorf("the review log's answer is not about %s: %s", path, a)
		}
	}
}

// firstCommand is the first command a prompt lists: the command the
// model sent (an agent's shell tool wrapped it), else the first of its
// runs (what wrappers run) or units (a script's commands) when it has
// them, else the value on its "what:" line.
func firstCommand(scr string) string {
	if l := promptField(scr, "command:"); len(l) > 0 {
		return strings.TrimSpace(l[0])
	}
	for _, f := range []string{"runs:", "units:"} {
		if l := promptField(scr, f); len(l) > 0 {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(l[0], "- "), "1."))
		}
	}
	what := strings.Join(promptField(scr, "what:"), " ")
	if _, v, ok := strings.Cut(what, "(exec) "); ok {
		return v
	}
	return what
}

// installedVersion is the version of an installed npm package.
func installedVersion(t *testing.T, pkg string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(nodeModules(), pkg, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Version string }
	if err := json.Unmarshal(b, &v); err != nil || v.Version == "" {
		t.Fatalf("%s's package.json: %v", pkg, err)
	}
	return v.Version
}
