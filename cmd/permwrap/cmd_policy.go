package main

import (
	"fmt"
	"io"

	"github.com/permwrap/permwrap/engine"
)

const policyAbout = `Subcommands:
  default   print the embedded default policy (the policy in force when
            policy.jsonc does not exist), byte for byte; a starting point:
            permwrap policy default > ~/.config/permwrap/policy.jsonc`

// cmdPolicy implements `permwrap policy default`.
func cmdPolicy(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("policy", "permwrap policy default", policyAbout, stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 || fs.Arg(0) != "default" {
		if fs.NArg() == 0 {
			fmt.Fprintln(stderr, "permwrap policy: missing subcommand")
		} else {
			fmt.Fprintf(stderr, "permwrap policy: unknown subcommand %q\n", fs.Arg(0))
		}
		fs.Usage()
		return exitInternal
	}
	if _, err := stdout.Write(engine.DefaultPolicy()); err != nil {
		fmt.Fprintln(stderr, "permwrap policy:", err)
		return exitInternal
	}
	return exitOK
}
