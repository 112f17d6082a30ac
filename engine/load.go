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
	// ScopesOptional turns a missing or broken scope from an error into
	// a warning that turns every allow into an ask (--policy-optional).
	ScopesOptional bool
	// Profile names the base layer for this run (--profile), whatever
	// policy.jsonc's "extends" says; "" leaves it to the file.
	Profile string
	// Env expands ~ and ${VAR}. Empty fields are filled as FillEnv does.
	Env   Env
	Yolo  bool // --yolo; ORed with the global policy's "yoloMode"
	Audit bool // --audit: asks and denials are allowed and logged (see Policy.Audit)
	// NoProject skips the project policies (.permwrap/policy.jsonc from
	// the workspace up to the repository root).
	NoProject bool
	// ManagedPath is the managed policy to read; "" reads
	// ManagedPolicyPath. Only tests set it (see ManagedPolicyPath).
	ManagedPath string
	// Protect adds paths the sandboxed tree may never write (the review
	// log, permwrap's own binary) to those the loader protects itself
	// (the configuration directory, the project policies).
	Protect []Protected
}

// Protected is a path permwrap protects from the tree it supervises:
// every write to it (and beneath it, for a Tree) is denied in the
// hard-guard layer, whatever any policy, session approval, yolo or
// audit says.
type Protected struct {
	Path   string
	Tree   bool   // the directory and everything beneath it
	Reason string // shown with every denial
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

// NewEnv builds the expansion environment for a run, explain or check:
// the home directory, the workspace (workspace, or the working directory
// when ""), and the temporary directory ($TMPDIR, else /tmp). The
// workspace must exist and be a directory. Every path is absolute,
// cleaned and has its symlinks resolved, because the paths permwrap
// checks are resolved the same way: a workspace reached through a
// symlink still matches ${WORKSPACE}.
func NewEnv(workspace string) (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("no home directory: %w", err)
	}
	if workspace == "" {
		if workspace, err = os.Getwd(); err != nil {
			return Env{}, fmt.Errorf("the working directory: %w", err)
		}
	}
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return Env{}, fmt.Errorf("workspace %s: %w", workspace, err)
	}
	st, err := os.Stat(abs)
	switch {
	case err != nil:
		return Env{}, fmt.Errorf("workspace %s: %w", workspace, err)
	case !st.IsDir():
		return Env{}, fmt.Errorf("workspace %s: not a directory", workspace)
	}
	return FillEnv(Env{Home: home, Workspace: abs}), nil
}

// FillEnv fills empty Env fields from the process environment, as
// NewEnv does, and makes every field absolute, clean and
// symlink-resolved. It never fails: a field it cannot resolve is kept
// as it is.
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
		if *p == "" {
			continue
		}
		if abs, err := filepath.Abs(*p); err == nil {
			*p = abs
		}
		*p = ResolveExisting(*p)
	}
	return env
}

// ResolveExisting resolves the symlinks of the longest existing prefix of
// p and appends the rest: the path the kernel would reach, for a path
// that may not exist yet.
func ResolveExisting(p string) string {
	p = filepath.Clean(p)
	var rest []string
	for dir := p; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if dir == "/" || dir == "." {
			return p
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
	}
}

// File is one configuration file's name and content.
type File struct {
	Name string
	Data []byte
}

// Project is a project policy found from the workspace up.
type Project struct {
	File
	Dir     string // the directory that holds .permwrap/
	Trusted bool   // trusted with this content: it may loosen
	// Why it is not trusted, for the warning: never trusted, or changed
	// since.
	Untrusted string
}

// Config is what Load reads, in memory. Compile turns it into a Policy.
type Config struct {
	Global     *File // nil → the embedded default policy
	HardGuards *File // nil → none
	Managed    *File // the managed policy (managed.go); nil → none
	Scopes     []File
	Projects   []Project
	// Profile names the base layer whatever Global says (--profile).
	Profile string
	// DefaultExtends is the base layer of a Global that says nothing:
	// ReadConfig sets DefaultProfile; "" means none.
	DefaultExtends string
	// ScopesRequired makes a missing (nil Data) or broken scope an
	// error instead of a warning that turns on fail-closed.
	ScopesRequired bool
	Protect        []Protected
	Env            Env
	Yolo           bool
	Audit          bool
}

// Load reads the configuration (ReadConfig) and compiles it (Compile).
// Broken files are a returned error (joined *ConfigError values carrying
// file, line and column; the CLI exits 125), except a scope under
// ScopesOptional, which is a Warning and turns every allow into an ask.
func Load(opts LoadOptions) (*Policy, []Warning, error) {
	cfg, warns, err := ReadConfig(opts)
	if err != nil {
		return nil, warns, err
	}
	p, w2, err := Compile(cfg)
	return p, append(warns, w2...), err
}

// ProjectDirName is the directory in a project that holds its policy.
const (
	ProjectDirName        = ".permwrap"
	ProjectPolicyFileName = "policy.jsonc"
)

// ProjectChain lists the directories whose .permwrap/policy.jsonc
// applies to a workspace, outermost first: from the repository root (the
// nearest directory, the workspace included, that holds .git) down to
// the workspace; just the workspace when it is in no repository.
func ProjectChain(workspace string) []string {
	ws := filepath.Clean(workspace)
	var chain []string
	for d := ws; ; d = filepath.Dir(d) {
		chain = append([]string{d}, chain...)
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return chain
		}
		if d == "/" || d == "." {
			return []string{ws}
		}
	}
}

// ReadConfig reads the files Load would compile: policy.jsonc,
// hard-guards.jsonc, the scopes, the project policies with their trust,
// and the paths to protect.
func ReadConfig(opts LoadOptions) (Config, []Warning, error) {
	cfg := Config{
		Env: FillEnv(opts.Env), Yolo: opts.Yolo, Audit: opts.Audit,
		Profile: opts.Profile, DefaultExtends: DefaultProfile, ScopesRequired: !opts.ScopesOptional,
	}
	if opts.Profile != "" && opts.Profile != ExtendsNone && !IsProfile(opts.Profile) {
		return cfg, nil, fmt.Errorf("--profile %q: no such profile (want %s or %q)", opts.Profile, strings.Join(ProfileNames(), ", "), ExtendsNone)
	}
	dir, err := ConfigDir(opts.ConfigDir)
	if err != nil {
		return cfg, nil, err
	}
	// Files are named as the directory was given (messages read as the
	// person wrote them); protection needs the absolute path.
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return cfg, nil, err
	}
	if cfg.Global, err = readOptional(filepath.Join(dir, PolicyFileName)); err != nil {
		return cfg, nil, err
	}
	if cfg.HardGuards, err = readOptional(filepath.Join(dir, HardGuardsFileName)); err != nil {
		return cfg, nil, err
	}
	managedPath := opts.ManagedPath
	if managedPath == "" {
		managedPath = ManagedPolicyPath
	}
	if cfg.Managed, err = ReadManaged(managedPath); err != nil {
		return cfg, nil, err
	}
	cfg.Protect = append(cfg.Protect, managedProtect(managedPath)...)
	noTrust := ""
	if noTrust, err = trustForbiddenBy(cfg.Managed, cfg.Env); err != nil {
		return cfg, nil, err
	}
	var (
		errs []error
		ws   []Warning
	)
	for _, s := range opts.Scopes {
		data, err := os.ReadFile(s)
		if err != nil {
			if cfg.ScopesRequired {
				errs = append(errs, &ConfigError{Pos: Position{File: s}, Msg: fmt.Sprintf("%v (a --policy file must exist; --policy-optional runs without it, asking for every allow)", unwrapPathError(err))})
				continue
			}
			// Kept as unreadable so Compile turns allows into asks.
			ws = append(ws, Warning{Pos: Position{File: s}, Msg: "policy scope not applied, every allow now asks (fail-closed)", Err: unwrapPathError(err)})
			cfg.Scopes = append(cfg.Scopes, File{Name: s})
			continue
		}
		cfg.Scopes = append(cfg.Scopes, File{Name: s, Data: data})
	}
	cfg.Protect = append(cfg.Protect, Protected{Path: absDir, Tree: true, Reason: "permwrap's configuration is read-only to what it runs"})
	chain := ProjectChain(cfg.Env.Workspace)
	for _, d := range chain {
		cfg.Protect = append(cfg.Protect, Protected{Path: filepath.Join(d, ProjectDirName), Tree: true, Reason: "a project's permwrap policy is read-only to what it runs"})
	}
	if !opts.NoProject {
		trust, err := ReadTrust(absDir)
		if err != nil {
			return cfg, ws, err
		}
		for _, d := range chain {
			name := filepath.Join(d, ProjectDirName, ProjectPolicyFileName)
			data, err := os.ReadFile(name)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				errs = append(errs, &ConfigError{Pos: Position{File: name}, Msg: unwrapPathError(err).Error()})
				continue
			}
			pr := Project{File: File{Name: name, Data: data}, Dir: d}
			pr.Trusted, pr.Untrusted = trust.Check(name, data)
			if noTrust != "" {
				pr.Trusted, pr.Untrusted = false, noTrust
				ws = append(ws, Warning{Pos: Position{File: name}, Msg: "applied as tighten-only (its rules can deny or ask, never allow): " + noTrust})
			} else if !pr.Trusted {
				ws = append(ws, Warning{Pos: Position{File: name}, Msg: pr.Untrusted + ": applied as tighten-only (its rules can deny or ask, never allow); run `permwrap trust " + d + "` to trust it"})
			}
			cfg.Projects = append(cfg.Projects, pr)
		}
	}
	for _, pr := range opts.Protect {
		if pr.Path != "" {
			cfg.Protect = append(cfg.Protect, pr)
		}
	}
	// Protect the path the kernel resolves to as well as the one given.
	for _, pr := range cfg.Protect {
		if r := ResolveExisting(pr.Path); r != filepath.Clean(pr.Path) {
			pr.Path = r
			cfg.Protect = append(cfg.Protect, pr)
		}
	}
	if len(errs) > 0 {
		return cfg, ws, errors.Join(errs...)
	}
	return cfg, ws, nil
}

// unwrapPathError drops the *fs.PathError wrapper whose path the caller
// already names.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func readOptional(name string) (*File, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &ConfigError{Pos: Position{File: name}, Msg: unwrapPathError(err).Error()}
	}
	return &File{Name: name, Data: data}, nil
}

// FileKind is what a configuration file is read as.
type FileKind uint8

const (
	FileGlobal     FileKind = FileKind(kindGlobal)    // policy.jsonc: rules and settings
	FileHardGuards FileKind = FileKind(kindHardGuard) // hard-guards.jsonc: permission and protectedWrites
	FileScope      FileKind = FileKind(kindScope)     // --policy FILE: permission only
	FileProject    FileKind = FileKind(kindProject)   // .permwrap/policy.jsonc: permission only
)

func (k FileKind) String() string {
	switch k {
	case FileGlobal:
		return "global policy"
	case FileHardGuards:
		return "hard guards"
	case FileScope:
		return "policy scope"
	case FileProject:
		return "project policy"
	}
	return "unknown"
}

// CheckFile validates one file as kind and returns how many rules it
// holds and its warnings. The error joins every *ConfigError in the file.
func CheckFile(name string, data []byte, kind FileKind, env Env) (int, []Warning, error) {
	fc, err := parseConfig(name, data, fileKind(kind), env)
	if err != nil {
		return 0, nil, err
	}
	n := len(fc.rules) + len(fc.protected)
	if fc.fallback != nil {
		n++
	}
	return n, fc.warns, nil
}

// Summary is the one line `permwrap check` prints for a valid
// configuration.
func (p *Policy) Summary() string {
	n, hard := 0, 0
	for s := range p.rules {
		n += p.rules[s].n + p.baseRules[s].n + p.tight[s].n + p.content[s].n
		hard += p.hard[s].n
	}
	if p.tightFallback != nil {
		n++
	}
	if p.fallback != nil {
		n++
	}
	var flags []string
	if p.yolo {
		flags = append(flags, "yolo on")
	}
	if p.audit {
		flags = append(flags, "audit on")
	}
	if p.failClosed {
		flags = append(flags, "FAIL-CLOSED (a scope did not load)")
	}
	if p.ListingsFree() {
		flags = append(flags, "directory listings not judged (listings: free)")
	} else {
		flags = append(flags, "directory listings judged")
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
		// An exact pattern's literal prefix is the whole (unescaped) path.
		pre := pp.main.prefix
		i := strings.LastIndexByte(pre, '/')
		if i <= 0 {
			f.WriteAnywhere = true
			return
		}
		dirs[pre[:i]] = true
	}
	for _, l := range []*ruleList{&p.rules[SurfaceWrite], &p.rules[SurfacePath], &p.baseRules[SurfaceWrite], &p.baseRules[SurfacePath], &p.hard[SurfaceWrite], &p.hard[SurfacePath], &p.managed[SurfaceWrite], &p.managed[SurfacePath], &p.protected} {
		l.each(consider)
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
	for _, l := range []*ruleList{&p.rules[SurfaceWrite], &p.rules[SurfacePath], &p.baseRules[SurfaceWrite], &p.baseRules[SurfacePath], &p.hard[SurfaceWrite], &p.hard[SurfacePath], &p.managed[SurfaceWrite], &p.managed[SurfacePath]} {
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
