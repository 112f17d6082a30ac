package supervisor_test

import (
	"strings"
	"testing"
)

const pushDenied = `{ "extends": "none", "permission": { "*": "allow",
  "bash": { "*": "allow", "git push *": "deny" },
  "write": { "*": "allow", "DENIED": { "action": "deny", "reason": "not here" } } } }`

// A script whose units include a denied command runs nothing at all.
func TestScriptDeniedBeforeItRuns(t *testing.T) {
	need(t, "git")
	s := newSandbox(t, pushDenied)
	r := s.run("bash", "-c", "echo start > log; git push origin main")
	if r.code == 0 {
		t.Fatalf("script with a denied unit succeeded: %s", r.stderr)
	}
	if s.exists("log") {
		t.Error("the script's first command ran (log exists): it must be refused before it starts")
	}
	mustContain(t, "stderr", r.stderr, "git push origin main")
	mustContain(t, "stderr", r.stderr, "rule bash:git push *")
}

// Every way of wrapping git push is seen through.
func TestWrappedCommandsRefused(t *testing.T) {
	need(t, "git", "xargs", "nice", "env")
	s := newSandbox(t, pushDenied)
	for _, argv := range [][]string{
		{"git", "push"},
		{"/usr/bin/git", "push", "origin"},
		{"env", "git", "push"},
		{"env", "-i", "FOO=1", "git", "push", "origin", "main"},
		{"nice", "-n", "5", "git", "push"},
		{"sh", "-c", "sh -c 'git push'"},
		{"bash", "-c", "xargs git push <<< origin"},
		{"bash", "-c", "cd . && git push --force"},
		{"timeout", "5", "git", "push"},
	} {
		// Bare, git runs (and fails on its own: no repository).
		bare := s.bare(argv...)
		if !strings.Contains(bare.stderr, "fatal") && !strings.Contains(bare.stderr, "git") {
			t.Errorf("bare %q did not run git: %q", argv, bare.stderr)
		}
		r := s.run(argv...)
		if r.code == 0 {
			t.Errorf("%q succeeded under permwrap", argv)
		}
		if strings.Contains(r.stderr, "fatal: not a git repository") {
			t.Errorf("%q: git ran under permwrap:\n%s", argv, r.stderr)
		}
		if !strings.Contains(r.stderr, "permwrap: denied exec") {
			t.Errorf("%q: no denial notice:\n%s", argv, r.stderr)
		}
	}
}

// A denial reaches the model through its tool's stderr (a pipe or a
// file), not through the person's terminal.
func TestDenialToldToTheAgent(t *testing.T) {
	need(t, "python3")
	s := newSandbox(t, pushDenied)
	r := s.run("bash", "-c", `python3 -c 'open("DENIED", "w")' 2>tool.err; python3 -c 'open("DENIED", "w")' 2>&1 | cat`)
	mustContain(t, "stdout (tool output through a pipe)", r.stdout, "permwrap: denied write "+s.path("DENIED")+": not here — rule write:DENIED")
	mustContain(t, "stdout (tool output through a pipe)", r.stdout, "PermissionError")
	tool := s.read("tool.err")
	mustContain(t, "tool stderr file", tool, "permwrap: denied write "+s.path("DENIED")+": not here — rule write:DENIED")
	if !strings.HasPrefix(tool, "permwrap: denied") || !strings.Contains(tool, "PermissionError") {
		t.Errorf("the notice must come before the tool's own error, and neither may overwrite the other:\n%s", tool)
	}
	// permwrap's own stderr carries the person's notice once, not twice.
	if n := strings.Count(r.stderr, "permwrap: denied write"); n != 2 {
		t.Errorf("person's notices: %d, want 2 (one per denial):\n%s", n, r.stderr)
	}
}
