package shell

import (
	"path"
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// AgentShell is a command line a coding agent's shell tool ran: the
// command the model sent, inside the agent's own wrapper (its shell
// snapshot, options, a file for the working directory afterwards).
type AgentShell struct {
	Agent   string // "Claude Code", "Codex", "Gemini CLI"
	Command string // the command the model sent, as it sent it
}

// RecognizeAgentShell recognises the wrappers coding agents' shell tools
// put around the model's command in `SHELL -c SCRIPT` (argv as executed),
// so that a prompt can show the command the model sent first and keep the
// agent's set-up out of the way. It only names parts for people: what a
// script runs is judged whole, wrapper included, whatever this says.
//
// The forms (measured on the agents' own command lines):
//
//	Claude Code  source …/shell-snapshots/snapshot-bash-….sh 2>/dev/null || true && shopt -u extglob 2>/dev/null || true && eval 'CMD' < /dev/null && pwd -P >| /tmp/claude-….-cwd
//	Codex        __CODEX_SNAPSHOT_OVERRIDE_SET_0=…  (its shell snapshot and environment) … exec '/bin/bash' -c 'CMD'
//	Gemini CLI   shopt -u promptvars nullglob extglob nocaseglob dotglob; _bgpids_file=…  ( trap 'jobs -p > "$_bgpids_file"' EXIT  CMD )  __code=$?  exit $__code
//
// pi and most other agents run `bash -c CMD` with no wrapper.
func RecognizeAgentShell(argv []string) (AgentShell, bool) {
	if len(argv) < 2 || !IsShell(BaseName(argv[0])) {
		return AgentShell{}, false
	}
	script, _, mode, err := shellArgs(fieldsOf(argv))
	if err != "" || mode != shellModeScript || script.dyn != static {
		return AgentShell{}, false
	}
	for _, r := range agentShells {
		if cmd, ok := r.recognize(script.s); ok && cmd != "" {
			return AgentShell{Agent: r.agent, Command: cmd}, true
		}
	}
	return AgentShell{}, false
}

type agentShellForm struct {
	agent     string
	recognize func(script string) (string, bool)
}

var agentShells = []agentShellForm{
	{"Claude Code", claudeCodeCommand},
	{"Codex", codexCommand},
	{"Gemini CLI", geminiCommand},
}

// geminiForms: the subshell form (Gemini CLI 0.60 and later) and the
// brace form of earlier versions. Compiled at first use (optionTables
// says why).
var geminiForms = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`(?s)^shopt -u promptvars nullglob extglob nocaseglob dotglob; _bgpids_file=\S+\n\(\n  trap 'jobs -p > "\$_bgpids_file"' EXIT\n(.*)\n\)\n__code=\$\?\nexit \$__code\n?$`),
		regexp.MustCompile(`(?s)^\{ (.*) \}; __code=\$\?; pgrep -g 0 >\S+ 2>&1; exit \$__code;?$`),
	}
})

func geminiCommand(script string) (string, bool) {
	for _, re := range geminiForms() {
		if m := re.FindStringSubmatch(script); m != nil {
			return m[1], true
		}
	}
	return "", false
}

// claudeCodeCommand reads Claude Code's wrapper: an and/or chain of its
// snapshot's `source`, `true`, `shopt`, one `eval` of a literal (the
// command) and `pwd -P >| /tmp/claude-…-cwd`, nothing else.
func claudeCodeCommand(script string) (string, bool) {
	if !strings.Contains(script, "/shell-snapshots/snapshot-") || !strings.Contains(script, "eval ") {
		return "", false
	}
	f, err := parse(script)
	if err != nil || len(f.Stmts) != 1 {
		return "", false
	}
	var calls []*syntax.Stmt
	var walk func(s *syntax.Stmt) bool
	walk = func(s *syntax.Stmt) bool {
		switch c := s.Cmd.(type) {
		case *syntax.BinaryCmd:
			if c.Op != syntax.AndStmt && c.Op != syntax.OrStmt {
				return false
			}
			return walk(c.X) && walk(c.Y)
		case *syntax.CallExpr:
			calls = append(calls, s)
			return true
		}
		return false
	}
	if !walk(f.Stmts[0]) {
		return "", false
	}
	cmd, snapshot, cwd := "", false, false
	for _, s := range calls {
		args := literalWords(s.Cmd.(*syntax.CallExpr))
		if args == nil {
			return "", false
		}
		switch {
		case (args[0] == "source" || args[0] == ".") && len(args) == 2 && strings.Contains(args[1], "/shell-snapshots/snapshot-"):
			snapshot = true
		case args[0] == "true" && len(args) == 1, args[0] == "shopt":
		case args[0] == "eval" && cmd == "" && (len(args) == 2 || len(args) == 4 && args[2] == "<" && args[3] == "/dev/null"):
			// `eval 'CMD' < /dev/null`, or in earlier versions
			// `eval 'CMD' \< /dev/null` (the redirect inside the eval).
			cmd = args[1]
		case args[0] == "pwd" && len(s.Redirs) == 1 && s.Redirs[0].Word != nil &&
			strings.HasPrefix(path.Base(s.Redirs[0].Word.Lit()), "claude-"):
			cwd = true
		default:
			return "", false
		}
	}
	return cmd, snapshot && cwd
}

// codexCommand reads Codex's wrapper: a script that restores its
// snapshot's environment (names __CODEX_SNAPSHOT_…) and ends by exec'ing
// the shell on the command.
func codexCommand(script string) (string, bool) {
	if !strings.HasPrefix(script, "__CODEX_SNAPSHOT_") {
		return "", false
	}
	f, err := parse(script)
	if err != nil || len(f.Stmts) == 0 {
		return "", false
	}
	last, ok := f.Stmts[len(f.Stmts)-1].Cmd.(*syntax.CallExpr)
	if !ok {
		return "", false
	}
	args := literalWords(last)
	if len(args) != 4 || args[0] != "exec" || !IsShell(BaseName(args[1])) || (args[2] != "-c" && args[2] != "-lc") {
		return "", false
	}
	return args[3], true
}

// literalWords is a call's words when each is a literal (quoted or not,
// with no expansion, glob or brace left), nil otherwise.
func literalWords(c *syntax.CallExpr) []string {
	if len(c.Assigns) > 0 || len(c.Args) == 0 {
		return nil
	}
	var w walker // no script around it: every variable is unknown
	out := make([]string, 0, len(c.Args))
	for _, wd := range c.Args {
		s, ok := w.literal(wd, &scope{}, true)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}
