package engine

import (
	"testing"

	"github.com/permwrap/permwrap/engine/shell"
)

// The analysis's Access converts to engine's by its bits.
func TestShellAccessBits(t *testing.T) {
	if Access(shell.AccessRead) != AccessRead || Access(shell.AccessWrite) != AccessWrite {
		t.Fatal("shell.Access and engine.Access disagree on their bits")
	}
}
