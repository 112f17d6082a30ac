// Command permwrap runs a coding agent, and everything it spawns, under a
// kernel-enforced permission policy. See README.md.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/permwrap/permwrap/forwarding"
	"github.com/permwrap/permwrap/notify/host"
	"github.com/permwrap/permwrap/supervisor"
)

// Exit codes shared by every subcommand.
const (
	exitOK       = 0
	exitFailure  = 1   // a check failed (permwrap check, explain deny, ...)
	exitInternal = 125 // permwrap's own failure: bad config, missing kernel feature
	exitNoExec   = 126 // the command was found but could not be executed
	exitNotFound = 127 // the command was not found
)

func main() { os.Exit(realMain()) }

// realMain is main without the exit, shared with the tests' re-executed
// binary.
func realMain() int {
	// Signals the person started permwrap with ignored (nohup, a
	// background job) stay ignored in every stage and in the command.
	host.KeepIgnoredSignals()
	// The re-executed init stage of a sandboxed run: it must do nothing
	// else first (see supervisor.RunInit).
	if len(os.Args) > 1 && os.Args[1] == supervisor.InitArg {
		return supervisor.RunInit(os.Args[2:])
	}
	// The helper stages of a nested permwrap (forwarding/stage.go).
	if len(os.Args) == 2 {
		switch os.Args[1] {
		case forwarding.KeeperArg:
			return forwarding.RunKeeper()
		case forwarding.ExecArg:
			return runNestExec()
		}
	}
	return run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// usage is printed for -h and for a command line permwrap cannot read.
const usage = `usage:
  permwrap [flags] -- CMD [ARG...]   run CMD under the policy
  permwrap check [FILE]              validate the effective configuration (or FILE)
  permwrap explain SURFACE VALUE     show how the policy decides one access
  permwrap policy show [PROFILE]     print a profile (default, read-only, strict)
  permwrap policy edit               edit policy.jsonc, saved only when valid
  permwrap policy suggest [LOG]      rules that would have allowed what a log recorded
  permwrap trust [DIR]               trust the project policies of DIR
  permwrap import claude-code|srt|codex [FILE...]
                                     print a policy equivalent to another tool's rules
  permwrap log [flags]               read the review log
  permwrap doctor                    what this kernel supports and what permwrap enforces
  permwrap version                   print the version

run 'permwrap SUBCOMMAND -h' for the flags of each.
`

// run dispatches to a subcommand and returns the process exit code. It
// never calls os.Exit itself, so tests can drive it in-process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	args = subcommandFirst(args)
	if len(args) > 0 {
		switch args[0] {
		case "check":
			return cmdCheck(args[1:], stdout, stderr)
		case "explain":
			return cmdExplain(args[1:], stdout, stderr)
		case "policy":
			return cmdPolicy(args[1:], stdin, stdout, stderr)
		case "log":
			return cmdLog(args[1:], stdout, stderr)
		case "trust":
			return cmdTrust(args[1:], stdout, stderr)
		case "import":
			return cmdImport(args[1:], stdout, stderr)
		case "doctor":
			return cmdDoctor(args[1:], stdout, stderr)
		case "version", "--version":
			fmt.Fprintln(stdout, "permwrap", version())
			return exitOK
		case "help", "-h", "--help":
			fmt.Fprint(stdout, usage)
			return exitOK
		}
	}
	return cmdRun(args, stdin, stdout, stderr)
}

// subcommands are the words run dispatches on; "policy" and "import"
// take a second word (edit, suggest; claude-code, codex) before their
// flags.
var subcommands = map[string]int{
	"check": 1, "explain": 1, "policy": 2, "log": 1, "trust": 1,
	"import": 2, "doctor": 1, "version": 1, "help": 1,
}

// subcommandFirst finds a subcommand after the flags every command shares
// (`permwrap --config-dir DIR check` is `permwrap check --config-dir
// DIR`) and moves it, with its second word, in front of them. The first
// word that is not a flag or a flag's value decides: a subcommand is
// found, anything else is a program to run; after "--" every word is the
// program's (`permwrap -- check` runs a program named check). A flag run
// does not know leaves args as they are, for cmdRun to report.
func subcommandFirst(args []string) []string {
	fs := flag.NewFlagSet("permwrap", flag.ContinueOnError)
	var f runFlags
	f.register(fs)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			n, ok := subcommands[a]
			if i == 0 || !ok {
				return args
			}
			end := min(i+n, len(args))
			if n == 2 && end == i+2 && strings.HasPrefix(args[i+1], "-") {
				end = i + 1 // `import --workspace W` has no tool: its error says so
			}
			out := append([]string(nil), args[i:end]...)
			out = append(out, args[:i]...)
			return append(out, args[end:]...)
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		fl := fs.Lookup(name)
		if fl == nil {
			return args
		}
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); (ok && b.IsBoolFlag()) || hasValue {
			continue
		}
		i++ // the flag's value
	}
	return args
}
