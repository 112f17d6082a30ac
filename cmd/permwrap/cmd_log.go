package main

import (
	"fmt"
	"io"
)

// cmdLog is a placeholder until its issue lands.
func cmdLog(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "permwrap log: not implemented yet")
	return exitInternal
}
