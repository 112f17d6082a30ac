package main

import (
	"fmt"
	"io"
)

// cmdCheck is a placeholder until its issue lands.
func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "permwrap check: not implemented yet")
	return exitInternal
}
