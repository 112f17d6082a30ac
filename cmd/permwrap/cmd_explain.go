package main

import (
	"fmt"
	"io"
)

// cmdExplain is a placeholder until its issue lands.
func cmdExplain(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "permwrap explain: not implemented yet")
	return exitInternal
}
