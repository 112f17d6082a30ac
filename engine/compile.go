package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Compile composes a Config into a Policy. The layers, lowest first: the
// base profile (what the global policy "extends", "default" unless it
// says otherwise, or Config.Profile), the global policy, trusted project
// policies, the scopes; most specific wins across all of them, later
// wins ties. Untrusted project policies compose most-restrictive-wins on
// top (they only tighten). Hard guards and the protected paths stand
// above everything. Errors in any file are returned together; a scope
// that is missing or invalid without ScopesRequired becomes a Warning
// and turns on fail-closed.
func Compile(cfg Config) (*Policy, []Warning, error) {
	files := parseFiles(cfg)
	if len(files.errs) > 0 {
		return nil, files.warns, errors.Join(files.errs...)
	}
	base, bfc, baseOrigin, err := baseProfile(cfg, files.global)
	if err != nil {
		return nil, files.warns, err
	}
	p := &Policy{env: cfg.Env, settings: defaultSettings(), audit: cfg.Audit, base: base, cfg: cfg}
	p.applySettings(cfg, bfc, files.global)
	if err := p.addManaged(cfg, files.managed); err != nil {
		return nil, files.warns, err
	}
	p.layerRules(cfg, files, bfc, baseOrigin)
	if files.hard != nil {
		p.addHardGuards(files.hard, cfg.HardGuards.Name)
	}
	p.addManagedProtected(files.managed)
	self, err := protectRules(cfg.Protect)
	if err != nil {
		return nil, files.warns, err
	}
	p.self = newRuleList(self)
	return p, files.warns, nil
}

// parsedFiles are a Config's files, parsed: what Compile composes.
type parsedFiles struct {
	global, hard *fileConfig   // nil when absent
	managed      *fileConfig   // nil when absent
	projects     []*fileConfig // as Config.Projects
	scopes       []*fileConfig // as Config.Scopes; nil: not applied (fail-closed)
	errs         []error
	warns        []Warning
}

// parseFiles parses every file of cfg, gathering errors and warnings in
// the order of the files.
func parseFiles(cfg Config) *parsedFiles {
	pf := &parsedFiles{}
	if cfg.Global != nil {
		pf.global = pf.parse(cfg.Global, kindGlobal, cfg.Env)
	}
	if cfg.HardGuards != nil {
		pf.hard = pf.parse(cfg.HardGuards, kindHardGuard, cfg.Env)
	}
	if cfg.Managed != nil {
		pf.managed = pf.parse(cfg.Managed, kindManaged, cfg.Env)
	}
	pf.projects = make([]*fileConfig, len(cfg.Projects))
	for i := range cfg.Projects {
		pf.projects[i] = pf.parse(&cfg.Projects[i].File, kindProject, cfg.Env)
	}
	pf.parseScopes(cfg)
	return pf
}

// parse parses one file that must be valid: an error is kept, and nil
// returned.
func (pf *parsedFiles) parse(f *File, k fileKind, env Env) *fileConfig {
	fc, err := parseConfig(f.Name, f.Data, k, env)
	if err != nil {
		pf.errs = append(pf.errs, err)
		return nil
	}
	pf.warns = append(pf.warns, fc.warns...)
	return fc
}

// parseScopes parses the --policy scopes: one that is missing or invalid
// is an error when cfg.ScopesRequired, otherwise a warning, and not
// applied.
func (pf *parsedFiles) parseScopes(cfg Config) {
	pf.scopes = make([]*fileConfig, len(cfg.Scopes))
	for i, s := range cfg.Scopes {
		if s.Data == nil {
			if cfg.ScopesRequired {
				pf.errs = append(pf.errs, &ConfigError{Pos: Position{File: s.Name}, Msg: "could not be read"})
			}
			continue // ReadConfig already warned
		}
		fc, err := parseConfig(s.Name, s.Data, kindScope, cfg.Env)
		switch {
		case err != nil && cfg.ScopesRequired:
			pf.errs = append(pf.errs, err)
		case err != nil:
			pf.warns = append(pf.warns, Warning{Pos: Position{File: s.Name}, Msg: "policy scope not applied, every allow now asks (fail-closed)", Err: err})
		default:
			pf.warns = append(pf.warns, fc.warns...)
			pf.scopes[i] = fc
		}
	}
}

// baseProfile is the base layer: the profile cfg names, or the one the
// global policy extends, or the default; nil under ExtendsNone.
func baseProfile(cfg Config, gfc *fileConfig) (string, *fileConfig, Origin, error) {
	base := cfg.Profile
	if base == "" {
		switch {
		case gfc == nil:
			base = DefaultProfile
		case gfc.extends != "":
			base = gfc.extends
		default:
			base = cfg.DefaultExtends
		}
	}
	if base == "" || base == ExtendsNone {
		return base, nil, OriginDefault, nil
	}
	f, ok := Profile(base)
	if !ok {
		return base, nil, OriginDefault, fmt.Errorf("no such profile %q (want %s or %q)", base, strings.Join(ProfileNames(), ", "), ExtendsNone)
	}
	bfc, err := parseConfig(f.Name, f.Data, kindProfile, cfg.Env)
	if err != nil {
		return base, nil, OriginDefault, fmt.Errorf("the embedded profile %q is broken: %w", base, err)
	}
	if base != DefaultProfile {
		return base, bfc, OriginProfile, nil
	}
	return base, bfc, OriginDefault, nil
}

// applySettings applies the settings of the base profile and the global
// policy, in that order, and yolo.
func (p *Policy) applySettings(cfg Config, bfc, gfc *fileConfig) {
	if bfc != nil {
		p.settings = layerSettings(p.settings, bfc)
		p.sources = append(p.sources, bfc.name)
	}
	if gfc != nil {
		p.settings = layerSettings(p.settings, gfc)
		p.sources = append(p.sources, cfg.Global.Name)
	}
	p.yolo = cfg.Yolo || p.settings.Yolo
	p.settings.Yolo = p.yolo
}

// ruleLayers gathers the rules of the layers per surface, numbering them
// in the order they are declared.
type ruleLayers struct {
	order                                 int
	perSurface, baseRules, tight, content [numSurfaces][]*compiledRule
}

// add adds a file's rules to into (its content rules to content) and its
// fallback to *fallback: later files win.
func (l *ruleLayers) add(fc *fileConfig, o Origin, into *[numSurfaces][]*compiledRule, fallback **compiledRule) {
	for _, rr := range fc.rules {
		list := into
		if rr.rule.Content != ContentAny {
			// Content rules (only ask or deny) apart, so evaluating
			// as "not secret" simply skips them.
			list = &l.content
		}
		list[rr.rule.Surface] = append(list[rr.rule.Surface], newCompiled(rr, o, l.order))
		l.order++
	}
	if fc.fallback != nil {
		f := &compiledRule{Rule: *fc.fallback, order: l.order}
		f.Origin = o
		l.order++
		*fallback = f // later files win
	}
}

// layerRules composes the rules of the base profile, the global policy,
// the project policies (trusted ones as layers, others tighten only) and
// the scopes.
func (p *Policy) layerRules(cfg Config, pf *parsedFiles, bfc *fileConfig, baseOrigin Origin) {
	var l ruleLayers
	if bfc != nil {
		l.add(bfc, baseOrigin, &l.baseRules, &p.fallback)
	}
	if pf.global != nil {
		l.add(pf.global, OriginGlobal, &l.perSurface, &p.fallback)
	}
	for i, pfc := range pf.projects {
		if cfg.Projects[i].Trusted && !p.forbidsTrust() {
			l.add(pfc, OriginProject, &l.perSurface, &p.fallback)
			p.sources = append(p.sources, cfg.Projects[i].Name+" (trusted)")
		} else {
			l.add(pfc, OriginProject, &l.tight, &p.tightFallback)
			p.sources = append(p.sources, cfg.Projects[i].Name+" (tighten-only)")
			p.tightened = true
		}
	}
	for i, sfc := range pf.scopes {
		if sfc == nil {
			p.failClosed = true
			continue
		}
		l.add(sfc, OriginScope, &l.perSurface, &p.fallback)
		p.sources = append(p.sources, cfg.Scopes[i].Name)
	}
	for s := range l.perSurface {
		p.rules[s] = newRuleList(l.perSurface[s])
		p.baseRules[s] = newRuleList(l.baseRules[s])
		p.tight[s] = newRuleList(l.tight[s])
		p.content[s] = newRuleList(l.content[s])
	}
}

// addHardGuards adds the hard guards' rules and protected paths, which
// stand above every layer.
func (p *Policy) addHardGuards(hfc *fileConfig, name string) {
	var hard [numSurfaces][]*compiledRule
	for i, rr := range hfc.rules {
		hard[rr.rule.Surface] = append(hard[rr.rule.Surface], newCompiled(rr, OriginHardGuard, i))
	}
	for s := range hard {
		p.hard[s] = newRuleList(hard[s])
	}
	var prot []*compiledRule
	for i, rr := range hfc.protected {
		prot = append(prot, newCompiled(rr, OriginHardGuard, i))
	}
	p.protected = newRuleList(prot)
	p.sources = append(p.sources, name)
}

// WithScope compiles the policy again with one more --policy scope (data,
// named name in positions), declared last: what the policy would answer
// if that file were added. Session rules are not carried over.
func (p *Policy) WithScope(name string, data []byte) (*Policy, error) {
	cfg := p.cfg
	cfg.Scopes = append(append([]File(nil), cfg.Scopes...), File{Name: name, Data: data})
	cfg.ScopesRequired = true
	np, _, err := Compile(cfg)
	return np, err
}

// protectRules compiles the protected paths into write denies.
func protectRules(list []Protected) ([]*compiledRule, error) {
	var out []*compiledRule
	seen := map[string]bool{}
	for i, pr := range list {
		if pr.Path == "" {
			continue
		}
		pat := QuoteGlob(filepath.Clean(pr.Path))
		if pr.Tree {
			pat = strings.TrimSuffix(pat, "/") + "/**"
		}
		if seen[pat] {
			continue
		}
		seen[pat] = true
		pp, err := compilePathPattern(pat)
		if err != nil {
			return nil, fmt.Errorf("protected path %s: %w", pr.Path, err)
		}
		cr := &compiledRule{Rule: Rule{Surface: SurfaceWrite, Pattern: pat, Action: Deny, Reason: pr.Reason, Origin: OriginBuiltin}, path: pp, spec: pp.spec, order: i}
		out = append(out, cr)
	}
	return out, nil
}

// layerSettings applies the settings a file wrote over s, key by key: a
// policy.jsonc that sets askTimeout keeps the base's other settings.
func layerSettings(s Settings, fc *fileConfig) Settings {
	f := fc.settings
	for key := range fc.set {
		switch key {
		case "yoloMode":
			s.Yolo = f.Yolo
		case "authorizerChain":
			s.AuthorizerChain = f.AuthorizerChain
		case "authorizers":
			s.Authorizers = f.Authorizers
		case "modelDelegation":
			s.ModelDelegation = f.ModelDelegation
		case "askTimeout":
			s.AskTimeout = f.AskTimeout
		case "denialNotice":
			s.DenialNotice = f.DenialNotice
		case "proxy":
			s.Proxy = f.Proxy
		case "listings":
			s.Listings = f.Listings
		case "typoPaths":
			s.TypoPaths = f.TypoPaths
		case "log":
			s.Log = f.Log
		case "events":
			s.Events = s.Events.Add(f.Events) // sinks add up layer over layer
		}
	}
	return s
}

func newCompiled(rr rawRule, o Origin, order int) *compiledRule {
	cr := &compiledRule{Rule: rr.rule, path: rr.path, bash: rr.bash, net: rr.net, order: order}
	cr.Origin = o
	switch {
	case cr.bash != nil:
		cr.spec = cr.bash.spec
	case cr.path != nil:
		cr.spec = cr.path.spec
	}
	return cr
}
