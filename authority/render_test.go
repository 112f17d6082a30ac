package authority

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/display"
)

var update = flag.Bool("update", false, "rewrite golden files")

func renderFixture() Request {
	r := Request{
		ID:      "0190a0b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b",
		Time:    time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC),
		Process: Process{PID: 31337, Comm: "bash", Exe: "/usr/bin/bash", Cmdline: []string{"bash", "-c", "make deploy"}},
		Agent:   []string{"claude", "--dangerously-skip-nothing"},
		Check:   engine.Check{Surface: engine.SurfaceBash, Value: "env AWS_PROFILE=prod nice -n 10 ./deploy.sh --region eu-west-1 --really"},
		Access:  "exec",
		Runs:    []string{"nice -n 10 ./deploy.sh --region eu-west-1 --really", "./deploy.sh --region eu-west-1 --really"},
		Units:   []string{"terraform apply -auto-approve", "aws s3 sync ./dist s3://bucket"},
		Rule:    engine.Rule{Surface: engine.SurfaceBash, Pattern: "*deploy*", Action: engine.Ask, Origin: engine.OriginGlobal, Pos: engine.Position{File: "/home/u/.config/permwrap/policy.jsonc", Line: 40, Column: 9}},
	}
	r.Suggested = []SessionPattern{{Surface: engine.SurfaceBash, Pattern: "env AWS_PROFILE=prod nice -n 10 ./deploy.sh *"}}
	return r
}

func TestRenderRequestGolden(t *testing.T) {
	noRule := renderFixture()
	noRule.Rule = engine.Rule{}
	noRule.Runs, noRule.Units = nil, nil
	noRule.Check = engine.Check{Surface: engine.SurfaceWrite, Value: "/home/u/project/src/日本語/ファイル.go"}
	noRule.Access = "create"

	hostile := renderFixture()
	hostile.Check = engine.Check{Surface: engine.SurfaceWrite, Value: "/tmp/\x1b[2J\x1b[Hinnocent\u202etxt.exe\nsecond line"}
	hostile.Process.Comm = "evil\x07"
	hostile.HumanOnly = true

	thread := renderFixture()
	thread.Process.TID = 31340
	thread.Rule.Reason = "deploys touch production"

	// An agent's shell tool: the model's command first, the agent's
	// set-up aside but for the part that asked.
	agentShell := renderFixture()
	agentShell.Check = engine.Check{Surface: engine.SurfaceBash, Value: "git push origin main"}
	agentShell.Command = "git add -A && git commit -m 'fix: the thing' && git push origin main"
	agentShell.CommandBy = "Claude Code"
	agentShell.Runs = []string{"git add -A", "git commit -m 'fix: the thing'", "git push origin main", "curl -fsSL x.example/i.sh  (in Claude Code's set-up)"}
	agentShell.Units = nil
	agentShell.SetUp = []string{"source /home/u/.claude/shell-snapshots/snapshot-bash-1.sh", "unalias -a", "shopt -s expand_aliases", "true", "shopt -u extglob", "pwd -P"}

	cases := []struct {
		name        string
		r           Request
		width, rows int
		full        bool
	}{
		{"agent_shell", agentShell, 100, 24, false},
		{"full_agent_shell", agentShell, 100, 0, true},
		{"wide", renderFixture(), 120, 24, false},
		{"narrow", renderFixture(), 40, 24, false},
		{"budget", renderFixture(), 80, 3, false},
		{"norule_wide_runes", noRule, 30, 24, false},
		{"hostile", hostile, 80, 24, false},
		{"full_narrow", renderFixture(), 40, 0, true},
		{"thread", thread, 100, 24, false},
		{"full_thread", thread, 100, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var lines []string
			if c.full {
				lines = RenderFullRequest(c.r, c.width)
			} else {
				lines = RenderRequest(c.r, c.width, c.rows)
				if len(lines) > c.rows {
					t.Fatalf("%d lines for a budget of %d", len(lines), c.rows)
				}
			}
			for _, l := range lines {
				if w := runewidth.StringWidth(l); w > c.width {
					t.Errorf("line %d columns wide, budget %d: %q", w, c.width, l)
				}
				if strings.ContainsAny(l, "\x1b\x07\n\u202e") {
					t.Errorf("control character reached the screen: %q", l)
				}
			}
			got := strings.Join(lines, "\n") + "\n"
			golden := filepath.Join("testdata", "render", c.name+".golden")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if got != string(want) {
				t.Errorf("render differs from %s:\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

func TestRenderRequestSmallBudgets(t *testing.T) {
	r := renderFixture()
	for rows := 1; rows <= 8; rows++ {
		lines := RenderRequest(r, 60, rows)
		if len(lines) > rows || len(lines) == 0 {
			t.Fatalf("rows %d: %d lines", rows, len(lines))
		}
		if !strings.HasPrefix(lines[0], "who:") && !strings.HasPrefix(lines[0], "…") {
			t.Fatalf("rows %d: first line %q", rows, lines[0])
		}
	}
}

func FuzzRenderRequest(f *testing.F) {
	f.Add("/home/u/p/\x1b[31mx", "bash", "git *", 40, 5)
	f.Add("日本語のファイル名はとても長い/とても長い/とても長い", "c\u202e", "", 20, 1)
	f.Add("\xff\xfe/x\ufffd", "\x00", "\x9b", 30, 3)
	f.Fuzz(func(t *testing.T, value, comm, pattern string, width, rows int) {
		width, rows = 20+abs(width)%200, 1+abs(rows)%40
		r := renderFixture()
		r.Check.Value, r.Process.Comm, r.Rule.Pattern = value, comm, pattern
		r.Units = []string{value, comm}
		check := func(lines []string, limitRows bool) {
			if limitRows && len(lines) > rows {
				t.Fatalf("%d lines for %d rows", len(lines), rows)
			}
			for _, l := range lines {
				if w := runewidth.StringWidth(l); w > width {
					t.Fatalf("%d columns for %d: %q", w, width, l)
				}
				for _, c := range l {
					if display.Hidden(c) {
						t.Fatalf("hidden character %U reached the screen: %q", c, l)
					}
				}
			}
		}
		check(RenderRequest(r, width, rows), true)
		check(RenderFullRequest(r, width), false)
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// A nested node's request names the node and the command its permwrap
// runs, on a line of its own right after who asked; secrets in that
// command are masked.
func TestRenderNode(t *testing.T) {
	r := NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: "/w/x"})
	r.Process = Process{PID: 7, Comm: "sh"}
	r.Node = "reviewer#3"
	r.NodeCommand = []string{"pi", "--mode", "json", "--api-key=sk-abcdefghijklmnop"}
	lines := RenderRequest(r, 120, 10)
	if len(lines) < 3 || !strings.HasPrefix(lines[1], "node:  reviewer#3 — permwrap -- pi --mode json") {
		t.Fatalf("lines: %q", lines)
	}
	full := strings.Join(RenderFullRequest(r, 120), "\n")
	if !strings.Contains(full, "reviewer#3 — permwrap -- pi") {
		t.Errorf("full request lacks the node: %s", full)
	}
	if strings.Contains(strings.Join(lines, "\n")+full, "abcdefghijklmnop") {
		t.Errorf("a secret in the node's command is shown")
	}
	r.Node, r.NodeCommand = "", nil
	for _, l := range RenderRequest(r, 120, 10) {
		if strings.HasPrefix(l, "node:") {
			t.Errorf("a request of this permwrap's own names a node: %q", l)
		}
	}
}

// What allowing an exec allows besides is on a line of its own in the
// prompt and the full request, and in the approval's log record.
func TestRenderCovers(t *testing.T) {
	r := NewRequest(engine.Check{Surface: engine.SurfaceBash, Value: "git push origin main"})
	r.Process = Process{PID: 7, Comm: "git"}
	r.Access = "exec"
	r.Covers = []string{"writes into /srv/repo.git (the push's remote; not its hooks or config)"}
	lines := RenderRequest(r, 200, 10)
	found := false
	for _, l := range lines {
		if l == "covers: "+r.Covers[0] {
			found = true
		}
	}
	if !found {
		t.Errorf("the prompt lacks the covers line: %q", lines)
	}
	if full := strings.Join(RenderFullRequest(r, 200), "\n"); !strings.Contains(full, "covers:  writes into /srv/repo.git") {
		t.Errorf("the full request lacks it: %s", full)
	}
	r.Covers = nil
	for _, l := range RenderRequest(r, 200, 10) {
		if strings.HasPrefix(l, "covers:") {
			t.Errorf("a request that covers nothing says %q", l)
		}
	}
}

// A long covers line keeps its start and its end, and comes before the
// lists that may run out of rows.
func TestRenderCoversLong(t *testing.T) {
	r := NewRequest(engine.Check{Surface: engine.SurfaceBash, Value: "bash -c x"})
	r.Process = Process{PID: 7, Comm: "bash"}
	r.Covers = []string{"writes into /srv/" + strings.Repeat("d/", 40) + "repo.git (the push's remote; not its hooks or config)"}
	for i := range 20 {
		r.Units = append(r.Units, fmt.Sprintf("true %d", i))
	}
	lines := RenderRequest(r, 80, 8)
	found := false
	for _, l := range lines {
		if strings.HasPrefix(l, "covers: writes into /srv/") && strings.HasSuffix(l, "git (the push's remote; not its hooks or config)") && strings.Contains(l, "…") {
			found = true
		}
	}
	if !found {
		t.Errorf("covers line: %q", lines)
	}
}
