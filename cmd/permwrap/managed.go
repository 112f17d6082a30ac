package main

import (
	"fmt"
	"strings"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
)

// managedLinks are the managed policy's own reviewers, built like the
// user's (authority.Links), or nil when it names none.
func managedLinks(p *engine.Policy) (*authority.ManagedLinks, error) {
	m := p.Managed()
	if m == nil || len(m.AuthorizerChain) == 0 {
		return nil, nil
	}
	links, timeouts, err := authority.Links(m.Authorizers, nil)
	if err != nil {
		return nil, fmt.Errorf("the managed policy %s: %w", m.Path, err)
	}
	return &authority.ManagedLinks{Links: m.AuthorizerChain, Registry: links, Timeouts: timeouts}, nil
}

// managedLine says whether a managed policy is in force, for check and
// doctor: "managed policy: /etc/permwrap/managed.jsonc: 5 rules; forbids yolo, audit".
func managedLine(m *engine.ManagedInfo) string {
	if m == nil {
		return fmt.Sprintf("managed policy: none (%s does not exist)", engine.ManagedPolicyPath)
	}
	s := fmt.Sprintf("managed policy: %s: in force, %d rules", m.Path, m.Rules)
	if len(m.Forbid) > 0 {
		s += "; forbids " + strings.Join(m.Forbid, ", ")
	}
	if len(m.AuthorizerChain) > 0 {
		s += "; its reviewers: " + strings.Join(m.AuthorizerChain, ", ")
	}
	return s
}

// doctorManaged prints the managed policy's state; false when it would
// stop permwrap from running (unsafe ownership, invalid content).
func doctorManaged(w func(string, ...any)) bool {
	f, err := engine.ReadManaged(engine.ManagedPolicyPath)
	if err == nil && f != nil {
		var m *engine.ManagedInfo
		if m, _, err = engine.ParseManaged(f, engine.FillEnv(engine.Env{})); err == nil {
			w("%s", managedLine(m))
			return true
		}
	}
	if err != nil {
		w("managed policy: %s: permwrap refuses to run:", engine.ManagedPolicyPath)
		for _, l := range strings.Split(err.Error(), "\n") {
			w("  %s", l)
		}
		return false
	}
	w("%s", managedLine(nil))
	return true
}
