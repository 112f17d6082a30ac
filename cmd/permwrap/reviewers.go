package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
)

// reviewerLines describe the authorizer chain for `permwrap check` and
// `permwrap doctor`: the links in chain order, each with what it is (a
// url reviewer by scheme, host and path; a program by its masked
// command line), then the ones defined but not named. A header's value
// is never shown, only its name. Nothing when no reviewer is configured.
func reviewerLines(s engine.Settings) []string {
	if len(s.AuthorizerChain) == 0 && len(s.Authorizers) == 0 {
		return nil
	}
	var out []string
	if len(s.AuthorizerChain) == 0 {
		out = append(out, "authorizer chain: empty (asks go to the person, or are denied headless)")
	} else {
		out = append(out, "authorizer chain: "+strings.Join(s.AuthorizerChain, " → ")+" → the terminal (the person at the prompt; headless: deny)")
	}
	for _, name := range s.AuthorizerChain {
		out = append(out, "  "+name+": "+describeReviewer(name, s))
	}
	var unnamed []string
	for name := range s.Authorizers {
		if !slices.Contains(s.AuthorizerChain, name) {
			unnamed = append(unnamed, name)
		}
	}
	if len(unnamed) > 0 {
		slices.Sort(unnamed)
		out = append(out, "defined but not in authorizerChain (never consulted): "+strings.Join(unnamed, ", "))
	}
	return out
}

func describeReviewer(name string, s engine.Settings) string {
	spec, ok := s.Authorizers[name]
	switch {
	case !ok && name == authority.TypoPathName:
		return "built in (typoPaths and the workspace's stale copies)"
	case !ok:
		return "not defined: skipped (a warning at every run)"
	case spec.Remote != nil:
		r := spec.Remote
		d := "url " + r.Display()
		var extra []string
		if names := r.HeaderNames(); len(names) > 0 {
			extra = append(extra, "headers "+strings.Join(names, ", ")+" (values hidden)")
		}
		if r.CAFile != "" {
			extra = append(extra, "caFile "+r.CAFile)
		}
		if len(extra) > 0 {
			d += " (" + strings.Join(extra, "; ") + ")"
		}
		return d + fmt.Sprintf(", timeout %s", spec.Timeout)
	}
	return fmt.Sprintf("command %s, timeout %s", strings.Join(authority.MaskArgv(spec.Command), " "), spec.Timeout)
}

// doctorReviewers prints the authorizer chain of the configuration a
// plain `permwrap -- CMD` here would load, and whether its links can be
// built (a url reviewer's caFile); it does not contact a reviewer.
func doctorReviewers(w func(string, ...any)) {
	env, err := engine.NewEnv("")
	if err != nil {
		return
	}
	p, _, err := engine.Load(engine.LoadOptions{Env: env})
	if err != nil {
		w("")
		w("reviewers: the configuration does not load (`permwrap check` says why)")
		return
	}
	s := p.Settings()
	lines := reviewerLines(s)
	if len(lines) == 0 {
		return
	}
	w("")
	for _, l := range lines {
		w("%s", l)
	}
	if _, _, err := authority.Links(s.Authorizers, s.TypoPaths); err != nil {
		w("  error: %v", err)
	}
}
