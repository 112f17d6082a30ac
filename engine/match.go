package engine

import (
	"errors"
	"path"
)

// PathMatcher compiles a path pattern in the policy's syntax, already
// expanded (see ExpandPathPattern), into a match function: the one glob
// dialect permwrap has, for packages that match paths outside a policy
// (the typo-path reviewer, the secret-shaped-path check of delegation).
// A pattern with no '/' matches a path's last component, or a bare name.
func PathMatcher(pattern string) (func(string) bool, error) {
	pp, err := compilePathPattern(pattern)
	if err != nil {
		return nil, err
	}
	return pp.match, nil
}

// NewTypoPath builds a typoPaths entry: paths matching the pattern from
// (as written in a policy, expanded with env) are probably meant to be
// under the directory to (~ and ${VAR} expanded).
func NewTypoPath(from, to string, env Env) (TypoPath, error) {
	exp, err := ExpandPathPattern(from, env)
	if err != nil {
		return TypoPath{}, err
	}
	pp, err := compilePathPattern(exp)
	if err != nil {
		return TypoPath{}, err
	}
	dir, err := expandPattern(to, env)
	if err != nil {
		return TypoPath{}, err
	}
	if !path.IsAbs(dir) {
		return TypoPath{}, errors.New("to must be an absolute directory (~ and ${VAR} are allowed)")
	}
	return TypoPath{From: from, To: path.Clean(dir), pat: pp}, nil
}

// CommandMatcher compiles a command-line pattern (the bash surface's
// syntax) into a match function.
func CommandMatcher(pattern string) (func(string) bool, error) {
	bp, err := compileBashPattern(pattern)
	if err != nil {
		return nil, err
	}
	return bp.match, nil
}
