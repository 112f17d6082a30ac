package main

import (
	"fmt"
	"io"
)

// cmdPolicy is a placeholder until its issue lands.
func cmdPolicy(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "permwrap policy: not implemented yet")
	return exitInternal
}
