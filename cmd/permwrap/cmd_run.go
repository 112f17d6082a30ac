package main

import (
	"fmt"
	"io"
)

// cmdRun is a placeholder until the supervisor lands.
func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "permwrap: running a command is not implemented yet")
	return exitInternal
}
