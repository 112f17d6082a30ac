package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/kerneltest"
	ms "github.com/permwrap/permwrap/internal/modelserver"
)

// agent is one coding agent: how to configure it against the scripted
// model, run it headless with its own sandbox and approvals off, and
// call its tools.
type agent struct {
	name string
	// entry is the installed file that must exist (relative to
	// node_modules).
	entry string
	// setup writes the agent's configuration into the home.
	setup func(e *env, url string)
	// headless is the command line of a headless run with prompt.
	headless func(prompt string) []string
	// env is the agent's environment for a model at url.
	env func(url string) []string
	// bash runs a command with the agent's shell tool.
	bash func(cmd string) []ms.Step
	// write and edit use the agent's own file tools.
	write func(path, content string) []ms.Step
	edit  func(path, old, new string) []ms.Step
	// ownRefusal is what the agent tells the model when its own file
	// tool's write fails with EACCES (as measured bare, by a file the
	// permissions refuse): the kernel's errno is all permwrap can give
	// the agent's own process.
	ownRefusal *regexp.Regexp
	// ownInWorkspace: the agent's own file tools refuse, by themselves,
	// any path outside the workspace (Gemini CLI: "Path not in
	// workspace"; .git too), so they are pointed at a file of the
	// workspace the default policy guards as it guards ~/.bashrc:
	// .claude/settings.json (agent settings run commands).
	ownInWorkspace bool
}

func nodeModules() string { return filepath.Join(agentsDir(), "node_modules") }

// needAgent skips (or fails when required) unless a is installed.
func needAgent(t *testing.T, a *agent) {
	t.Helper()
	kerneltest.Tool(t, "node")
	if _, err := os.Stat(filepath.Join(nodeModules(), a.entry)); err != nil {
		kerneltest.Skipf(t, "the agent %s (./scripts/agents installs it): %v", a.name, err)
	}
}

var claudeCode = &agent{
	name:  "claude-code",
	entry: "@anthropic-ai/claude-code-linux-x64/claude",
	setup: func(e *env, url string) {},
	headless: func(prompt string) []string {
		// The native binary (what the package's postinstall links
		// over its bin/claude.exe stub). As root, Claude Code refuses
		// --dangerously-skip-permissions unless IS_SANDBOX=1.
		return []string{filepath.Join(nodeModules(), "@anthropic-ai/claude-code-linux-x64/claude"),
			"-p", "--dangerously-skip-permissions", "--model", "claude-sonnet-4-5", prompt}
	},
	env: func(url string) []string {
		return []string{"IS_SANDBOX=1", "ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-e2e-not-a-key",
			"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL=1", "DISABLE_INSTALLATION_CHECKS=1"}
	},
	bash: func(cmd string) []ms.Step {
		return []ms.Step{ms.Call("Bash", map[string]any{"command": cmd, "description": "e2e step"})}
	},
	// Claude Code refuses to write or edit a file it has not read in
	// this session: each is preceded by a Read.
	write: func(path, content string) []ms.Step {
		return []ms.Step{ms.Call("Read", map[string]any{"file_path": path}),
			ms.Call("Write", map[string]any{"file_path": path, "content": content})}
	},
	edit: func(path, old, new string) []ms.Step {
		return []ms.Step{ms.Call("Read", map[string]any{"file_path": path}),
			ms.Call("Edit", map[string]any{"file_path": path, "old_string": old, "new_string": new})}
	},
	ownRefusal: regexp.MustCompile(`EACCES: permission denied`),
}

var codex = &agent{
	name:  "codex",
	entry: "@openai/codex/bin/codex.js",
	setup: func(e *env, url string) {
		// gpt-5.5 is a model Codex knows (its bundled metadata gives it
		// the apply_patch tool); the provider points it at the scripted
		// model. Plugins would `git ls-remote` github.com at start-up,
		// analytics would post events.
		e.writeFile(filepath.Join(e.home, ".codex", "config.toml"), fmt.Sprintf(`model = "gpt-5.5"
model_provider = "e2e"
check_for_update_on_startup = false

[model_providers.e2e]
name = "e2e"
base_url = "%s/v1"
wire_api = "responses"
env_key = "E2E_API_KEY"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
`, url), 0o644)
	},
	headless: func(prompt string) []string {
		return []string{"node", filepath.Join(nodeModules(), "@openai/codex/bin/codex.js"),
			"exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check", prompt}
	},
	env: func(url string) []string { return []string{"E2E_API_KEY=e2e-not-a-key"} },
	bash: func(cmd string) []ms.Step {
		// Codex returns after yield_time_ms (10 s by default) with the
		// command still running: a go build on a loaded machine takes
		// longer.
		return []ms.Step{ms.Call("exec_command", map[string]any{"cmd": cmd, "yield_time_ms": 300000})}
	},
	write: func(path, content string) []ms.Step {
		var b strings.Builder
		b.WriteString("*** Begin Patch\n*** Add File: " + path + "\n")
		for _, l := range strings.SplitAfter(strings.TrimSuffix(content, "\n"), "\n") {
			b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
		}
		b.WriteString("*** End Patch\n")
		return []ms.Step{ms.Freeform("apply_patch", b.String())}
	},
	edit: func(path, old, new string) []ms.Step {
		return []ms.Step{ms.Freeform("apply_patch", "*** Begin Patch\n*** Update File: "+path+"\n@@\n-"+old+"\n+"+new+"\n*** End Patch\n")}
	},
	// Codex's apply_patch drops the errno: "Failed to write file PATH".
	ownRefusal: regexp.MustCompile(`Failed to write file`),
}

var pi = &agent{
	name:  "pi",
	entry: "@mariozechner/pi-coding-agent/dist/cli.js",
	setup: func(e *env, url string) {
		e.writeFile(filepath.Join(e.home, ".pi", "agent", "models.json"), fmt.Sprintf(`{"providers": {"e2e": {
  "baseUrl": "%s/v1", "api": "openai-completions", "apiKey": "e2e-not-a-key",
  "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
  "models": [{"id": "e2e-model", "reasoning": false}]}}}
`, url), 0o644)
	},
	headless: func(prompt string) []string {
		return []string{"node", filepath.Join(nodeModules(), "@mariozechner/pi-coding-agent/dist/cli.js"),
			"-p", "--no-session", "--model", "e2e/e2e-model", prompt}
	},
	env: func(url string) []string {
		return []string{"PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0"}
	},
	bash: func(cmd string) []ms.Step {
		return []ms.Step{ms.Call("bash", map[string]any{"command": cmd})}
	},
	write: func(path, content string) []ms.Step {
		return []ms.Step{ms.Call("write", map[string]any{"path": path, "content": content})}
	},
	edit: func(path, old, new string) []ms.Step {
		return []ms.Step{ms.Call("edit", map[string]any{"path": path, "edits": []any{map[string]any{"oldText": old, "newText": new}}})}
	},
	ownRefusal: regexp.MustCompile(`EACCES: permission denied`),
}

var gemini = &agent{
	name:  "gemini",
	entry: "@google/gemini-cli/bundle/gemini.js",
	setup: func(e *env, url string) {
		e.writeFile(filepath.Join(e.home, ".gemini", "settings.json"), `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "telemetry": {"enabled": false},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}
}
`, 0o644) // the current keys: older ones (disableAutoUpdate) are migrated, and the file rewritten, at the first start
	},
	headless: func(prompt string) []string {
		// --skip-trust: headless, Gemini CLI refuses an untrusted folder
		// (and would turn --yolo back to "default" approvals).
		return []string{"node", filepath.Join(nodeModules(), "@google/gemini-cli/bundle/gemini.js"),
			"-p", prompt, "--yolo", "--skip-trust", "-m", "gemini-2.5-pro"}
	},
	env: func(url string) []string {
		return []string{"GEMINI_API_KEY=e2e-not-a-key", "GOOGLE_GEMINI_BASE_URL=" + url}
	},
	bash: func(cmd string) []ms.Step {
		return []ms.Step{ms.Call("run_shell_command", map[string]any{"command": cmd, "description": "e2e step"})}
	},
	write: func(path, content string) []ms.Step {
		return []ms.Step{ms.Call("write_file", map[string]any{"file_path": path, "content": content})}
	},
	edit: func(path, old, new string) []ms.Step {
		return []ms.Step{ms.Call("replace", map[string]any{"file_path": path, "old_string": old, "new_string": new, "instruction": "e2e edit"})}
	},
	ownRefusal:     regexp.MustCompile(`(?i)EACCES|permission denied`),
	ownInWorkspace: true,
}

var agents = []*agent{claudeCode, codex, pi, gemini}

// action is one thing the script makes the agent do: its steps, the last
// of which is the one checked.
type action struct {
	name  string
	steps []ms.Step
	last  int // the index in the script of the checked step
}

// buildScript lays the actions out as one script, ending with a reply.
func buildScript(actions []*action) []ms.Step {
	var script []ms.Step
	for _, a := range actions {
		script = append(script, a.steps...)
		a.last = len(script) - 1
	}
	return append(script, ms.Reply("E2E-FINISHED"))
}

// runActions runs the agent once, headless under permwrap with a review
// log of its own, on a script of the actions followed by a final reply.
func runActions(t *testing.T, e *env, a *agent, actions ...*action) (*ms.Server, result, []map[string]any) {
	t.Helper()
	srv := startModel(t, buildScript(actions))
	e.allowModel(srv.URL)
	a.setup(e, srv.URL)
	e.logPath = filepath.Join(e.base, fmt.Sprintf("review-%d.jsonl", time.Now().UnixNano()))
	r := e.runWrapped(a.env(srv.URL), 8*time.Minute, a.headless("Follow the e2e script.")...)
	t.Logf("%s ran %v, exit %d", a.name, r.elapsed.Round(time.Millisecond), r.code)
	return srv, r, e.logRecords()
}

// checkFinished checks that the agent went through the whole script and
// exited 0.
func checkFinished(t *testing.T, srv *ms.Server, r result) {
	t.Helper()
	if got, want := srv.MaxTurn(), len(srv.Script())-1; got != want {
		t.Errorf("the agent reached turn %d of the script, want %d (the final reply)\nrequests:\n%s\nstdout:\n%s\nstderr:\n%s",
			got, want, srv.Summary(), r.stdout, r.stderr)
	}
	if r.code != 0 {
		t.Errorf("the agent exited %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// resultOf is the tool result the model received for the action's
// checked step; ok is false when the agent sent no further request (it
// did not survive the call).
func resultOf(t *testing.T, srv *ms.Server, a *action) (ms.ToolResult, bool) {
	t.Helper()
	res, ok := srv.ResultOf(a.last)
	if !ok {
		t.Errorf("%s: the agent made no request to the model after this call (it did not survive it)\nrequests:\n%s", a.name, srv.Summary())
		return res, false
	}
	t.Logf("%s: the model received (error=%v):\n%s", a.name, res.IsError, res.Text)
	return res, true
}

// TestAgentDenials: each agent, headless under the default policy, is
// made to read ~/.ssh/id_rsa, append to ~/.bashrc three ways (its shell
// tool, a Python one-liner, env sh -c), write and edit ~/.bashrc with its
// own tools, and git push. Every one is refused (an ask has nobody to
// answer it); the files are untouched and the secret never reaches the
// model; the agent survives each refusal and finishes the script with
// exit 0; and the model receives the reason: permwrap's line in the
// tool's output for a command, the kernel's EACCES for the agent's own
// file tools (the agent's own process gets only the errno).
func TestAgentDenials(t *testing.T) {
	kerneltest.Long(t)
	for _, a := range agents {
		t.Run(a.name, func(t *testing.T) {
			requireSupervision(t)
			needAgent(t, a)
			kerneltest.Tool(t, "python3")
			kerneltest.Tool(t, "git")
			e := newEnv(t, "")
			bashrc := filepath.Join(e.home, ".bashrc")
			// The target of the agent's own write and edit tools.
			own, ownLog := bashrc, ".bashrc"
			if a.ownInWorkspace {
				own, ownLog = filepath.Join(e.ws, ".claude", "settings.json"), ".claude/settings.json"
				e.writeFile(own, e.bashrc, 0o644)
			}
			type denial struct {
				act     *action
				own     bool   // the agent's own file tool: only EACCES can reach it
				logWant string // what the refused request's record names
			}
			denials := []denial{
				{act: &action{name: "read ~/.ssh/id_rsa (bash)", steps: a.bash("cat ~/.ssh/id_rsa")}, logWant: ".ssh/id_rsa"},
				{act: &action{name: "append ~/.bashrc (bash)", steps: a.bash("echo x >> ~/.bashrc")}, logWant: ".bashrc"},
				{act: &action{name: "append ~/.bashrc (python3 -c)", steps: a.bash(`python3 -c "open('$HOME/.bashrc', 'a').write('x\n')"`)}, logWant: ".bashrc"},
				{act: &action{name: "append ~/.bashrc (env sh -c)", steps: a.bash(`env sh -c 'echo x >> ~/.bashrc'`)}, logWant: ".bashrc"},
				{act: &action{name: "write " + ownLog + " (own tool)", steps: a.write(own, "# overwritten\n")}, own: true, logWant: ownLog},
				{act: &action{name: "edit " + ownLog + " (own tool)", steps: a.edit(own, "export E2E_BASHRC=1", "export E2E_BASHRC=2")}, own: true, logWant: ownLog},
				{act: &action{name: "git push (bash)", steps: a.bash("git push origin HEAD:main")}, logWant: "git push"},
			}
			for _, d := range denials {
				t.Run(d.act.name, func(t *testing.T) {
					srv, r, recs := runActions(t, e, a, d.act)
					var found bool
					for _, rec := range recs {
						v := fmt.Sprint(rec["value"])
						if !isDenial(rec) {
							continue
						}
						if strings.Contains(v, d.logWant) {
							found = true
						} else {
							t.Errorf("a denial the script did not ask for: %s", describe(rec))
						}
					}
					if !found {
						t.Errorf("no denial of %q in the review log", d.logWant)
					}
					if res, ok := resultOf(t, srv, d.act); ok {
						if d.own {
							if !a.ownRefusal.MatchString(res.Text) {
								t.Errorf("the model was not told the write failed (no %q):\n%s", a.ownRefusal, res.Text)
							}
						} else if !strings.Contains(res.Text, "permwrap: denied") {
							t.Errorf("the model did not receive permwrap's reason (no \"permwrap: denied\" line):\n%s", res.Text)
						}
					}
					if srv.Contains(e.secret) {
						t.Errorf("the private key's content reached the model")
					}
					checkFinished(t, srv, r)
				})
			}
			t.Run("unharmed", func(t *testing.T) {
				if got := e.readFile(bashrc); got != e.bashrc {
					t.Errorf("~/.bashrc changed:\n%s", got)
				}
				if got := e.readFile(own); got != e.bashrc {
					t.Errorf("%s changed:\n%s", own, got)
				}
				if refs := e.remoteRefs(); refs != "" {
					t.Errorf("the push reached the remote:\n%s", refs)
				}
				// No stray temporary file of a refused write is left
				// beside ~/.bashrc.
				left, _ := filepath.Glob(filepath.Join(e.home, ".bashrc?*"))
				more, _ := filepath.Glob(own + "?*")
				left = append(left, more...)
				if len(left) > 0 {
					t.Errorf("files left beside ~/.bashrc: %v", left)
				}
			})
		})
	}
}

// marker makes a command print "OK-42-name", a text the command itself
// does not contain, so the tool result shows it ran to the end. (No
// `$(…)` or `$((…))`: Gemini CLI's shell tool refuses commands that hold
// them.)
func marker(name string) (cmd, want string) {
	return "printf 'OK-%d-%s\\n' 42 " + name, "OK-42-" + name
}

// TestAgentOrdinaryWork: each agent, headless under the default policy,
// does everyday development through its shell tool — git, a Python venv,
// npm with a local package and npm test, go build, symlinks in the
// workspace and the home, Unix sockets in the workspace and /tmp — and
// permwrap refuses nothing: no denial and no ask in the review log, each
// command runs to its end, and the agent finishes the script.
func TestAgentOrdinaryWork(t *testing.T) {
	kerneltest.Long(t)
	for _, a := range agents {
		t.Run(a.name, func(t *testing.T) {
			requireSupervision(t)
			needAgent(t, a)
			for _, tool := range []string{"python3", "git", "npm"} {
				kerneltest.Tool(t, tool)
			}
			goBin := kerneltest.Tool(t, "go")
			e := newEnv(t, "")
			type task struct {
				name, cmd string
			}
			tasks := []task{
				{"git", `git init -q demo && cd demo && echo hi > a.txt && git add a.txt && git commit -qm first && git log --oneline | grep -q first`},
				{"venv", `python3 -m venv .venv && .venv/bin/python -c "import sys; assert sys.prefix.endswith('.venv')"`},
				{"npm", `mkdir -p npm/lib1 npm/app && cd npm/lib1 && printf 'module.exports = 42;\n' > index.js && npm init -y >/dev/null && cd ../app && npm init -y >/dev/null && npm install ../lib1 >/dev/null && printf 'process.exit(require("lib1") === 42 ? 0 : 1);\n' > test.js && npm pkg set scripts.test="node test.js" && npm test >/dev/null`},
				// go by its path: Codex's login-shell snapshot takes
				// PATH from /etc/profile.
				{"go", `mkdir -p gomod && cd gomod && printf 'module example.com/m\n\ngo 1.22\n' > go.mod && printf 'package main\n\nfunc main() { println("hi") }\n' > main.go && ` + goBin + ` build -o m . && ./m`},
				{"symlinks", `echo data > target.txt && ln -s target.txt link.txt && grep -q data link.txt && mkdir -p ~/.codex/tmp && ln -sfn /usr/bin/true ~/.codex/tmp/x && ~/.codex/tmp/x`},
				{"sockets", `python3 -c "
import os, socket, threading
for p in [os.path.abspath('e2e.sock'), '/tmp/e2e-%d.sock' % os.getpid()]:
    s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(1)
    def serve():
        c, _ = s.accept(); c.sendall(c.recv(16)); c.close()
    th = threading.Thread(target=serve); th.start()
    c = socket.socket(socket.AF_UNIX); c.connect(p); c.sendall(b'ping')
    assert c.recv(16) == b'ping'
    th.join(); s.close(); os.unlink(p)
"`},
			}
			for _, tk := range tasks {
				t.Run(tk.name, func(t *testing.T) {
					mcmd, want := marker(tk.name)
					act := &action{name: tk.name, steps: a.bash("(" + tk.cmd + ") && " + mcmd)}
					srv, r, recs := runActions(t, e, a, act)
					if res, ok := resultOf(t, srv, act); ok && !strings.Contains(res.Text, want) {
						t.Errorf("the command did not run to its end (no %s in its output):\n%s", want, res.Text)
					}
					checkFinished(t, srv, r)
					if len(recs) == 0 {
						t.Fatal("the review log is empty: permwrap recorded nothing")
					}
					seen := map[string]int{}
					var order []string
					for _, rec := range recs {
						if isDenial(rec) || rec["event"] == "permission_request.asked" {
							d := describe(rec)
							if seen[d] == 0 {
								order = append(order, d)
							}
							seen[d]++
						}
					}
					for _, d := range order {
						t.Errorf("refused (%d×): %s", seen[d], d)
					}
				})
			}
		})
	}
}
