// Command permwrap runs a coding agent, and everything it spawns, under a
// kernel-enforced permission policy. See README.md.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/permwrap/permwrap/forwarding"
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
