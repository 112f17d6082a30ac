package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permwrap/permwrap/engine/shell"
)

// loadDir writes files (relative name → content) under a fresh directory
// and loads with opts, ConfigDir and Env.Workspace defaulting to
// <dir>/config and <dir>/ws.
func loadDir(t *testing.T, files map[string]string, opts LoadOptions) (*Policy, []Warning, string) {
	t.Helper()
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(dir, "ws"), 0o755)
	if opts.ConfigDir == "" {
		opts.ConfigDir = filepath.Join(dir, "config")
	}
	if opts.Env.Workspace == "" {
		// Not under /tmp, which the profiles let everyone write.
		opts.Env = Env{Home: "/home/u", Workspace: "/home/u/src/proj", TmpDir: "/tmp/u"}
	}
	p, w, err := Load(opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p, w, dir
}

func TestLayeringOnTheDefault(t *testing.T) {
	p, warns, dir := loadDir(t, map[string]string{
		"config/policy.jsonc": `{"permission": {"write": {"~/notes/**": "allow"}, "read": {"*.pem": "allow"}}, "askTimeout": "90s"}`,
	}, LoadOptions{})
	if len(warns) != 0 {
		t.Fatalf("warnings: %v", warns)
	}
	home := "/home/u"
	// The tweak applies …
	if r := p.DecidePath(AccessWrite, home+"/notes/a.md"); r.Action != Allow || r.Rule.Origin != OriginGlobal {
		t.Fatalf("tweak: %v", r)
	}
	// … the default still does, under it …
	if r := p.DecidePath(AccessRead, home+"/.ssh/id_rsa"); r.Action != Ask || r.Rule.Origin != OriginDefault || r.Rule.Pos.File != DefaultPolicyName {
		t.Fatalf("default rule: %v", r)
	}
	if r := p.DecidePath(AccessWrite, "/home/u/src/proj/main.go"); r.Action != Allow || r.Rule.Origin != OriginDefault {
		t.Fatalf("default workspace allow: %v", r)
	}
	// … and the same pattern overrides the default's (later wins ties).
	if r := p.DecidePath(AccessRead, "/srv/cert.pem"); r.Action != Allow || r.Rule.Origin != OriginGlobal {
		t.Fatalf("override: %v", r)
	}
	// Settings layer key by key.
	s := p.Settings()
	if s.AskTimeout != 90*time.Second || s.DenialNotice != "stderr" {
		t.Fatalf("settings: %+v", s)
	}
	if !strings.Contains(p.Summary(), "from default.jsonc, "+filepath.Join(dir, "config", "policy.jsonc")) {
		t.Fatalf("summary: %s", p.Summary())
	}
}

func TestExtendsNoneAndProfiles(t *testing.T) {
	p, _, _ := loadDir(t, map[string]string{
		"config/policy.jsonc": `{"extends": "none", "permission": {"write": {"~/notes/**": "allow"}}}`,
	}, LoadOptions{})
	// Nothing else: a read matches no rule, the builtin asks.
	if r := p.DecidePath(AccessRead, "/etc/hostname"); r.Action != Ask || r.Layer != LayerBuiltin {
		t.Fatalf("extends none: %v", r)
	}
	if msg := p.EveryExecAsks(); !strings.Contains(msg, "every program start asks") || !strings.Contains(msg, `drop "extends": "none"`) {
		t.Fatalf("EveryExecAsks = %q", msg)
	}
	// "extends": "strict" builds on the strict profile.
	p, _, _ = loadDir(t, map[string]string{
		"config/policy.jsonc": `{"extends": "strict", "permission": {"write": {"~/notes/**": "allow"}}}`,
	}, LoadOptions{})
	if r := p.DecidePath(AccessRead, "/home/u/.ssh/id_rsa"); r.Action != Deny || r.Rule.Origin != OriginProfile || r.Rule.Pos.File != "strict.jsonc" {
		t.Fatalf("strict: %v", r)
	}
	if r := p.DecidePath(AccessWrite, "/home/u/notes/x"); r.Action != Allow {
		t.Fatalf("tweak on strict: %v", r)
	}
	if p.EveryExecAsks() != "" {
		t.Fatal("strict lets programs run")
	}

	// --profile replaces the base whatever the file says.
	p, _, _ = loadDir(t, map[string]string{
		"config/policy.jsonc": `{"extends": "strict", "permission": {}}`,
	}, LoadOptions{Profile: "read-only"})
	if r := p.DecidePath(AccessWrite, "/home/u/src/proj/x.go"); r.Action != Deny || r.Rule.Pos.File != "read-only.jsonc" {
		t.Fatalf("--profile read-only: %v", r)
	}
	// With no policy.jsonc at all, --profile is the whole policy.
	p, _, _ = loadDir(t, nil, LoadOptions{Profile: "strict"})
	if r := p.DecidePath(AccessWrite, "/etc/passwd"); r.Action != Deny {
		t.Fatalf("strict alone: %v", r)
	}
	if _, _, err := Load(LoadOptions{ConfigDir: t.TempDir(), Profile: "strcit", Env: testEnv}); err == nil || !strings.Contains(err.Error(), `--profile "strcit": no such profile (want default, read-only, strict or "none")`) {
		t.Fatalf("unknown profile: %v", err)
	}
	// An unknown "extends" is a positioned error.
	_, _, err := CheckFile("p.jsonc", []byte("{\n  \"extends\": \"strcit\"\n}"), FileGlobal, testEnv)
	if err == nil || !strings.Contains(err.Error(), `p.jsonc:2:14: extends: unknown profile "strcit"`) {
		t.Fatalf("unknown extends: %v", err)
	}
	if _, _, err := CheckFile("s.jsonc", []byte(`{"extends": "none"}`), FileScope, testEnv); err == nil {
		t.Fatal("a scope may not say extends")
	}
}

// TestProfilesKeepTheirPromises holds each profile to what docs/policy.md
// says of it, against every secret the default profile asks about (so a
// secret added to the default must be added to strict too).
func TestProfilesKeepTheirPromises(t *testing.T) {
	env := testEnv
	prof := func(name string) *Policy {
		p, _, err := Compile(Config{Profile: name, Env: env})
		if err != nil {
			t.Fatalf("profile %s: %v", name, err)
		}
		return p
	}
	def, strict, ro := prof(DefaultProfile), prof("strict"), prof("read-only")
	for _, r := range policyRules(def) {
		if r.Surface != SurfaceRead || r.Action != Ask {
			continue
		}
		v := sampleFor(t, r.Pattern, env)
		if got := def.DecidePath(AccessRead, v); got.Action != Ask {
			t.Fatalf("sample %s for %s: default says %v", v, r.Pattern, got)
		}
		if got := strict.DecidePath(AccessRead, v); got.Action != Deny {
			t.Errorf("strict: read %s (default asks, %s) → %v, want deny", v, r.Pattern, got)
		}
		if got := ro.DecidePath(AccessRead, v); got.Action == Allow {
			t.Errorf("read-only: read %s (default asks, %s) → allow", v, r.Pattern)
		}
	}
	for _, c := range []struct {
		p    *Policy
		name string
		path string
		want Action
	}{
		{strict, "strict", env.Workspace + "/src/main.go", Allow},
		{strict, "strict", env.TmpDir + "/x", Allow},
		{strict, "strict", env.Home + "/.cache/go-build/x", Deny},
		{strict, "strict", env.Home + "/.bashrc", Deny},
		{strict, "strict", env.Workspace + "/.git/hooks/pre-commit", Ask},
		{strict, "strict", "/dev/null", Allow},
		{ro, "read-only", env.Workspace + "/src/main.go", Deny},
		{ro, "read-only", "/tmp/x", Allow},
		{ro, "read-only", env.Home + "/.claude/settings.json", Deny},
		{ro, "read-only", env.Home + "/.claude/projects/x.jsonl", Allow},
	} {
		if got := c.p.DecidePath(AccessWrite, c.path); got.Action != c.want {
			t.Errorf("%s: write %s → %v, want %v", c.name, c.path, got, c.want)
		}
	}
	if r := strict.Evaluate(Check{SurfaceBash, "git push origin main"}); r.Action != Ask {
		t.Errorf("strict: git push → %v", r)
	}
	if r := ro.Evaluate(Check{SurfaceBash, "git push origin main"}); r.Action != Deny {
		t.Errorf("read-only: git push → %v", r)
	}
	for _, n := range ProfileNames() {
		if prof(n).EveryExecAsks() != "" {
			t.Errorf("profile %s asks about every program", n)
		}
	}
	// The network surface, once permwrap has one, asks in strict.
	if _, ok := ParseSurface("net"); ok {
		if r := strict.Evaluate(Check{Surface: mustSurface("net"), Value: "example.com:443"}); r.Action != Ask {
			t.Errorf(`strict: net example.com:443 → %v, want ask (add "net": {"*": "ask"} to profiles/strict.jsonc)`, r)
		}
	}
}

func mustSurface(name string) Surface { s, _ := ParseSurface(name); return s }

// sampleFor makes a path a pattern matches: wildcards become "x".
func sampleFor(t *testing.T, pattern string, env Env) string {
	t.Helper()
	exp, err := ExpandPathPattern(pattern, env)
	if err != nil {
		t.Fatal(err)
	}
	v := strings.NewReplacer("**", "x", "*", "x", "?", "x", `\`, "").Replace(exp)
	if !strings.HasPrefix(v, "/") {
		v = "/srv/data/" + v
	}
	return v
}

func TestRelativeAndUnmatchablePatterns(t *testing.T) {
	env := Env{Home: "/home/u", Workspace: "/home/u/src/proj", TmpDir: "/tmp"}
	for _, c := range []struct{ pat, want string }{
		{"./secrets/**", `/home/u/src/proj/secrets/**`},
		{"secrets/**", `/home/u/src/proj/secrets/**`},
		{"src/*.go", `/home/u/src/proj/src/*.go`},
		{"../sibling/**", `/home/u/src/sibling/**`},
		{"./../../x", `/home/u/x`},
		{"build/", `/home/u/src/proj/**/build/**`},
		{"./build/", `/home/u/src/proj/build/**`},
		{".git/", `/home/u/src/proj/**/.git/**`},
		{"/etc/", `/etc/**`},
		{"~/.ssh/", `/home/u/.ssh/**`},
		{".", `/home/u/src/proj`},
		{"*/x", `/home/u/src/proj/*/x`},
		{".env", `.env`},
		{"**/.git/hooks/**", `**/.git/hooks/**`},
		{"${WORKSPACE}/a", `/home/u/src/proj/a`},
	} {
		got, err := ExpandPathPattern(c.pat, env)
		if err != nil || got != c.want {
			t.Errorf("ExpandPathPattern(%q) = %q, %v; want %q", c.pat, got, err, c.want)
		}
	}
	// A workspace whose name holds pattern characters is taken literally.
	weird := Env{Home: "/h", Workspace: "/w/a[1]*", TmpDir: "/tmp"}
	p, _, err := Compile(Config{Env: weird, Global: &File{Name: "p.jsonc", Data: []byte(`{"permission": {"write": {"${WORKSPACE}/**": "allow", "x/y": "deny"}}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Evaluate(Check{SurfaceWrite, "/w/a[1]*/f"}); r.Action != Allow {
		t.Errorf("literal workspace: %v", r)
	}
	if r := p.Evaluate(Check{SurfaceWrite, "/w/a1x/f"}); r.Action == Allow {
		t.Errorf("workspace name read as a pattern: %v", r)
	}
	if r := p.Evaluate(Check{SurfaceWrite, "/w/a[1]*/x/y"}); r.Action != Deny {
		t.Errorf("exact relative pattern under a literal workspace: %v", r)
	}

	src := "{\"permission\": {\n" +
		"\"read\": {\"/etc/shadow \": \"deny\", \"/a//b\": \"deny\", \"/a/../b\": \"deny\", \"/a/./b\": \"deny\"},\n" +
		"\"bash\": {\" git push *\": \"ask\"}\n}}"
	_, warns, err := CheckFile("p.jsonc", []byte(src), FileGlobal, env)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`p.jsonc:2:10: pattern "/etc/shadow " has leading or trailing spaces, which are part of the path it matches (did you mean "/etc/shadow"?)`,
		`p.jsonc:2:34: pattern "/a//b" can never match: it holds "//"`,
		`p.jsonc:2:51: pattern "/a/../b" can never match: it holds a ".." component`,
		`p.jsonc:2:70: pattern "/a/./b" can never match: it holds a "." component`,
		`p.jsonc:3:10: pattern " git push *" has leading or trailing spaces; no command line does`,
	}
	if len(warns) != len(want) {
		t.Fatalf("warnings: %v", warns)
	}
	for i, w := range want {
		if !strings.HasPrefix(warns[i].String(), w) {
			t.Errorf("warning %d = %q, want prefix %q", i, warns[i], w)
		}
	}
	for _, c := range []struct{ src, want string }{
		{`{"permission": {"read": {"~root/.ssh/**": "deny"}}}`, `pattern "~root/.ssh/**": ~root: only ~ (your home directory) is expanded; write the absolute path`},
		{`{"permission": {"bash": {"git push:*": "ask"}}}`, `pattern "git push:*": ":*" is Claude Code's prefix syntax, which matches nothing here: write "git push *"`},
	} {
		if _, _, err := CheckFile("p.jsonc", []byte(c.src), FileGlobal, env); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.src, err, c.want)
		}
	}
}

func TestProjectPolicyTrust(t *testing.T) {
	files := map[string]string{
		"repo/.git/HEAD": "ref: refs/heads/main\n",
		// At the repository root: loosens (allow) and tightens (deny, ask).
		"repo/.permwrap/policy.jsonc": `{"permission": {
			"write": {"~/shared/**": "allow", "${WORKSPACE}/dist/**": "deny"},
			"read": {"~/.ssh/known_hosts": "ask", "${WORKSPACE}/**/*.snap": "ask"},
			"bash": {"make deploy *": "ask"}}}`,
		// In the workspace (a subdirectory): only tightens.
		"repo/sub/.permwrap/policy.jsonc": `{"permission": {"write": {"${WORKSPACE}/gen/**": "ask"}}}`,
		"config/policy.jsonc":             `{"permission": {"read": {"~/.ssh/**": "deny"}}}`,
	}
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	cfgDir := filepath.Join(dir, "config")
	ws := filepath.Join(dir, "repo", "sub")
	env := Env{Home: "/home/u", Workspace: ws, TmpDir: "/tmp/u"}
	load := func(opts LoadOptions) (*Policy, []Warning) {
		t.Helper()
		opts.ConfigDir, opts.Env = cfgDir, env
		p, w, err := Load(opts)
		if err != nil {
			t.Fatal(err)
		}
		return p, w
	}
	if got := ProjectChain(ws); len(got) != 2 || got[0] != filepath.Join(dir, "repo") || got[1] != ws {
		t.Fatalf("ProjectChain = %v", got)
	}

	// Untrusted: it tightens, it never loosens.
	p, warns := load(LoadOptions{})
	if len(warns) != 2 || !strings.Contains(warns[0].String(), "repo/.permwrap/policy.jsonc: not trusted: applied as tighten-only") {
		t.Fatalf("warnings: %v", warns)
	}
	home := env.Home
	checks := []struct {
		a    Access
		v    string
		want Action
		lay  Layer
	}{
		{AccessWrite, home + "/shared/x", Ask, LayerPolicy}, // its allow does not loosen the default's ask
		{AccessWrite, ws + "/dist/x", Deny, LayerProject},   // its deny tightens the workspace allow
		{AccessWrite, ws + "/gen/x", Ask, LayerProject},     // the inner file tightens too
		{AccessRead, ws + "/t/a.snap", Ask, LayerProject},   // ask over a read allow
		{AccessRead, home + "/.ssh/known_hosts", Deny, 0},   // a more specific ask does not lift the global deny
		{AccessWrite, ws + "/main.go", Allow, LayerPolicy},  // untouched
		{AccessRead, home + "/.ssh/id_rsa", Deny, LayerPolicy},
	}
	for _, c := range checks {
		r := p.DecidePath(c.a, c.v)
		if r.Action != c.want || (c.lay != 0 && r.Layer != c.lay) {
			t.Errorf("untrusted: %v %s → %v (layer %v), want %v", c.a, c.v, r, r.Layer, c.want)
		}
	}
	if r := p.Evaluate(Check{SurfaceBash, "make deploy prod"}); r.Action != Ask || r.Layer != LayerProject {
		t.Errorf("untrusted bash: %v", r)
	}
	// A person's session approval lifts a project ask, never its deny.
	p.AddSessionRule(SurfaceWrite, ws+"/gen/**")
	p.AddSessionRule(SurfaceWrite, ws+"/dist/**")
	if r := p.DecidePath(AccessWrite, ws+"/gen/x"); r.Action != Allow {
		t.Errorf("session over project ask: %v", r)
	}
	if r := p.DecidePath(AccessWrite, ws+"/dist/x"); r.Action != Deny {
		t.Errorf("session over project deny: %v", r)
	}
	ex := p.ExplainPath(AccessWrite, ws+"/dist/x").String()
	if !strings.Contains(ex, "an untrusted project policy decided") || !strings.Contains(ex, "layer project") {
		t.Errorf("explain: %s", ex)
	}

	// Trusted: the root file's rules merge like a scope and may loosen.
	outer := filepath.Join(dir, "repo", ".permwrap", "policy.jsonc")
	data, _ := os.ReadFile(outer)
	ts, err := ReadTrust(cfgDir)
	if err != nil {
		t.Fatal(err)
	}
	ts.Trust(outer, data, time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC))
	if err := WriteTrust(cfgDir, ts); err != nil {
		t.Fatal(err)
	}
	p, warns = load(LoadOptions{})
	if len(warns) != 1 || !strings.Contains(warns[0].String(), "sub/.permwrap/policy.jsonc: not trusted") {
		t.Fatalf("warnings: %v", warns)
	}
	if r := p.DecidePath(AccessWrite, home+"/shared/x"); r.Action != Allow || r.Rule.Origin != OriginProject {
		t.Errorf("trusted allow: %v", r)
	}
	if r := p.DecidePath(AccessWrite, ws+"/dist/x"); r.Action != Deny || r.Layer != LayerPolicy {
		t.Errorf("trusted deny: %v", r)
	}

	// A changed file needs trusting again.
	os.WriteFile(outer, append(data, ' '), 0o644)
	p, warns = load(LoadOptions{})
	if len(warns) != 2 || !strings.Contains(warns[0].String(), "changed since it was trusted on 2031-05-06: applied as tighten-only") {
		t.Fatalf("warnings: %v", warns)
	}
	if r := p.DecidePath(AccessWrite, home+"/shared/x"); r.Action != Ask {
		t.Errorf("changed file still loosens: %v", r)
	}

	// The tree can write neither the project files (even ones not there
	// yet) nor the trust record, whatever the policy says.
	for _, v := range []string{outer, filepath.Join(ws, ".permwrap", "policy.jsonc"), filepath.Join(ws, ".permwrap"), filepath.Join(cfgDir, TrustFileName), filepath.Join(cfgDir, "policy.jsonc")} {
		r := p.DecidePath(AccessWrite, v)
		if r.Action != Deny || r.Layer != LayerHardGuard || r.Rule.Origin != OriginBuiltin {
			t.Errorf("write %s → %v", v, r)
		}
	}
	// --no-project skips them (but still protects them).
	p, warns = load(LoadOptions{NoProject: true})
	if len(warns) != 0 {
		t.Fatalf("warnings: %v", warns)
	}
	if r := p.DecidePath(AccessWrite, ws+"/dist/x"); r.Action != Allow {
		t.Errorf("--no-project: %v", r)
	}
	if r := p.DecidePath(AccessWrite, outer); r.Action != Deny {
		t.Errorf("--no-project unprotected: %v", r)
	}
	// A broken project file is an error, not a silent skip.
	os.WriteFile(outer, []byte(`{"permission": {"reed": "allow"}}`), 0o644)
	if _, _, err := Load(LoadOptions{ConfigDir: cfgDir, Env: env}); err == nil || !strings.Contains(err.Error(), `policy.jsonc:1:17: unknown surface "reed"`) {
		t.Fatalf("broken project: %v", err)
	}
	os.WriteFile(outer, []byte(`{"yoloMode": true}`), 0o644)
	if _, _, err := Load(LoadOptions{ConfigDir: cfgDir, Env: env}); err == nil || !strings.Contains(err.Error(), `key "yoloMode" is not allowed in a project policy`) {
		t.Fatalf("project settings: %v", err)
	}
	// A trust file that is not one is an error.
	os.WriteFile(filepath.Join(cfgDir, TrustFileName), []byte(`{"projects": 3}`), 0o600)
	var ce *ConfigError
	if _, _, err := Load(LoadOptions{ConfigDir: cfgDir, Env: env}); !errors.As(err, &ce) || !strings.Contains(err.Error(), "not a trust record") {
		t.Fatalf("broken trust file: %v", err)
	}
}

func TestSelfProtection(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	real := filepath.Join(dir, "realcfg")
	os.MkdirAll(real, 0o755)
	link := filepath.Join(dir, "cfglink")
	os.Symlink(real, link)
	// A policy that tries everything to open the configuration up.
	os.WriteFile(filepath.Join(real, "policy.jsonc"), []byte(`{"permission": {"*": "allow", "write": {"*": "allow", "`+real+`/policy.jsonc": "allow"}}, "yoloMode": true}`), 0o600)
	os.WriteFile(filepath.Join(real, "hard-guards.jsonc"), []byte(`{"permission": {"write": {"`+real+`/policy.jsonc": "allow", "`+link+`/policy.jsonc": "allow"}}}`), 0o600)
	logDir := filepath.Join(dir, "state", "permwrap")
	bin := filepath.Join(dir, "bin", "permwrap")
	p, _, err := Load(LoadOptions{ConfigDir: link, Audit: true, Env: Env{Home: dir, Workspace: dir, TmpDir: "/tmp"},
		Protect: []Protected{{Path: logDir, Tree: true, Reason: "the review log"}, {Path: bin, Reason: "permwrap itself"}}})
	if err != nil {
		t.Fatal(err)
	}
	p.AddSessionRule(SurfaceWrite, real+"/**")
	for _, v := range []string{link + "/policy.jsonc", real + "/policy.jsonc", real + "/hard-guards.jsonc", real + "/new.jsonc", real, logDir + "/review.jsonl", bin} {
		r := p.Audit(p.DecidePath(AccessWrite, v))
		if r.Action != Deny || r.Layer != LayerHardGuard || r.Rule.Origin != OriginBuiltin || r.Rule.Reason == "" {
			t.Errorf("write %s → %v", v, r)
		}
	}
	if r := p.DecidePath(AccessRead, real+"/policy.jsonc"); r.Action != Allow {
		t.Errorf("reading the configuration: %v", r)
	}
	if r := p.DecidePath(AccessWrite, dir+"/binx"); r.Action != Allow {
		t.Errorf("a neighbour of the binary: %v", r)
	}
	// Renaming a parent moves the protected tree: DecideMove sees the
	// protected directory beneath it, on either side.
	for _, m := range []Move{
		{Kind: MoveRename, From: dir, To: dir + "-moved", FromDir: true},
		{Kind: MoveRename, From: filepath.Dir(real), To: "/elsewhere/moved", FromDir: true},
		{Kind: MoveRename, From: dir + "/empty", To: real, FromDir: true},
		{Kind: MoveExchange, From: real, To: dir + "/other", FromDir: true, ToDir: true},
		{Kind: MoveSymlink, From: dir + "/fake", To: real, FromDir: true},
	} {
		if r := p.DecideMove(m); r.Action != Deny {
			t.Errorf("%v: %v, want deny (the self-protected tree moves)", m, r)
		}
	}
	ex := p.ExplainPath(AccessWrite, real+"/policy.jsonc").String()
	if !strings.Contains(ex, "permwrap protects this path") || !strings.Contains(ex, "(deny, builtin); layer hard-guard") {
		t.Errorf("explain: %s", ex)
	}
}

func TestAudit(t *testing.T) {
	global := `{"permission": {"*": "ask", "write": {"/w/**": "allow", "/w/d/**": "deny", "/w/a/**": "ask"}, "bash": {"git push *": "ask"}}}`
	hard := `{"permission": {"write": {"/w/h/**": "deny", "/w/ha/**": "ask"}}, "protectedWrites": ["/w/p/**"]}`
	p, _ := compile(t, global, withHard(hard), func(c *Config) { c.Audit = true })
	for _, c := range []struct {
		v     string
		want  Action
		would Action
	}{
		{"/w/x", Allow, 0},
		{"/w/a/x", Allow, Ask},
		{"/w/d/x", Allow, Deny},
		{"/srv/x", Allow, Ask}, // the fallback
		{"/w/h/x", Deny, 0},    // hard-guard deny
		{"/w/ha/x", Ask, 0},    // hard-guard ask: a person
		{"/w/p/x", Ask, 0},     // protected write: a person
	} {
		r := p.Audit(p.DecidePath(AccessWrite, c.v))
		if r.Action != c.want {
			t.Errorf("%s: %v, want %v", c.v, r, c.want)
		}
		if c.would != 0 && (r.Rule.Origin != OriginAudit || r.Rule.Action != c.would) {
			t.Errorf("%s: rule %v, want origin audit and action %v", c.v, r.Rule, c.would)
		}
		if c.would == 0 && r.Rule.Origin == OriginAudit {
			t.Errorf("%s audited: %v", c.v, r)
		}
	}
	undecidable := Result{Action: Deny, Layer: LayerBuiltin, Rule: Rule{Origin: OriginBuiltin, Action: Deny, Reason: "could not resolve"}}
	if r := p.Audit(undecidable); r.Action != Deny {
		t.Errorf("audit lifted an undecidable request: %v", r)
	}
	if r := p.Audit(Result{Action: Deny}); r.Action != Deny {
		t.Errorf("audit lifted a result with no layer: %v", r)
	}
	d := p.ExplainCommandIn("git push origin main", shell.ScriptContext{})
	if d.Result.Action != Allow || !strings.Contains(d.String(), "logged as would_ask") {
		t.Errorf("explain in audit mode:\n%s", d)
	}
	// Without audit nothing changes.
	p, _ = compile(t, global)
	if r := p.Audit(p.DecidePath(AccessWrite, "/w/d/x")); r.Action != Deny {
		t.Errorf("audit off: %v", r)
	}
}

func TestNewEnvResolvesAndValidates(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	real := filepath.Join(dir, "wsreal")
	os.Mkdir(real, 0o755)
	os.Symlink(real, filepath.Join(dir, "wslink"))
	env, err := NewEnv(filepath.Join(dir, "wslink"))
	if err != nil || env.Workspace != real {
		t.Fatalf("NewEnv = %+v, %v", env, err)
	}
	if _, err := NewEnv(filepath.Join(dir, "nowhere")); err == nil || !strings.Contains(err.Error(), "no such file or directory") {
		t.Fatalf("missing workspace: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o644)
	if _, err := NewEnv(filepath.Join(dir, "file")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("file workspace: %v", err)
	}
	// FillEnv (what a library caller gets) resolves the same way.
	if got := FillEnv(Env{Home: "/h", Workspace: filepath.Join(dir, "wslink"), TmpDir: "/tmp"}); got.Workspace != real {
		t.Fatalf("FillEnv = %+v", got)
	}
}

func TestScopesRequired(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.jsonc"), []byte(`{"permission": {"write": {"/x": "alow"}}}`), 0o644)
	for _, s := range []string{filepath.Join(dir, "missing.jsonc"), filepath.Join(dir, "bad.jsonc")} {
		_, _, err := Load(LoadOptions{ConfigDir: dir, Scopes: []string{s}, Env: testEnv})
		if err == nil {
			t.Errorf("%s: no error", s)
		}
		p, warns, err := Load(LoadOptions{ConfigDir: dir, Scopes: []string{s}, ScopesOptional: true, Env: testEnv})
		if err != nil || len(warns) != 1 || !p.failClosed {
			t.Errorf("%s optional: %v %v", s, warns, err)
		}
	}
}

// policyRules lists the policy layer's rules, content rules included.
func policyRules(p *Policy) []Rule {
	var out []Rule
	for s := range p.rules {
		for _, l := range []*ruleList{&p.rules[s], &p.content[s]} {
			for _, r := range l.exact {
				out = append(out, r.Rule)
			}
			for _, e := range l.rules {
				out = append(out, e.r.Rule)
			}
		}
	}
	return out
}

// A tweak that tightens applies even where the base profile's rule is
// more specific; one that loosens only where it is at least as specific;
// a catch-all competes by specificity.
func TestLayeringTighteningTweaks(t *testing.T) {
	env := testEnv
	load := func(src string) *Policy {
		t.Helper()
		p, _, err := Compile(Config{Global: &File{Name: "policy.jsonc", Data: []byte(src)}, DefaultExtends: DefaultProfile, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ws := env.Workspace
	for _, tt := range []struct {
		policy, path string
		want         Action
	}{
		{`{"permission": {"write": {"*.lock": "deny"}}}`, ws + "/Cargo.lock", Deny},
		{`{"permission": {"write": {"*.lock": "deny"}}}`, ws + "/main.go", Allow},
		{`{"permission": {"write": {"~/**": "allow"}}}`, env.Home + "/.bashrc", Ask},
		{`{"permission": {"write": {"~/**": "allow"}}}`, env.Home + "/notes/x", Allow},
		{`{"permission": {"write": {"*": "ask"}}}`, ws + "/main.go", Allow},
		{`{"permission": {"write": {"~/.bashrc": "allow"}}}`, env.Home + "/.bashrc", Allow},
	} {
		if got := load(tt.policy).DecidePath(AccessWrite, tt.path); got.Action != tt.want {
			t.Errorf("%s: write %s → %v, want %v", tt.policy, tt.path, got, tt.want)
		}
	}
}
