package engine

import (
	"strings"

	"github.com/permwrap/permwrap/engine/shell"
)

// PathUse is a file a command of a script reads or writes, as far as the
// analysis could resolve it: a redirect target, or an argument of a file
// command the analysis knows (`touch f`, `cp a b`, `rm -r d`; see
// shell.ArgPathUses). When a person approves the script, its path uses
// are approved with it, so the opens they name do not ask again (one ask
// per intent).
type PathUse struct {
	Access Access
	Path   string // absolute and clean
	// Tree is set when everything beneath Path is used too (`rm -r d`,
	// `cp -r src dst`).
	Tree bool
	From string // what named it, for people: "redirect", "argument of cp"
}

// Covers reports whether the use includes an access a to p.
func (u PathUse) Covers(a Access, p string) bool {
	if a == 0 || a&^u.Access != 0 {
		return false
	}
	return p == u.Path || u.Tree && isBeneath(p, u.Path)
}

// pathUsesOf converts the analysis's path uses to engine's.
func pathUsesOf(uses []shell.PathUse) []PathUse {
	out := make([]PathUse, len(uses))
	for i, u := range uses {
		out[i] = PathUse{Access: Access(u.Access), Path: u.Path, Tree: u.Tree, From: u.From}
	}
	return out
}

func isBeneath(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/") && p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}
