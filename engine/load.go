package engine

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// defaultPolicy is the policy that applies when policy.jsonc does not
// exist. `permwrap policy default` prints it byte for byte.
//
//go:embed default.jsonc
var defaultPolicy []byte

// DefaultPolicy returns the embedded default policy text.
func DefaultPolicy() []byte { return append([]byte(nil), defaultPolicy...) }

// DefaultPolicyName is the file name positions in the default policy use.
const DefaultPolicyName = "default.jsonc"

// Config file names inside the config directory.
const (
	PolicyFileName     = "policy.jsonc"
	HardGuardsFileName = "hard-guards.jsonc"
)

// LoadOptions says where configuration comes from.
type LoadOptions struct {
	ConfigDir string   // "" → $PERMWRAP_CONFIG_DIR, else $XDG_CONFIG_HOME/permwrap, else ~/.config/permwrap
	Scopes    []string // --policy FILE, in order (later wins ties)
	// Env expands ~ and ${VAR}. Empty fields are filled from the process:
	// $HOME, the working directory, $TMPDIR (else /tmp).
	Env  Env
	Yolo bool // --yolo; ORed with the global policy's "yoloMode"
}

// ConfigDir resolves the configuration directory as Load does.
func ConfigDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	if d := os.Getenv("PERMWRAP_CONFIG_DIR"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "permwrap"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the configuration directory: %w (set PERMWRAP_CONFIG_DIR)", err)
	}
	return filepath.Join(home, ".config", "permwrap"), nil
}

// FillEnv fills empty Env fields from the process environment.
func FillEnv(env Env) Env {
	if env.Home == "" {
		env.Home, _ = os.UserHomeDir()
	}
	if env.Workspace == "" {
		env.Workspace, _ = os.Getwd()
	}
	if env.TmpDir == "" {
		env.TmpDir = os.Getenv("TMPDIR")
		if env.TmpDir == "" {
			env.TmpDir = "/tmp"
		}
	}
	for _, p := range []*string{&env.Home, &env.Workspace, &env.TmpDir} {
		if *p != "" {
			*p = filepath.Clean(*p)
		}
	}
	return env
}

// File is one configuration file's name and content.
type File struct {
	Name string
	Data []byte
}

// Config is what Load reads, in memory. Compile turns it into a Policy.
type Config struct {
	Global     *File // nil → the embedded default policy
	HardGuards *File // nil → none
	Scopes     []File
	Env        Env
	Yolo       bool
}

// Load reads policy.jsonc (or the embedded default when it does not
// exist), hard-guards.jsonc (optional) and the scopes. A broken
// policy.jsonc or hard-guards.jsonc is a returned error (joined
// *ConfigError values carrying file, line and column; the CLI exits 125).
// A broken scope is a Warning and floors every allow to ask.
func Load(opts LoadOptions) (*Policy, []Warning, error) {
	cfg, warns, err := ReadConfig(opts)
	if err != nil {
		return nil, nil, err
	}
	p, w2, err := Compile(cfg)
	return p, append(warns, w2...), err
}

// ReadConfig reads the files Load would compile. Unreadable scopes are
// returned as warnings and recorded as broken scopes in the Config.
func ReadConfig(opts LoadOptions) (Config, []Warning, error) {
	cfg := Config{Env: FillEnv(opts.Env), Yolo: opts.Yolo}
	dir, err := ConfigDir(opts.ConfigDir)
	if err != nil {
		return cfg, nil, err
	}
	global, err := readOptional(filepath.Join(dir, PolicyFileName))
	if err != nil {
		return cfg, nil, err
	}
	cfg.Global = global
	hg, err := readOptional(filepath.Join(dir, HardGuardsFileName))
	if err != nil {
		return cfg, nil, err
	}
	cfg.HardGuards = hg
	var warns []Warning
	for _, s := range opts.Scopes {
		data, err := os.ReadFile(s)
		if err != nil {
			// Keep the scope as unreadable so Compile floors to ask.
			warns = append(warns, Warning{File: s, Err: err})
			cfg.Scopes = append(cfg.Scopes, File{Name: s, Data: nil})
			continue
		}
		cfg.Scopes = append(cfg.Scopes, File{Name: s, Data: data})
	}
	return cfg, warns, nil
}

func readOptional(name string) (*File, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &ConfigError{Pos: Position{File: name}, Msg: err.Error()}
	}
	return &File{Name: name, Data: data}, nil
}

// FileKind is what a configuration file is read as.
type FileKind uint8

const (
	FileGlobal     FileKind = FileKind(kindGlobal)    // policy.jsonc: rules and settings
	FileHardGuards FileKind = FileKind(kindHardGuard) // hard-guards.jsonc: permission and protectedWrites
	FileScope      FileKind = FileKind(kindScope)     // --policy FILE: permission only
)

func (k FileKind) String() string {
	switch k {
	case FileGlobal:
		return "global policy"
	case FileHardGuards:
		return "hard guards"
	case FileScope:
		return "policy scope"
	}
	return "unknown"
}

// CheckFile validates one file as kind and returns how many rules it
// holds. The error joins every *ConfigError in the file.
func CheckFile(name string, data []byte, kind FileKind, env Env) (int, error) {
	fc, err := parseConfig(name, data, fileKind(kind), env)
	if err != nil {
		return 0, err
	}
	n := len(fc.rules) + len(fc.protected)
	if fc.fallback != nil {
		n++
	}
	return n, nil
}

// Compile composes a Config into a Policy. Errors in the global policy or
// the hard guards are returned; a scope that is missing (nil Data from an
// unreadable file) or invalid becomes a Warning and turns on fail-closed.
func Compile(cfg Config) (*Policy, []Warning, error) {
	env := cfg.Env
	global := cfg.Global
	origin := OriginGlobal
	if global == nil {
		global = &File{Name: DefaultPolicyName, Data: defaultPolicy}
		origin = OriginDefault
	}
	var errs []error
	gfc, err := parseConfig(global.Name, global.Data, kindGlobal, env)
	if err != nil {
		errs = append(errs, err)
	}
	var hfc *fileConfig
	if cfg.HardGuards != nil {
		hfc, err = parseConfig(cfg.HardGuards.Name, cfg.HardGuards.Data, kindHardGuard, env)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	p := &Policy{env: env, settings: gfc.settings, yolo: cfg.Yolo || gfc.yolo}
	p.settings.Yolo = p.yolo
	p.sources = append(p.sources, global.Name)

	order := 0
	var perSurface, content [numSurfaces][]*compiledRule
	addRules := func(fc *fileConfig, o Origin) {
		for _, rr := range fc.rules {
			list := &perSurface
			if rr.rule.Content != ContentAny {
				list = &content
			}
			list[rr.rule.Surface] = append(list[rr.rule.Surface], newCompiled(rr, o, order))
			order++
		}
		if fc.fallback != nil {
			f := &compiledRule{Rule: *fc.fallback, order: order}
			f.Origin = o
			order++
			p.fallback = f // later files win
		}
	}
	addRules(gfc, origin)

	var warns []Warning
	for _, s := range cfg.Scopes {
		if s.Data == nil {
			p.failClosed = true
			continue // ReadConfig already warned
		}
		sfc, err := parseConfig(s.Name, s.Data, kindScope, env)
		if err != nil {
			warns = append(warns, Warning{File: s.Name, Err: err})
			p.failClosed = true
			continue
		}
		addRules(sfc, OriginScope)
		p.sources = append(p.sources, s.Name)
	}
	for s := range perSurface {
		p.rules[s] = newRuleList(perSurface[s])
		p.content[s] = newRuleList(content[s])
	}

	if hfc != nil {
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
		p.sources = append(p.sources, cfg.HardGuards.Name)
	}
	return p, warns, nil
}

func newCompiled(rr rawRule, o Origin, order int) *compiledRule {
	cr := &compiledRule{Rule: rr.rule, path: rr.path, bash: rr.bash, order: order}
	cr.Origin = o
	if cr.bash != nil {
		cr.spec = cr.bash.spec
	} else {
		cr.spec = cr.path.spec
	}
	return cr
}

// Summary is the one line `permwrap check` prints for a valid
// configuration.
func (p *Policy) Summary() string {
	n, hard := 0, 0
	for s := range p.rules {
		n += p.rules[s].n + p.content[s].n
		hard += p.hard[s].n
	}
	if p.fallback != nil {
		n++
	}
	var flags []string
	if p.yolo {
		flags = append(flags, "yolo on")
	}
	if p.failClosed {
		flags = append(flags, "FAIL-CLOSED (a scope did not load)")
	}
	s := fmt.Sprintf("ok: %d rules, %d hard guards, %d protected writes from %s", n, hard, p.protected.n, strings.Join(p.sources, ", "))
	if len(flags) > 0 {
		s += "; " + strings.Join(flags, ", ")
	}
	return s
}

// Floor is the static Landlock floor the supervisor applies: writes are
// granted beneath WriteDirs (or anywhere), reads and execs beneath `/`,
// and the notify layer decides each access within. It never denies what
// the policy could allow, so it over-approximates.
type Floor struct {
	WriteDirs     []string
	WriteAnywhere bool
}

// LandlockFloor computes the write floor from every write and path rule
// that could let a write through (allow or ask, including hard-guard
// asks and protected writes, which a person may approve), and from the
// fallback or builtin answer for writes no rule covers. A rule's
// directory is its pattern's literal prefix up to the last '/' before the
// first wildcard; for an exact path it is the parent, because creating or
// replacing the file needs rights on the directory that holds it.
//
// One deliberate gap: `X/**` grants beneath X, not X's parent, so
// creating, removing or renaming X itself is refused by Landlock even
// though the pattern matches X. Granting the parent would turn
// `${WORKSPACE}/**` for /work into a floor of `/`.
func (p *Policy) LandlockFloor() Floor {
	var f Floor
	dirs := map[string]bool{}
	consider := func(r *compiledRule) {
		if r.Action == Deny {
			return
		}
		pp := r.path
		if pp.basename || pp.anyValue {
			f.WriteAnywhere = true
			return
		}
		pre := pp.main.prefix
		if pp.exact {
			pre = pp.expanded
		}
		i := strings.LastIndexByte(pre, '/')
		if i <= 0 {
			f.WriteAnywhere = true
			return
		}
		dirs[pre[:i]] = true
	}
	for _, l := range []*ruleList{&p.rules[SurfaceWrite], &p.rules[SurfacePath], &p.hard[SurfaceWrite], &p.hard[SurfacePath], &p.protected} {
		for _, r := range l.exact {
			consider(r)
		}
		for _, e := range l.rules {
			consider(e.r)
		}
	}
	// A write no rule matches gets the fallback or the builtin ask; both
	// let it through unless the fallback denies. A write with no write
	// or path rule matching abstains to the fallback the same way.
	if p.fallback == nil || p.fallback.Action != Deny {
		if !p.hasCatchAllDeny() {
			f.WriteAnywhere = true
		}
	}
	if f.WriteAnywhere {
		return Floor{WriteAnywhere: true}
	}
	for d := range dirs {
		f.WriteDirs = append(f.WriteDirs, d)
	}
	sort.Strings(f.WriteDirs)
	// Drop directories beneath another listed one.
	out := f.WriteDirs[:0]
	for _, d := range f.WriteDirs {
		if len(out) > 0 {
			last := out[len(out)-1]
			if d == last || strings.HasPrefix(d, last+"/") {
				continue
			}
		}
		out = append(out, d)
	}
	f.WriteDirs = out
	return f
}

// hasCatchAllDeny reports whether every write that no more specific rule
// covers is denied: a deny of `*`, `**` or `/**` on the write or path
// surface, in the policy or the hard guards.
func (p *Policy) hasCatchAllDeny() bool {
	for _, l := range []*ruleList{&p.rules[SurfaceWrite], &p.rules[SurfacePath], &p.hard[SurfaceWrite], &p.hard[SurfacePath]} {
		for _, e := range l.rules {
			r := e.r
			if r.Action != Deny {
				continue
			}
			switch r.path.expanded {
			case "*", "**", "/**":
				return true
			}
		}
	}
	return false
}
