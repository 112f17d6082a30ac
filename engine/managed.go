package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ManagedPolicyPath is the managed policy: a system-wide file an
// administrator writes and nobody running an agent can loosen. It is a
// variable only so that a distribution can move it at build time:
//
//	go build -ldflags "-X github.com/permwrap/permwrap/engine.ManagedPolicyPath=/usr/share/permwrap/managed.jsonc"
//
// No flag or environment variable changes it: whoever runs permwrap could
// then point it at an empty file. Tests set LoadOptions.ManagedPath.
var ManagedPolicyPath = "/etc/permwrap/managed.jsonc"

// What the managed policy's "forbid" may name.
const (
	ForbidYolo         = "yolo"         // --yolo and "yoloMode": true are refused
	ForbidAudit        = "audit"        // --audit is refused
	ForbidProjectTrust = "projectTrust" // project policies are always tighten-only; `permwrap trust` refuses
)

var forbidNames = []string{ForbidYolo, ForbidAudit, ForbidProjectTrust}

type forbidEntry struct {
	name string
	pos  Position
}

// ManagedInfo says what the managed policy in force holds, for doctor,
// check and the authorizer chain.
type ManagedInfo struct {
	Path  string // the file, as read
	Rules int    // permission rules and protectedWrites
	// Forbid lists what it forbids, in the file's order (ForbidYolo …).
	Forbid   []string
	forbidAt map[string]Position
	// AuthorizerChain and Authorizers are the managed policy's own
	// reviewers: they answer its asks before a person, and nothing else.
	AuthorizerChain []string
	Authorizers     map[string]AuthorizerSpec
}

// Forbids reports whether the managed policy forbids what (ForbidYolo,
// ForbidAudit, ForbidProjectTrust), and where it says so.
func (m *ManagedInfo) Forbids(what string) (Position, bool) {
	if m == nil {
		return Position{}, false
	}
	pos, ok := m.forbidAt[what]
	return pos, ok
}

// Managed returns the managed policy in force, or nil when there is none.
func (p *Policy) Managed() *ManagedInfo { return p.mgd }

// ReadManaged reads the managed policy at path. A missing file is no
// managed policy (nil, nil). A file that exists must be a regular file
// (not a symbolic link) owned by root and writable by nobody else, in a
// directory owned by root and writable by nobody else, beneath
// directories no one but root can rename it out of; anything else, or a
// file that cannot be read, is an error naming the file: permwrap refuses
// to run rather than ignore a policy an administrator meant to enforce.
func ReadManaged(path string) (*File, error) {
	if path == "" {
		return nil, nil
	}
	refuse := func(format string, args ...any) error {
		return &ConfigError{Pos: Position{File: path}, Msg: "managed policy: " + fmt.Sprintf(format, args...) + "; permwrap refuses to run until an administrator fixes it"}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, syscall.ELOOP):
		return nil, refuse("it is a symbolic link; it must be a regular file owned by root")
	case err != nil:
		return nil, refuse("cannot be opened: %v", unwrapPathError(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, refuse("cannot be examined: %v", unwrapPathError(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, refuse("it is not a regular file (%s)", fi.Mode().Type())
	}
	if why := unsafeOwner(fi, false); why != "" {
		return nil, refuse("the file %s", why)
	}
	if why := unsafeDirs(filepath.Dir(path)); why != "" {
		return nil, refuse("%s", why)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return nil, refuse("cannot be read: %v", unwrapPathError(err))
	}
	return &File{Name: path, Data: data}, nil
}

// unsafeOwner says why fi is not safe from everyone but root, or "". A
// directory with the sticky bit may be writable by others when beneath
// (sticky): nobody else can then rename or remove what root owns there.
func unsafeOwner(fi fs.FileInfo, sticky bool) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "cannot be examined (no owner)"
	}
	if st.Uid != 0 {
		return fmt.Sprintf("is owned by uid %d, not root (uid 0)", st.Uid)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 && !(sticky && fi.Mode()&fs.ModeSticky != 0) {
		who := "group and others"
		switch {
		case perm&0o020 == 0:
			who = "others"
		case perm&0o002 == 0:
			who = "its group"
		}
		return fmt.Sprintf("is writable by %s (mode %04o)", who, perm)
	}
	return ""
}

// unsafeDirs checks the directory that holds the managed policy (owned by
// root, writable by nobody else) and every directory above it (owned by
// root, writable by nobody else unless sticky), as spelled and as the
// symbolic links resolve.
func unsafeDirs(dir string) string {
	check := func(d string) string {
		for i := 0; ; i++ {
			fi, err := os.Lstat(d)
			if err != nil {
				return fmt.Sprintf("its directory %s cannot be examined: %v", d, unwrapPathError(err))
			}
			// A symbolic link cannot be changed, only replaced in the
			// directory above, which the next step checks.
			if fi.Mode()&fs.ModeSymlink == 0 {
				if why := unsafeOwner(fi, i > 0); why != "" {
					return fmt.Sprintf("the directory %s %s", d, why)
				}
			}
			if d == "/" || d == "." {
				return ""
			}
			d = filepath.Dir(d)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Sprintf("its directory %s: %v", dir, err)
	}
	if why := check(abs); why != "" {
		return why
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Sprintf("its directory %s cannot be resolved: %v", abs, unwrapPathError(err))
	}
	if real != abs {
		return check(real)
	}
	return ""
}

// managedProtect is what the tree may never write: the managed policy's
// directory and everything in it (the file itself when it stands in /).
func managedProtect(path string) []Protected {
	if path == "" {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	const why = "the managed policy is read-only to what permwrap runs"
	if dir := filepath.Dir(abs); dir != "/" {
		return []Protected{{Path: dir, Tree: true, Reason: why}}
	}
	return []Protected{{Path: abs, Reason: why}}
}

// managedKey reads one top-level key of the managed policy.
func (p *parser) managedKey(m topKey, fc *fileConfig) {
	switch m.key {
	case "permission":
		p.permission(m.val, kindManaged, fc)
	case "protectedWrites":
		p.protectedWrites(m, kindManaged, fc)
	case "forbid":
		p.forbid(m, fc)
	case "authorizerChain":
		fc.set[m.key] = true
		p.authorizerChain(m, kindManaged, fc)
	case "authorizers":
		fc.set[m.key] = true
		p.authorizers(m, kindManaged, fc)
	case "events":
		fc.set[m.key] = true
		p.eventsSettings(m, kindManaged, fc)
		if o := fc.settings.Events.OTLP; o != nil {
			o.Fixed = true // whoever runs permwrap cannot send the records elsewhere
		}
	default:
		p.errorf(m.off, "key %q is not allowed in the managed policy (want permission, protectedWrites, forbid, authorizerChain, authorizers, events)", m.key)
	}
}

func (p *parser) forbid(m topKey, fc *fileConfig) {
	for _, e := range p.array(m.val, m.key) {
		s, ok := p.str(&e, "a forbid entry")
		if !ok {
			continue
		}
		known := false
		for _, n := range forbidNames {
			known = known || n == s
		}
		if !known {
			p.errorf(e.StartOffset, "forbid: unknown %q (want %s)", s, strings.Join(forbidNames, ", "))
			continue
		}
		fc.forbid = append(fc.forbid, forbidEntry{name: s, pos: p.pos(e.StartOffset)})
	}
}

// addManaged compiles the managed policy into the layer above every
// other, after applySettings (yolo known) and before layerRules (project
// trust). It refuses what the policy forbids.
func (p *Policy) addManaged(cfg Config, mfc *fileConfig) error {
	if mfc == nil {
		return nil
	}
	mi := managedInfo(cfg.Managed.Name, mfc)
	var errs []error
	if pos, ok := mi.Forbids(ForbidYolo); ok && p.yolo {
		from := `"yoloMode": true in the policy`
		if cfg.Yolo {
			from = "--yolo"
		}
		errs = append(errs, &ConfigError{Pos: pos, Msg: fmt.Sprintf("the managed policy forbids yolo mode, which %s asks for: refused (run without it)", from)})
	}
	if pos, ok := mi.Forbids(ForbidAudit); ok && p.audit {
		errs = append(errs, &ConfigError{Pos: pos, Msg: "the managed policy forbids audit mode: --audit refused (run without it)"})
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	var rules [numSurfaces][]*compiledRule
	for i, rr := range mfc.rules {
		rules[rr.rule.Surface] = append(rules[rr.rule.Surface], newCompiled(rr, OriginManaged, i))
	}
	for s := range rules {
		p.managed[s] = newRuleList(rules[s])
	}
	p.mgd = mi
	// Its event sinks come last: over every other layer's, and none of
	// theirs can turn them off.
	p.settings.Events = p.settings.Events.Add(mfc.settings.Events)
	p.sources = append(p.sources, cfg.Managed.Name+" (managed)")
	return nil
}

func managedInfo(name string, mfc *fileConfig) *ManagedInfo {
	mi := &ManagedInfo{Path: name, Rules: len(mfc.rules) + len(mfc.protected), forbidAt: map[string]Position{},
		Authorizers: map[string]AuthorizerSpec{}}
	for _, f := range mfc.forbid {
		if _, dup := mi.forbidAt[f.name]; !dup {
			mi.Forbid = append(mi.Forbid, f.name)
			mi.forbidAt[f.name] = f.pos
		}
	}
	if mfc.set["authorizerChain"] {
		mi.AuthorizerChain = mfc.settings.AuthorizerChain
	}
	if mfc.set["authorizers"] {
		mi.Authorizers = mfc.settings.Authorizers
	}
	return mi
}

// ParseManaged parses a managed policy (ReadManaged) on its own, for
// `permwrap doctor`: what it holds, or every error in it.
func ParseManaged(f *File, env Env) (*ManagedInfo, []Warning, error) {
	fc, err := parseConfig(f.Name, f.Data, kindManaged, env)
	if err != nil {
		return nil, nil, err
	}
	return managedInfo(f.Name, fc), fc.warns, nil
}

// addManagedProtected adds the managed policy's protectedWrites to the
// hard guards' (after addHardGuards): writes only a person may allow.
func (p *Policy) addManagedProtected(mfc *fileConfig) {
	if mfc == nil || len(mfc.protected) == 0 {
		return
	}
	var prot []*compiledRule
	p.protected.each(func(r *compiledRule) { prot = append(prot, r) })
	for i, rr := range mfc.protected {
		prot = append(prot, newCompiled(rr, OriginManaged, len(prot)+i))
	}
	p.protected = newRuleList(prot)
}

// forbidsTrust reports whether the managed policy forbids project trust.
func (p *Policy) forbidsTrust() bool {
	_, ok := p.mgd.Forbids(ForbidProjectTrust)
	return ok
}

// evaluateManaged is evaluate with a managed policy in force: its deny is
// final; its ask stands unless what lies beneath denies (or asks only a
// person), whatever yolo, audit, a session approval or any other layer
// would allow; its allow means only "not blocked here".
func (p *Policy) evaluateManaged(c Check, mode contentMode) evaluation {
	r := p.managed[c.Surface].find(c.Value)
	if r != nil && r.Action == Deny {
		return p.ruleResult(c, r, Deny, LayerManaged)
	}
	e := p.evaluateBelow(c, mode)
	if r == nil || r.Action != Ask || e.Action == Deny || e.HumanOnly && !e.Managed {
		return e
	}
	content := e.content
	e = p.ruleResult(c, r, Ask, LayerManaged)
	e.HumanOnly, e.Managed, e.content = true, true, content
	return e
}

// ManagedTrustForbidden is the reason `permwrap trust` gives when the
// managed policy forbids project trust, or "" when it does not.
func ManagedTrustForbidden(path string) (string, error) {
	if path == "" {
		path = ManagedPolicyPath
	}
	f, err := ReadManaged(path)
	if err != nil {
		return "", err
	}
	return trustForbiddenBy(f, FillEnv(Env{}))
}

// trustForbiddenBy is ManagedTrustForbidden for a managed policy read.
func trustForbiddenBy(f *File, env Env) (string, error) {
	if f == nil {
		return "", nil
	}
	fc, err := parseConfig(f.Name, f.Data, kindManaged, env)
	if err != nil {
		return "", err
	}
	for _, e := range fc.forbid {
		if e.name == ForbidProjectTrust {
			return fmt.Sprintf("the managed policy forbids project trust (%s)", e.pos), nil
		}
	}
	return "", nil
}
