package engine

// ReadsAlwaysAllowed reports whether this policy answers allow to every
// read of every path, whatever session rules are added later (they only
// allow). The supervisor then lets plain read-only opens through in the
// kernel without a notification — the biggest cost of supervision — and
// Landlock's read-everywhere floor covers them.
//
// It is conservative: true only when no rule on the read or path surface
// (hard guards included) says anything but allow, no failed scope turns
// the run's allows into asks, and an unmatched read would be allowed too
// (a `*` read or path rule, or an allowing universal fallback).
func (p *Policy) ReadsAlwaysAllowed() bool {
	if p.failClosed {
		return false
	}
	onlyAllow := func(l *ruleList) bool {
		for _, r := range l.exact {
			if r.Action != Allow {
				return false
			}
		}
		for _, e := range l.rules {
			if e.r.Action != Allow {
				return false
			}
		}
		return true
	}
	catchAll := func(l *ruleList) bool {
		for _, e := range l.rules {
			if e.r.path != nil && e.r.path.anyValue && e.r.Action == Allow {
				return true
			}
		}
		return false
	}
	for _, s := range []Surface{SurfaceRead, SurfacePath} {
		if !onlyAllow(&p.managed[s]) || !onlyAllow(&p.hard[s]) || !onlyAllow(&p.rules[s]) || !onlyAllow(&p.baseRules[s]) || !onlyAllow(&p.tight[s]) || p.content[s].n > 0 {
			return false
		}
	}
	if p.tightFallback != nil && p.tightFallback.Action != Allow {
		return false
	}
	if catchAll(&p.rules[SurfaceRead]) || catchAll(&p.rules[SurfacePath]) || catchAll(&p.baseRules[SurfaceRead]) || catchAll(&p.baseRules[SurfacePath]) {
		return true
	}
	return p.fallback != nil && p.fallback.Action == Allow
}

// ListingsFree reports whether a listing of a directory — a read-only open
// with O_DIRECTORY, which gives a descriptor whose names can be read but
// whose files' contents cannot without another open, itself judged — is
// left to the kernel unjudged (the "listings" setting, "free" unless the
// global policy says "judged"). A run whose scope failed to load judges
// every open (fail-closed), listings included.
func (p *Policy) ListingsFree() bool {
	return !p.failClosed && p.settings.Listings != ListingsJudged
}

// FailClosed reports whether a scope failed to load, so that every allow
// asks (and listings are judged).
func (p *Policy) FailClosed() bool { return p.failClosed }
