package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// managedFile writes a managed policy into a fresh root-owned directory
// (mode 0755, file 0644) and returns its path.
func managedFile(t *testing.T, content string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "etc-permwrap")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "managed.jsonc")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the managed policy must be owned by root: needs to run as root")
	}
}

// managedRepo is a workspace in a git repository with a project policy,
// a user policy, a scope, and a managed policy, all in temporary
// directories; ws is the workspace.
type managedRepo struct {
	dir, ws, cfgDir, scope, managed string
}

func newManagedRepo(t *testing.T, managed, user, project, scope string) managedRepo {
	t.Helper()
	needRoot(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	r := managedRepo{dir: dir, ws: filepath.Join(dir, "repo"), cfgDir: filepath.Join(dir, "config"), scope: filepath.Join(dir, "scope.jsonc")}
	for name, content := range map[string]string{
		"repo/.git/HEAD":              "ref: refs/heads/main\n",
		"repo/.permwrap/policy.jsonc": project,
		"config/policy.jsonc":         user,
		"scope.jsonc":                 scope,
	} {
		if content == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(r.cfgDir, 0o755)
	if project != "" {
		// Trusted: its allows would apply.
		store, err := ReadTrust(r.cfgDir)
		if err != nil {
			t.Fatal(err)
		}
		store.Trust(filepath.Join(r.ws, ProjectDirName, ProjectPolicyFileName), []byte(project), time.Now())
		if err := WriteTrust(r.cfgDir, store); err != nil {
			t.Fatal(err)
		}
	}
	r.managed = managedFile(t, managed)
	return r
}

func (r managedRepo) load(t *testing.T, opts LoadOptions) (*Policy, []Warning, error) {
	t.Helper()
	opts.ConfigDir = r.cfgDir
	opts.ManagedPath = r.managed
	opts.Env = Env{Home: "/home/u", Workspace: r.ws, TmpDir: "/tmp/u"}
	return Load(opts)
}

func (r managedRepo) mustLoad(t *testing.T, opts LoadOptions) *Policy {
	t.Helper()
	p, _, err := r.load(t, opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

// TestManagedDenyHolds: a managed deny is final against every layer
// that could loosen it: the user's policy, a trusted project policy, a
// --policy scope, yolo, audit and a session approval.
func TestManagedDenyHolds(t *testing.T) {
	managed := `{
  // the team's rules
  "permission": {"write": {"${WORKSPACE}/locked/**": "deny", "${WORKSPACE}/b/keep/**": "deny"}, "read": {"~/.ssh/**": "deny"}}
}`
	allow := `{"permission": {"write": {"${WORKSPACE}/locked/**": "allow"}, "read": {"~/.ssh/**": "allow"}}}`
	r := newManagedRepo(t, managed, allow, allow, allow)
	locked := filepath.Join(r.ws, "locked", "f")
	for _, c := range []struct {
		name string
		opts LoadOptions
	}{
		{"user, trusted project", LoadOptions{}},
		{"scope", LoadOptions{Scopes: []string{r.scope}}},
		{"yolo", LoadOptions{Yolo: true, Scopes: []string{r.scope}}},
		{"audit", LoadOptions{Audit: true, Scopes: []string{r.scope}}},
	} {
		p := r.mustLoad(t, c.opts)
		if _, err := p.AddSessionRule(SurfaceWrite, r.ws+"/**"); err != nil {
			t.Fatal(err)
		}
		for _, a := range []struct {
			acc  Access
			path string
		}{{AccessWrite, locked}, {AccessRead, "/home/u/.ssh/id_rsa"}} {
			res := p.Audit(p.DecidePath(a.acc, a.path))
			if res.Action != Deny || res.Layer != LayerManaged || res.Rule.Origin != OriginManaged {
				t.Errorf("%s: %s %s = %v (layer %v), want a managed deny", c.name, a.acc, a.path, res, res.Layer)
			}
			if !strings.HasPrefix(res.Rule.Pos.String(), r.managed+":3:") {
				t.Errorf("%s: position %q, want the managed file's line 3", c.name, res.Rule.Pos)
			}
		}
		// Without the managed rule the same layers allow: the test
		// would notice a managed policy that did nothing.
		if res := p.DecidePath(AccessWrite, filepath.Join(r.ws, "open", "f")); res.Action != Allow {
			t.Errorf("%s: an unmanaged workspace write = %v", c.name, res)
		}
	}
	// A move into the locked directory and a write floor see it too.
	p := r.mustLoad(t, LoadOptions{Yolo: true})
	mv := p.DecideMove(Move{Kind: MoveRename, From: filepath.Join(r.ws, "a"), To: filepath.Join(r.ws, "locked"), FromDir: true})
	if mv.Action != Deny || mv.Layer != LayerManaged {
		t.Errorf("moving a directory onto the locked one = %v, want the managed deny", mv)
	}
	mv = p.DecideMove(Move{Kind: MoveRename, From: filepath.Join(r.ws, "locked"), To: filepath.Join(r.ws, "c"), FromDir: true})
	if mv.Action != Deny {
		t.Errorf("moving the locked directory away = %v, want deny", mv)
	}
	// Only the search beneath the names finds this one: b/keep/… would
	// be written by moving a directory that holds keep/ to b.
	mv = p.DecideMove(Move{Kind: MoveRename, From: filepath.Join(r.ws, "a"), To: filepath.Join(r.ws, "b"), FromDir: true})
	if mv.Action != Deny || mv.Rule.Origin != OriginManaged {
		t.Errorf("moving a directory to b (b/keep/** managed) = %v, want the managed deny", mv)
	}
	ex := p.Explain(Check{SurfaceWrite, locked})
	if s := ex.String(); !strings.Contains(s, r.managed+":3:") || !strings.Contains(s, "managed") {
		t.Errorf("explain does not name the managed file:\n%s", s)
	}
}

// TestManagedAskStays: a managed ask stays an ask, marked for the chain,
// under yolo, audit, a session approval and a user allow; a user deny
// still tightens it; a managed allow does not loosen a user deny.
func TestManagedAskStays(t *testing.T) {
	managed := `{"permission": {
  "bash": {"git push *": "ask"},
  "write": {"${WORKSPACE}/deploy/**": "ask", "${WORKSPACE}/gen/**": "allow", "${WORKSPACE}/deploy/never/**": "allow"}
}}`
	user := `{"permission": {"bash": {"git push *": "allow"}, "write": {"${WORKSPACE}/gen/**": "deny", "${WORKSPACE}/deploy/never/**": "deny"}}}`
	r := newManagedRepo(t, managed, user, "", "")
	for _, opts := range []LoadOptions{{}, {Yolo: true}, {Audit: true}} {
		p := r.mustLoad(t, opts)
		if _, err := p.AddSessionRule(SurfaceBash, "git push *"); err != nil {
			t.Fatal(err)
		}
		if _, err := p.AddSessionRule(SurfaceWrite, r.ws+"/**"); err != nil {
			t.Fatal(err)
		}
		for _, res := range []Result{
			p.Audit(p.EvaluateAny(SurfaceBash, "git push origin main", "/usr/bin/git push origin main")),
			p.Audit(p.DecidePath(AccessWrite, filepath.Join(r.ws, "deploy", "x"))),
		} {
			if res.Action != Ask || !res.Managed || !res.HumanOnly || res.Layer != LayerManaged {
				t.Errorf("yolo=%v audit=%v: %v (layer %v), want a managed ask", opts.Yolo, opts.Audit, res, res.Layer)
			}
		}
		if res := p.DecidePath(AccessWrite, filepath.Join(r.ws, "gen", "x")); res.Action != Deny {
			t.Errorf("a managed allow loosened a user deny: %v", res)
		}
		if res := p.DecidePath(AccessWrite, filepath.Join(r.ws, "deploy", "never", "x")); res.Action != Deny {
			t.Errorf("a user deny under a managed ask: %v, want deny", res)
		}
	}
	// Composed with a hard-guard ask the stricter (a person only) wins.
	a := Result{Action: Ask, HumanOnly: true, Managed: true}
	h := Result{Action: Ask, HumanOnly: true}
	if !h.Stricter(a) || a.Stricter(h) || !a.Stricter(Result{Action: Ask}) {
		t.Error("a human-only ask must be stricter than a managed one, which is stricter than a plain ask")
	}
}

// TestManagedFloor: a managed catch-all write deny narrows the Landlock
// floor as a hard guard's does.
func TestManagedFloor(t *testing.T) {
	r := newManagedRepo(t, `{"permission": {"write": {"/**": "deny"}}}`, `{"extends": "none", "permission": {"*": "allow"}}`, "", "")
	p := r.mustLoad(t, LoadOptions{})
	if f := p.LandlockFloor(); f.WriteAnywhere {
		t.Errorf("floor %+v: writes everywhere under a managed deny of every write", f)
	}
	if res := p.DecidePath(AccessWrite, "/srv/x"); res.Action != Deny || res.Layer != LayerManaged {
		t.Errorf("write /srv/x = %v", res)
	}
}

// TestManagedForbid: what "forbid" names is refused with the managed
// file's position; projectTrust makes trusted projects tighten-only.
func TestManagedForbid(t *testing.T) {
	managed := `{
  "forbid": ["yolo",
             "audit", "projectTrust"]
}`
	project := `{"permission": {"write": {"/home/u/shared/**": "allow"}}}`
	r := newManagedRepo(t, managed, `{"yoloMode": false}`, project, "")
	for _, c := range []struct {
		opts LoadOptions
		want string
	}{
		{LoadOptions{Yolo: true}, r.managed + ":2:14: the managed policy forbids yolo mode, which --yolo asks for"},
		{LoadOptions{Audit: true}, r.managed + ":3:14: the managed policy forbids audit mode"},
	} {
		_, _, err := r.load(t, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.opts, err, c.want)
		}
	}
	os.WriteFile(filepath.Join(r.cfgDir, PolicyFileName), []byte(`{"yoloMode": true}`), 0o644)
	if _, _, err := r.load(t, LoadOptions{}); err == nil || !strings.Contains(err.Error(), `"yoloMode": true`) {
		t.Errorf("yoloMode in policy.jsonc: %v", err)
	}
	os.WriteFile(filepath.Join(r.cfgDir, PolicyFileName), []byte(`{}`), 0o644)
	p, warns, err := r.load(t, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res := p.DecidePath(AccessWrite, "/home/u/shared/x"); res.Action == Allow {
		t.Errorf("a trusted project loosened under forbid projectTrust: %v", res)
	}
	if len(warns) == 0 || !strings.Contains(warns[0].String(), "forbids project trust ("+r.managed+":3:23)") {
		t.Errorf("warnings: %v", warns)
	}
	if why, err := ManagedTrustForbidden(r.managed); err != nil || !strings.Contains(why, "forbids project trust") {
		t.Errorf("ManagedTrustForbidden = %q, %v", why, err)
	}
	if m := p.Managed(); m == nil || strings.Join(m.Forbid, ",") != "yolo,audit,projectTrust" || m.Path != r.managed {
		t.Errorf("Managed() = %+v", m)
	}
	// The same project, trusted, loosens without the forbid.
	os.WriteFile(r.managed, []byte(`{}`), 0o644)
	p = r.mustLoad(t, LoadOptions{Yolo: true, Audit: true})
	if res := p.DecidePath(AccessWrite, "/home/u/shared/x"); res.Action != Allow {
		t.Errorf("without the forbid: %v", res)
	}
}

// TestManagedSyntax: config errors in the managed policy carry file,
// line and column.
func TestManagedSyntax(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`{"forbid": ["yolo", "trust"]}`, `:1:21: forbid: unknown "trust" (want yolo, audit, projectTrust)`},
		{"{\n  \"yoloMode\": true}", `:2:3: key "yoloMode" is not allowed in the managed policy (want permission, protectedWrites, forbid, authorizerChain, authorizers, events)`},
		{`{"permission": {"*": "allow"}}`, `:1:17: a universal fallback "*" is not allowed in the managed policy`},
		{`{"permission": {"read": {"/x/**": {"action": "deny", "content": "secret"}}}}`, `"content" is not allowed in the managed policy`},
		{`{"permission": {"write": {"/x": "allow"}}`, `:1:42: syntax error`},
		{``, `empty file`},
	} {
		needRoot(t)
		path := managedFile(t, c.src)
		_, _, err := ReadConfig(LoadOptions{ManagedPath: path, ConfigDir: t.TempDir(), NoProject: true})
		if err == nil {
			cfg, _, _ := ReadConfig(LoadOptions{ManagedPath: path, ConfigDir: t.TempDir(), NoProject: true})
			_, _, err = Compile(cfg)
		}
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.src, err, c.want)
		}
	}
}

// TestManagedOwnership: a managed policy that is not root's alone is
// refused, never ignored; a missing one is none.
func TestManagedOwnership(t *testing.T) {
	needRoot(t)
	if f, err := ReadManaged(filepath.Join(t.TempDir(), "none.jsonc")); f != nil || err != nil {
		t.Fatalf("missing file: %v, %v", f, err)
	}
	ok := managedFile(t, `{}`)
	if f, err := ReadManaged(ok); f == nil || err != nil {
		t.Fatalf("a root-owned 0644 file: %v", err)
	}
	for _, c := range []struct {
		name  string
		setup func(path string) error
		want  string
	}{
		{"writable by others", func(p string) error { return os.Chmod(p, 0o646) }, "the file is writable by others (mode 0646)"},
		{"writable by its group", func(p string) error { return os.Chmod(p, 0o664) }, "the file is writable by its group (mode 0664)"},
		{"owned by uid 1000", func(p string) error { return os.Chown(p, 1000, 0) }, "the file is owned by uid 1000, not root"},
		{"directory writable by others", func(p string) error { return os.Chmod(filepath.Dir(p), 0o777) }, "is writable by group and others (mode 0777)"},
		{"directory owned by uid 1000", func(p string) error { return os.Chown(filepath.Dir(p), 1000, 1000) }, "is owned by uid 1000"},
		{"a symbolic link", func(p string) error {
			target := p + ".real"
			if err := os.Rename(p, target); err != nil {
				return err
			}
			return os.Symlink(target, p)
		}, "it is a symbolic link"},
		{"a directory", func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Mkdir(p, 0o755)
		}, "it is not a regular file"},
	} {
		path := managedFile(t, `{"forbid": ["yolo"]}`)
		if err := c.setup(path); err != nil {
			t.Fatal(err)
		}
		_, err := ReadManaged(path)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Pos.File != path || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "refuses to run") {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		// Load refuses too: the forbid it holds is not silently dropped.
		if _, _, err := Load(LoadOptions{ManagedPath: path, ConfigDir: t.TempDir(), NoProject: true, Yolo: true}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Load: %v", c.name, err)
		}
	}
}

// TestManagedIsProtected: the tree can never write the managed policy or
// anything in its directory, whatever the policy allows.
func TestManagedIsProtected(t *testing.T) {
	needRoot(t)
	path := managedFile(t, `{}`)
	dir := filepath.Dir(path)
	p, _, err := Load(LoadOptions{ManagedPath: path, ConfigDir: t.TempDir(), NoProject: true, Yolo: true,
		Env: Env{Home: "/home/u", Workspace: dir, TmpDir: "/tmp/u"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{path, filepath.Join(dir, "other.jsonc"), dir} {
		if res := p.DecidePath(AccessWrite, w); res.Action != Deny {
			t.Errorf("write %s = %v, want deny", w, res)
		}
	}
	// Even with no managed policy the place stays out of reach: a tree
	// running as root must not create one.
	none := filepath.Join(t.TempDir(), "d", "managed.jsonc")
	p, _, err = Load(LoadOptions{ManagedPath: none, ConfigDir: t.TempDir(), NoProject: true, Yolo: true})
	if err != nil {
		t.Fatal(err)
	}
	if res := p.DecidePath(AccessWrite, none); res.Action != Deny {
		t.Errorf("creating the missing managed policy = %v, want deny", res)
	}
}

// TestManagedEvents: the managed policy's event sinks are in force over
// the user's, which cannot turn them off, and its OTLP sink is fixed
// (the OTEL_* variables of whoever runs permwrap do not move it).
func TestManagedEvents(t *testing.T) {
	r := newManagedRepo(t,
		`{"events": {"otlp": {"endpoint": "https://collector.example:4318"}, "journald": true}}`,
		`{"events": {"journald": false, "otlp": {"endpoint": "http://127.0.0.1:9"}, "syslog": true}}`, "", "")
	ev := r.mustLoad(t, LoadOptions{}).Settings().Events
	if !ev.Journald {
		t.Error("the managed journald sink was turned off by the user's policy")
	}
	if ev.OTLP == nil || ev.OTLP.Endpoint != "https://collector.example:4318" || !ev.OTLP.Fixed {
		t.Errorf("OTLP sink %+v, want the managed one, fixed", ev.OTLP)
	}
	if ev.Syslog == nil {
		t.Error("the user's own syslog sink was dropped")
	}
	bad := newManagedRepo(t, `{"events": {"otlp": {"endpoint": 3}}}`, "", "", "")
	if _, _, err := bad.load(t, LoadOptions{}); err == nil || !strings.Contains(err.Error(), ":1:") {
		t.Errorf("a bad managed events value: %v, want an error with its position", err)
	}
}
