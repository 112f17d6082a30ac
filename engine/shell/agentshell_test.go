package shell

import "testing"

// The agents' own command lines, as their shell tools ran them (measured:
// strace and the review log of the end-to-end tests).
func TestRecognizeAgentShell(t *testing.T) {
	claude := `source /home/u/.claude/shell-snapshots/snapshot-bash-1765000000000-abc123.sh 2>/dev/null || true && shopt -u extglob 2>/dev/null || true && eval 'git commit -m '"'"'fix: it'"'"' && git push' < /dev/null && pwd -P >| /tmp/claude-4f2a-cwd`
	claudeOld := `source /home/u/.claude/shell-snapshots/snapshot-bash-1.sh && eval 'npm test' \< /dev/null && pwd -P >| /tmp/claude-9c1e-cwd`
	gemini := "shopt -u promptvars nullglob extglob nocaseglob dotglob; _bgpids_file=/tmp/gemini-shell-Xyz/bgpids.tmp\n(\n  trap 'jobs -p > \"$_bgpids_file\"' EXIT\ncat ~/.ssh/id_rsa | head\n)\n__code=$?\nexit $__code"
	geminiOld := "{ ls -la; }; __code=$?; pgrep -g 0 >/tmp/shell_pgrep_1a2b.tmp 2>&1; exit $__code;"
	codex := "__CODEX_SNAPSHOT_OVERRIDE_SET_0=\"${CODEX_THREAD_ID+x}\"\n__CODEX_SNAPSHOT_OVERRIDE_0=\"${CODEX_THREAD_ID-}\"\n. \"/home/u/.codex/shell_snapshots/s.sh\"\nif [ -n \"${PATH:-}\" ]; then export PATH='/x/codex-path':\"$PATH\"; fi\n\nexec '/bin/bash' -c 'echo hello-from-codex'"
	for _, c := range []struct {
		name  string
		argv  []string
		agent string
		cmd   string
	}{
		{"claude code", []string{"/bin/bash", "-c", claude}, "Claude Code", "git commit -m 'fix: it' && git push"},
		{"claude code, -c -l", []string{"/bin/bash", "-c", "-l", claude}, "Claude Code", "git commit -m 'fix: it' && git push"},
		{"claude code, earlier", []string{"bash", "-c", claudeOld}, "Claude Code", "npm test"},
		{"gemini cli", []string{"/usr/bin/bash", "-c", gemini}, "Gemini CLI", "cat ~/.ssh/id_rsa | head"},
		{"gemini cli, earlier", []string{"bash", "-c", geminiOld}, "Gemini CLI", "ls -la;"},
		{"codex", []string{"/bin/bash", "-c", codex}, "Codex", "echo hello-from-codex"},
		// Not a wrapper: plain, or the wrapper's shape with more in it.
		{"pi", []string{"/bin/bash", "-c", "ls"}, "", ""},
		{"claude code, a command more", []string{"bash", "-c", `source ~/.claude/shell-snapshots/snapshot-bash-1.sh && curl x | sh && eval 'ls' < /dev/null && pwd -P >| /tmp/claude-1-cwd`}, "", ""},
		{"claude code, eval of an expansion", []string{"bash", "-c", `source ~/.claude/shell-snapshots/snapshot-bash-1.sh && eval "$X" < /dev/null && pwd -P >| /tmp/claude-1-cwd`}, "", ""},
		{"codex, ends elsewhere", []string{"bash", "-c", "__CODEX_SNAPSHOT_OVERRIDE_SET_0=1\nexec /bin/bash -c 'ls' && rm -rf x"}, "", ""},
		{"not a shell", []string{"python3", "-c", claude}, "", ""},
		{"a script file", []string{"bash", "run.sh"}, "", ""},
	} {
		got, ok := RecognizeAgentShell(c.argv)
		if ok != (c.agent != "") || got.Agent != c.agent || got.Command != c.cmd {
			t.Errorf("%s: %+v %v, want %q %q", c.name, got, ok, c.agent, c.cmd)
		}
	}
}
