package main

import (
	"fmt"
	"io"
)

// cmdDoctor is a placeholder until its issue lands.
func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "permwrap doctor: not implemented yet")
	return exitInternal
}
