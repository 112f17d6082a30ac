package engine

import "strings"

// Access is the set of ways a path is being used by one syscall.
type Access uint8

const (
	AccessRead Access = 1 << iota
	AccessWrite
	AccessExec
)

func (a Access) String() string {
	if a == 0 {
		return "none"
	}
	var parts []string
	for _, x := range [...]struct {
		bit  Access
		name string
	}{{AccessRead, "read"}, {AccessWrite, "write"}, {AccessExec, "exec"}} {
		if a&x.bit != 0 {
			parts = append(parts, x.name)
		}
	}
	if rest := a &^ (AccessRead | AccessWrite | AccessExec); rest != 0 {
		parts = append(parts, "unknown")
	}
	return strings.Join(parts, "+")
}

// Env holds what path patterns may refer to: `~` and ${HOME} expand to
// Home, ${WORKSPACE} to Workspace, ${TMPDIR} to TmpDir. All are absolute.
type Env struct {
	Home, Workspace, TmpDir string
}
