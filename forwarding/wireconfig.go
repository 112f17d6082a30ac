package forwarding

import (
	"path/filepath"

	"github.com/permwrap/permwrap/engine"
)

// The configuration a registration carries, in both directions: the wire
// form an inner permwrap sends of what its loader read, and the
// engine.Config the supervising one compiles from it.

// EngineConfig is the registration's configuration as engine.Compile
// takes it. Unreadable scopes keep nil Data (fail-closed); a readable
// empty file keeps empty, non-nil Data.
func (m Register) EngineConfig() engine.Config {
	file := func(f *WireFile) *engine.File {
		if f == nil {
			return nil
		}
		d := f.Data
		if d == nil {
			d = []byte{}
		}
		return &engine.File{Name: f.Name, Data: d}
	}
	wc := m.Config
	cfg := engine.Config{
		Global:         file(wc.Global),
		HardGuards:     file(wc.HardGuards),
		Managed:        file(wc.Managed),
		Profile:        wc.Profile,
		DefaultExtends: wc.DefaultExtends,
		ScopesRequired: wc.ScopesRequired,
		Env:            engine.Env{Home: m.Env.Home, Workspace: m.Env.Workspace, TmpDir: m.Env.TmpDir},
		Yolo:           m.Yolo,
		Audit:          m.Audit,
	}
	// An inner that did not say (an older one) read its global policy
	// with the default base, as engine.ReadConfig does; "none" is none.
	if cfg.DefaultExtends == "" {
		cfg.DefaultExtends = engine.DefaultProfile
	}
	for _, s := range wc.Scopes {
		if s.Unreadable {
			cfg.Scopes = append(cfg.Scopes, engine.File{Name: s.Name, Data: nil})
			continue
		}
		cfg.Scopes = append(cfg.Scopes, *file(&s))
	}
	for _, pr := range wc.Projects {
		f := file(&WireFile{Name: pr.Name, Data: pr.Data})
		cfg.Projects = append(cfg.Projects, engine.Project{File: *f, Dir: pr.Dir, Trusted: pr.Trusted, Untrusted: pr.Untrusted})
	}
	for _, pr := range wc.Protect {
		cfg.Protect = append(cfg.Protect, engine.Protected{Path: pr.Path, Tree: pr.Tree, Reason: pr.Reason})
	}
	return cfg
}

// WireConfigOf is the inverse of EngineConfig: how an inner permwrap
// sends what its loader read (engine.Policy.Config). warnings name
// scopes it could not read (their Data is nil).
func WireConfigOf(cfg engine.Config, warnings []engine.Warning) (WireConfig, WireEnv) {
	file := func(f *engine.File) *WireFile {
		if f == nil {
			return nil
		}
		return &WireFile{Name: f.Name, Data: f.Data}
	}
	wc := WireConfig{
		Global: file(cfg.Global), HardGuards: file(cfg.HardGuards), Managed: file(cfg.Managed), Scopes: []WireFile{},
		Profile: cfg.Profile, DefaultExtends: cfg.DefaultExtends, ScopesRequired: cfg.ScopesRequired,
	}
	if wc.DefaultExtends == "" {
		wc.DefaultExtends = engine.ExtendsNone // "" on the wire means the default
	}
	for _, s := range cfg.Scopes {
		wf := WireFile{Name: s.Name, Data: s.Data}
		if s.Data == nil {
			wf.Unreadable = true
			for _, w := range warnings {
				if w.Pos.File == s.Name && w.Err != nil {
					wf.Error = elideString(w.Err.Error(), MaxReasonBytes)
				}
			}
		}
		wc.Scopes = append(wc.Scopes, wf)
	}
	for _, pr := range cfg.Projects {
		wc.Projects = append(wc.Projects, WireProject{Name: pr.Name, Data: pr.Data, Dir: pr.Dir, Trusted: pr.Trusted, Untrusted: elideString(sanitizeText(pr.Untrusted), MaxReasonBytes)})
	}
	for _, pr := range cfg.Protect {
		if pr.Path == "" {
			continue
		}
		// The root checks the paths are absolute and clean; a relative
		// one (a log.path the policy names relatively) is where the inner
		// would open it: from its working directory.
		if abs, err := filepath.Abs(pr.Path); err == nil {
			pr.Path = abs
		}
		wc.Protect = append(wc.Protect, WireProtected{Path: pr.Path, Tree: pr.Tree, Reason: elideString(sanitizeText(pr.Reason), MaxReasonBytes)})
	}
	return wc, WireEnv{Home: cfg.Env.Home, Workspace: cfg.Env.Workspace, TmpDir: cfg.Env.TmpDir}
}

// NewRegister is the registration an inner permwrap sends: its name, its
// command, the configuration its loader compiled (policy.Config()) and
// the loader's warnings, and whether it wants its subtree's records.
func NewRegister(name string, argv []string, cfg engine.Config, warnings []engine.Warning, wantLog bool) Register {
	wc, we := WireConfigOf(cfg, warnings)
	return Register{Name: name, Argv: append([]string(nil), argv...), Config: wc, Env: we, Yolo: cfg.Yolo, Audit: cfg.Audit, Log: wantLog}
}
