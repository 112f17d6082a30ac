package engine

// Config returns the configuration the policy was compiled from: every
// file's name and bytes, the project policies with their trust, the
// protected paths, the environment and the flags. Compile(p.Config())
// gives an equal policy (without the session's rules). A nested permwrap
// hands this to the permwrap above it, which compiles it with its own
// engine; that root compiles its own again for every node beneath it,
// so each node's session approvals stay in its own instances.
//
// The lists are copies; the files' bytes are shared and must not be
// changed.
func (p *Policy) Config() Config {
	c := p.cfg
	c.Scopes = append([]File(nil), c.Scopes...)
	c.Projects = append([]Project(nil), c.Projects...)
	c.Protect = append([]Protected(nil), c.Protect...)
	return c
}
