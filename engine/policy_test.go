package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var testEnv = Env{Home: "/home/u", Workspace: "/home/u/src/proj", TmpDir: "/tmp/u"}

type cfgOpt func(*Config)

func withHard(src string) cfgOpt {
	return func(c *Config) { c.HardGuards = &File{Name: "hard-guards.jsonc", Data: []byte(src)} }
}

func withScope(name, src string) cfgOpt {
	return func(c *Config) { c.Scopes = append(c.Scopes, File{Name: name, Data: []byte(src)}) }
}

func withYolo(c *Config) { c.Yolo = true }

func compile(t testing.TB, global string, opts ...cfgOpt) (*Policy, []Warning) {
	t.Helper()
	cfg := Config{Env: testEnv}
	if global != "" {
		cfg.Global = &File{Name: "policy.jsonc", Data: []byte(global)}
	}
	for _, o := range opts {
		o(&cfg)
	}
	p, w, err := Compile(cfg)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return p, w
}

func TestSpecificityOrder(t *testing.T) {
	tests := []struct {
		name   string
		rules  string // write rules
		path   string
		want   Action
		winner string
	}{
		{"exact beats glob with more literals",
			`"/home/u/a/b/c.txt": "deny", "/home/u/a/b/c.tx*": "allow"`, "/home/u/a/b/c.txt", Deny, "/home/u/a/b/c.txt"},
		{"more literals beats fewer",
			`"/home/u/**": "allow", "/home/u/.ssh/**": "deny"`, "/home/u/.ssh/id", Deny, "/home/u/.ssh/**"},
		{"more literals beats fewer (allow inside deny)",
			`"/home/**": "deny", "/home/u/ok/**": "allow"`, "/home/u/ok/x", Allow, "/home/u/ok/**"},
		{"fewer wildcards on equal literals",
			`"/a/*/c": "deny", "/a/**/c": "allow"`, "/a/b/c", Deny, "/a/*/c"},
		{"star beats double star on equal literals",
			`"/a/b*": "ask", "/a/b**": "deny"`, "/a/bc", Ask, "/a/b*"},
		{"longer pattern on equal literals and wildcards",
			`"/a/[bc]x": "deny", "/a/?x": "allow"`, "/a/bx", Deny, "/a/[bc]x"},
		{"later declaration breaks full ties",
			`"/a/*": "deny", "/a/?": "allow", "/a/*": "ask"`, "/a/b", Ask, ""},
		{"basename pattern counts its literals",
			`"*": "allow", ".env": "deny"`, "/home/u/src/proj/.env", Deny, ".env"},
		{"long full path beats short basename",
			`"id_rsa*": "allow", "/home/u/.ssh/**": "deny"`, "/home/u/.ssh/id_rsa", Deny, "/home/u/.ssh/**"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := `{"permission": {"write": {` + tt.rules + `}}}`
			if strings.Count(tt.rules, `"/a/*"`) == 2 {
				// Duplicate keys are an error; split across a scope instead.
				p, _ := compile(t, `{"permission": {"write": {"/a/*": "deny", "/a/?": "allow"}}}`,
					withScope("scope.jsonc", `{"permission": {"write": {"/a/*": "ask"}}}`))
				r := p.Evaluate(Check{SurfaceWrite, tt.path})
				if r.Action != tt.want || r.Rule.Origin != OriginScope {
					t.Fatalf("got %v, want %v from the scope", r, tt.want)
				}
				return
			}
			p, _ := compile(t, src)
			r := p.Evaluate(Check{SurfaceWrite, tt.path})
			if r.Action != tt.want || r.Rule.Pattern != tt.winner {
				t.Fatalf("got %v (rule %q), want %v from %q", r.Action, r.Rule.Pattern, tt.want, tt.winner)
			}
		})
	}
}

func TestLaterDeclarationWinsTies(t *testing.T) {
	// Two non-exact patterns with identical specificity in one file.
	p, _ := compile(t, `{"permission": {"write": {"/a/x*": "deny", "/a/*y": "allow"}}}`)
	if r := p.Evaluate(Check{SurfaceWrite, "/a/xy"}); r.Action != Allow || r.Rule.Pattern != "/a/*y" {
		t.Fatalf("got %v, want the later /a/*y allow", r)
	}
	p, _ = compile(t, `{"permission": {"write": {"/a/*y": "allow", "/a/x*": "deny"}}}`)
	if r := p.Evaluate(Check{SurfaceWrite, "/a/xy"}); r.Action != Deny {
		t.Fatalf("got %v, want the later /a/x* deny", r)
	}
}

func TestPathPatterns(t *testing.T) {
	tests := []struct {
		pattern string
		value   string
		want    bool
	}{
		{"/a/*", "/a/b", true},
		{"/a/*", "/a/b/c", false},
		{"/a/**", "/a/b/c", true},
		{"/a/**", "/a", true}, // X/** covers X
		{"/a/**", "/ab", false},
		{"/a/**/c", "/a/c", true},
		{"/a/**/c", "/a/b/x/c", true},
		{"/a/**/c", "/a/bc", false},
		{"**/.git/hooks/**", "/r/.git/hooks/pre-commit", true},
		{"**/.git/hooks/**", "/.git/hooks/x", true},
		{"**/.git/hooks/**", "/r/.git/hooksx", false},
		{"*.pem", "/x/y/server.pem", true},
		{"*.pem", "server.pem", true},
		{"*.pem", "/x/y.pem/z", false},
		{".env", "/p/.env", true},
		{".env", "/p/.env.local", false},
		{".env.*", "/p/.env.local", true},
		{"id_rsa*", "/home/u/.ssh/id_rsa.pub", true},
		{"/a/?", "/a/b", true},
		{"/a/?", "/a/", false},
		{"/a/[bc]", "/a/c", true},
		{"/a/[!bc]", "/a/c", false},
		{"/a/[!bc]", "/a/d", true},
		{"/a/[a-c]x", "/a/bx", true},
		{"/a/\\*", "/a/*", true},
		{"/a/\\*", "/a/b", false},
		{"*", "/anything/at/all", true},
		{"*", "relative/path", true},
		{"/a/*", "relative/a/b", false}, // relative values never match full paths
		{"/a/b", "a/b", false},
		{"/", "/", true},
		{"/**", "/", true},
		{"/**", "/x/y", true},
		{"/home/*/.ssh/**", "/home/u/.ssh", true},
		{"/home/*/.ssh/**", "/home/u/.ssh/k", true},
		{"/x/**/**/y", "/x/y", true},
		{"/x/**y", "/x/a/b/y", true},
	}
	for _, tt := range tests {
		pp, err := compilePathPattern(tt.pattern)
		if err != nil {
			t.Errorf("compile %q: %v", tt.pattern, err)
			continue
		}
		if got := pp.match(tt.value); got != tt.want {
			t.Errorf("%q matching %q = %v, want %v", tt.pattern, tt.value, got, tt.want)
		}
	}
}

func TestPathPatternErrors(t *testing.T) {
	for _, p := range []string{"", "/a/{b,c}", "/a/[b", "/a/[]", "/a\\", "/a/[z-a]", "/a/[\xc3\xa9]", strings.Repeat("?", maxPatternStates+1)} {
		if _, err := compilePathPattern(p); err == nil {
			t.Errorf("compile %q: no error", p)
		}
	}
}

func TestBashPatterns(t *testing.T) {
	tests := []struct {
		pattern, value string
		want           bool
	}{
		{"git push *", "git push origin main", true},
		{"git push *", "git push", true}, // trailing " *" matches an empty rest
		{"git push *", "git pushx", false},
		{"git push*", "git pushx", true},
		{"*", "anything at all / here", true},
		{"rm -rf /\\*", "rm -rf /*", true},
		{"rm -rf /\\*", "rm -rf /home", false},
		{"rm -rf / *", "rm -rf /", true},
		{"rm -rf / *", "rm -rf /tmp/x", false},
		{"git * --force", "git push origin --force", true},
		{"git * --force", "git --force", false},
		{"npm run dev", "npm run dev", true},
		{"npm run dev", "npm run dev2", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "acb", false},
	}
	for _, tt := range tests {
		bp, err := compileBashPattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := bp.match(tt.value); got != tt.want {
			t.Errorf("%q matching %q = %v, want %v", tt.pattern, tt.value, got, tt.want)
		}
	}
}

func TestExpansion(t *testing.T) {
	p, _ := compile(t, `{"permission": {"write": {
		"~/a/**": "deny",
		"${HOME}/b/**": "deny",
		"${WORKSPACE}/**": "allow",
		"${TMPDIR}/x": "deny",
		"~": "deny"
	}}}`)
	for path, want := range map[string]Action{
		"/home/u/a/1":            Deny,
		"/home/u/b/1":            Deny,
		"/home/u/src/proj/f.go":  Allow,
		"/home/u/src/proj":       Allow,
		"/tmp/u/x":               Deny,
		"/home/u":                Deny,
		"/home/u/src/projection": Ask, // not inside the workspace
	} {
		if r := p.Evaluate(Check{SurfaceWrite, path}); r.Action != want {
			t.Errorf("write %s = %v (by %v), want %v", path, r.Action, r.Rule, want)
		}
	}
	_, _, err := Compile(Config{Env: testEnv, Global: &File{Name: "p.jsonc", Data: []byte(`{"permission": {"read": {"${NOPE}/x": "deny"}}}`)}})
	if err == nil || !strings.Contains(err.Error(), "p.jsonc:1:26: ") || !strings.Contains(err.Error(), "${NOPE}") {
		t.Fatalf("unknown variable: got %v", err)
	}
}

func TestComposition(t *testing.T) {
	global := `{"permission": {
		"*": "ask",
		"write": {"/w/**": "allow", "/w/deny/**": "deny", "/w/ask/**": "ask"},
		"bash": {"*": "allow", "git push *": "ask", "rm -rf /": "deny"}
	}}`
	hard := `{"permission": {
		"write": {"/w/hard/**": "deny", "/w/hardask/**": "ask", "/w/deny/free/**": "allow"},
		"bash": {"curl *": "deny"}
	}, "protectedWrites": ["/w/prot/**", "**/.git/hooks/**"]}`

	t.Run("hard-guard deny is final against session and yolo", func(t *testing.T) {
		p, _ := compile(t, global, withHard(hard), withYolo)
		if _, err := p.AddSessionRule(SurfaceWrite, "/w/hard/**"); err != nil {
			t.Fatal(err)
		}
		if _, err := p.AddSessionRule(SurfaceBash, "curl *"); err != nil {
			t.Fatal(err)
		}
		r := p.Evaluate(Check{SurfaceWrite, "/w/hard/x"})
		if r.Action != Deny || r.Rule.Origin != OriginHardGuard || r.Layer != LayerHardGuard {
			t.Fatalf("got %v", r)
		}
		if r := p.Evaluate(Check{SurfaceBash, "curl x | sh"}); r.Action != Deny || r.Rule.Origin != OriginHardGuard {
			t.Fatalf("got %v", r)
		}
	})
	t.Run("hard-guard ask is human-only", func(t *testing.T) {
		p, _ := compile(t, global, withHard(hard), withYolo)
		p.AddSessionRule(SurfaceWrite, "/w/hardask/**")
		r := p.Evaluate(Check{SurfaceWrite, "/w/hardask/x"})
		if r.Action != Ask || !r.HumanOnly || r.Rule.Origin != OriginHardGuard {
			t.Fatalf("got %v", r)
		}
	})
	t.Run("hard-guard allow only means not blocked", func(t *testing.T) {
		p, _ := compile(t, global, withHard(hard))
		r := p.Evaluate(Check{SurfaceWrite, "/w/deny/free/x"})
		if r.Action != Deny || r.Rule.Pattern != "/w/deny/**" {
			t.Fatalf("got %v, want the policy deny", r)
		}
	})
	t.Run("protected writes are human-only whatever else matches", func(t *testing.T) {
		p, _ := compile(t, global, withHard(hard), withYolo)
		p.AddSessionRule(SurfaceWrite, "/w/prot/**")
		for _, path := range []string{"/w/prot/a", "/w/.git/hooks/pre-commit"} {
			r := p.Evaluate(Check{SurfaceWrite, path})
			if r.Action != Ask || !r.HumanOnly || r.Layer != LayerProtectedWrite {
				t.Fatalf("%s: got %v", path, r)
			}
		}
		// Reads of protected paths are not affected.
		if r := p.DecidePath(AccessRead, "/w/prot/a"); r.HumanOnly {
			t.Fatalf("read got %v", r)
		}
	})
	t.Run("protected write loses only to a hard-guard deny", func(t *testing.T) {
		p, _ := compile(t, global, withHard(`{"permission": {"write": {"/w/prot/x": "deny"}}, "protectedWrites": ["/w/prot/**"]}`))
		if r := p.Evaluate(Check{SurfaceWrite, "/w/prot/x"}); r.Action != Deny {
			t.Fatalf("got %v", r)
		}
	})
	t.Run("session rules lift asks", func(t *testing.T) {
		p, _ := compile(t, global, withHard(hard))
		if r := p.Evaluate(Check{SurfaceBash, "git push origin main"}); r.Action != Ask {
			t.Fatalf("before: %v", r)
		}
		rule, err := p.AddSessionRule(SurfaceBash, "git push *")
		if err != nil || rule.Origin != OriginSession || rule.Action != Allow {
			t.Fatalf("AddSessionRule: %v %v", rule, err)
		}
		r := p.Evaluate(Check{SurfaceBash, "git push origin main"})
		if r.Action != Allow || r.Rule.Origin != OriginSession || r.Layer != LayerSession {
			t.Fatalf("after: %v", r)
		}
		if got := p.SessionRules(); len(got) != 1 || got[0].Pattern != "git push *" {
			t.Fatalf("SessionRules = %v", got)
		}
	})
	t.Run("session rules never lift a policy deny", func(t *testing.T) {
		p, _ := compile(t, global)
		p.AddSessionRule(SurfaceWrite, "/w/**")
		p.AddSessionRule(SurfaceBash, "rm *")
		if r := p.Evaluate(Check{SurfaceWrite, "/w/deny/x"}); r.Action != Deny {
			t.Fatalf("got %v", r)
		}
		if r := p.Evaluate(Check{SurfaceBash, "rm -rf /"}); r.Action != Deny {
			t.Fatalf("got %v", r)
		}
		if ex := p.Explain(Check{SurfaceWrite, "/w/deny/x"}); !strings.Contains(ex.String(), "never lifts a deny") {
			t.Fatalf("explain does not say why:\n%s", ex)
		}
	})
	t.Run("policy then universal fallback then builtin", func(t *testing.T) {
		p, _ := compile(t, `{"permission": {"*": "deny", "write": {"/w/**": "allow"}}}`)
		if r := p.Evaluate(Check{SurfaceWrite, "/w/x"}); r.Action != Allow || r.Layer != LayerPolicy {
			t.Fatalf("got %v", r)
		}
		if r := p.Evaluate(Check{SurfaceWrite, "/etc/x"}); r.Action != Deny || r.Layer != LayerFallback || r.Rule.Pattern != "*" {
			t.Fatalf("got %v", r)
		}
		p, _ = compile(t, `{"permission": {"write": {"/w/**": "allow"}}}`)
		if r := p.Evaluate(Check{SurfaceWrite, "/etc/x"}); r.Action != Ask || r.Rule.Origin != OriginBuiltin || r.Rule.Pattern != "" {
			t.Fatalf("got %v", r)
		}
	})
	t.Run("yolo rewrites asks but never deny", func(t *testing.T) {
		p, _ := compile(t, global, withYolo)
		r := p.Evaluate(Check{SurfaceBash, "git push origin"})
		if r.Action != Allow || r.Rule.Origin != OriginYolo || r.Rule.Pattern != "git push *" {
			t.Fatalf("got %v", r)
		}
		if r := p.Evaluate(Check{SurfaceWrite, "/w/deny/x"}); r.Action != Deny {
			t.Fatalf("got %v", r)
		}
		if r := p.Evaluate(Check{SurfaceBash, "rm -rf /"}); r.Action != Deny {
			t.Fatalf("got %v", r)
		}
		// The fallback ask and the builtin ask are rewritten too.
		if r := p.Evaluate(Check{SurfaceRead, "/etc/x"}); r.Action != Allow || r.Rule.Origin != OriginYolo {
			t.Fatalf("got %v", r)
		}
		q, _ := compile(t, `{"permission": {}, "yoloMode": true}`)
		if r := q.Evaluate(Check{SurfaceRead, "/etc/x"}); r.Action != Allow || r.Rule.Origin != OriginYolo || !q.Settings().Yolo {
			t.Fatalf("yoloMode from the file: got %v", r)
		}
	})
}

func TestFailClosed(t *testing.T) {
	global := `{"permission": {"*": "allow", "write": {"/w/**": "allow", "/w/d/**": "deny"}, "bash": {"git push *": "ask"}}}`
	p, warns := compile(t, global, withScope("bad.jsonc", `{"permission": {"write": {"/x": "maybe"}}}`))
	if len(warns) != 1 || warns[0].Pos.File != "bad.jsonc" || !strings.Contains(warns[0].String(), "bad.jsonc:1:33: unknown action") {
		t.Fatalf("warnings = %v", warns)
	}
	if !p.failClosed {
		t.Fatal("not fail-closed")
	}
	r := p.Evaluate(Check{SurfaceWrite, "/w/x"})
	if r.Action != Ask || r.Rule.Origin != OriginFailClosed || r.Rule.Pattern != "/w/**" {
		t.Fatalf("allow not turned into an ask: %v", r)
	}
	if r := p.Evaluate(Check{SurfaceRead, "/etc/x"}); r.Action != Ask || r.Rule.Origin != OriginFailClosed {
		t.Fatalf("fallback allow not turned into an ask: %v", r)
	}
	if r := p.Evaluate(Check{SurfaceWrite, "/w/d/x"}); r.Action != Deny {
		t.Fatalf("deny changed: %v", r)
	}
	// Session rules still allow: a person approved them in this run.
	p.AddSessionRule(SurfaceWrite, "/w/s/**")
	if r := p.Evaluate(Check{SurfaceWrite, "/w/s/x"}); r.Action != Allow {
		t.Fatalf("session rule turned into an ask: %v", r)
	}
	// Yolo does not lift a fail-closed ask, but lifts ordinary asks.
	p, _ = compile(t, global, withScope("bad.jsonc", `{`), withYolo)
	if r := p.Evaluate(Check{SurfaceWrite, "/w/x"}); r.Action != Ask {
		t.Fatalf("yolo lifted fail-closed: %v", r)
	}
	if r := p.Evaluate(Check{SurfaceBash, "git push"}); r.Action != Allow {
		t.Fatalf("yolo did not lift an ordinary ask: %v", r)
	}
	// An unreadable scope file fails closed too.
	dir := t.TempDir()
	p, warns, err := Load(LoadOptions{ConfigDir: dir, Scopes: []string{filepath.Join(dir, "missing.jsonc")}, ScopesOptional: true, Env: testEnv})
	if err != nil || len(warns) != 1 || !p.failClosed {
		t.Fatalf("missing scope: %v %v", warns, err)
	}
}

func TestScopesWinTies(t *testing.T) {
	p, _ := compile(t, `{"permission": {"write": {"/w/**": "allow"}}}`,
		withScope("s1.jsonc", `{"permission": {"write": {"/w/**": "ask"}}}`),
		withScope("s2.jsonc", `{"permission": {"write": {"/w/**": "deny"}}}`))
	r := p.Evaluate(Check{SurfaceWrite, "/w/x"})
	if r.Action != Deny || r.Rule.Pos.File != "s2.jsonc" || r.Rule.Origin != OriginScope {
		t.Fatalf("got %v", r)
	}
	// A more specific global rule still beats a broad scope rule.
	p, _ = compile(t, `{"permission": {"write": {"/w/keep/**": "allow"}}}`,
		withScope("s.jsonc", `{"permission": {"write": {"/w/**": "deny"}}}`))
	if r := p.Evaluate(Check{SurfaceWrite, "/w/keep/x"}); r.Action != Allow {
		t.Fatalf("got %v", r)
	}
}

func TestDecideAcrossSurfaces(t *testing.T) {
	p, _ := compile(t, `{"permission": {
		"*": "deny",
		"read": {"*": "allow"},
		"write": {"/w/**": "allow"},
		"path": {"/w/secret/**": "deny", "/w/ask/**": "ask"}
	}}`)
	tests := []struct {
		a      Access
		path   string
		want   Action
		decide Surface
	}{
		{AccessRead, "/etc/passwd", Allow, SurfaceRead},          // path abstains
		{AccessWrite, "/w/x", Allow, SurfaceWrite},               // path abstains
		{AccessWrite, "/w/secret/x", Deny, SurfacePath},          // most restrictive
		{AccessRead, "/w/secret/x", Deny, SurfacePath},           // path covers every access
		{AccessWrite, "/w/ask/x", Ask, SurfacePath},              //
		{AccessRead | AccessWrite, "/etc/x", Allow, SurfaceRead}, // write abstains
		{AccessExec, "/usr/bin/ls", Deny, SurfaceExec},           // every surface abstains: fallback deny
	}
	for _, tt := range tests {
		r := p.DecidePath(tt.a, tt.path)
		if r.Action != tt.want || r.Check.Surface != tt.decide {
			t.Errorf("%v %s = %v from %v, want %v from %v", tt.a, tt.path, r.Action, r.Check.Surface, tt.want, tt.decide)
		}
	}
	if r := p.DecidePath(AccessExec, "/usr/bin/ls"); r.Layer != LayerFallback {
		t.Errorf("all abstain: layer %v", r.Layer)
	}
	if r := p.DecidePath(0, "/x"); r.Action != Deny {
		t.Errorf("no access bits: %v", r)
	}
	// The human-only flag survives composition on equal actions.
	q, _ := compile(t, `{"permission": {"path": {"/p/**": "ask"}}}`, withHard(`{"protectedWrites": ["/p/**"]}`))
	if r := q.DecidePath(AccessWrite, "/p/x"); r.Action != Ask || !r.HumanOnly {
		t.Errorf("human-only lost: %v", r)
	}
	// No rules at all: builtin ask.
	e, _ := compile(t, `{}`)
	if r := e.DecidePath(AccessWrite, "/x"); r.Action != Ask || r.Layer != LayerBuiltin {
		t.Errorf("empty policy: %v", r)
	}
	if r := e.Decide(); r.Action != Ask {
		t.Errorf("no checks: %v", r)
	}
	if r := e.Evaluate(Check{Surface: 99, Value: "/x"}); r.Action != Deny {
		t.Errorf("invalid surface: %v", r)
	}
}

func TestEvaluateAny(t *testing.T) {
	p, _ := compile(t, `{"permission": {"bash": {
		"*": "allow",
		"git push *": "ask",
		"/usr/bin/git push origin main": "allow",
		"/opt/evil/git *": "deny"
	}}}`, withHard(`{"permission": {"bash": {"sudo *": "deny"}}}`))
	tests := []struct {
		values []string
		want   Action
		rule   string
	}{
		{[]string{"git push origin", "/usr/bin/git push origin"}, Ask, "git push *"},
		// The exact full-path allow is more specific than `git push *`.
		{[]string{"git push origin main", "/usr/bin/git push origin main"}, Allow, "/usr/bin/git push origin main"},
		{[]string{"git status", "/opt/evil/git status"}, Deny, "/opt/evil/git *"},
		// A hard guard on any spelling wins over any specificity.
		{[]string{"/usr/bin/sudo ls", "sudo ls"}, Deny, "sudo *"},
		// Ties: both `*` → allow; most restrictive among equals.
		{[]string{"ls", "/bin/ls"}, Allow, "*"},
	}
	for _, tt := range tests {
		r := p.EvaluateAny(SurfaceBash, tt.values...)
		if r.Action != tt.want || r.Rule.Pattern != tt.rule {
			t.Errorf("%q = %v by %q, want %v by %q", tt.values, r.Action, r.Rule.Pattern, tt.want, tt.rule)
		}
	}
	q, _ := compile(t, `{"permission": {"bash": {"a *": "allow", "b *": "deny"}}}`)
	if r := q.EvaluateAny(SurfaceBash, "a x", "b x"); r.Action != Deny {
		t.Errorf("equal specificity should compose most-restrictive: %v", r)
	}
	if r := q.EvaluateAny(SurfaceBash); r.Action != Ask {
		t.Errorf("no values: %v", r)
	}
}

func TestAbstainingSurfaceWithFallback(t *testing.T) {
	// The example policy: a path rule elsewhere does not make
	// every write ask.
	p, _ := compile(t, `{
	  "permission": {
	    "*": "ask",
	    "read":  { "*": "allow", "~/.ssh/**": "deny" },
	    "write": { "*": "ask", "${WORKSPACE}/**": "allow", "/tmp/**": "allow" },
	    "exec":  "allow",
	    "bash":  { "*": "allow", "git push *": "ask", "rm -rf /*": "deny" },
	    "path":  { "/etc/**": { "action": "deny", "reason": "system files are managed by the admin" } }
	  },
	  "yoloMode": false
	}`)
	for _, tt := range []struct {
		a    Access
		path string
		want Action
	}{
		{AccessWrite, "/tmp/x", Allow},
		{AccessWrite, "/home/u/src/proj/main.go", Allow},
		{AccessRead, "/home/u/.ssh/id_ed25519", Deny},
		{AccessRead, "/etc/shadow", Deny},
		{AccessExec, "/etc/init.d/x", Deny},
		{AccessWrite, "/var/lib/x", Ask},
	} {
		r := p.DecidePath(tt.a, tt.path)
		if r.Action != tt.want {
			t.Errorf("%v %s = %v, want %v", tt.a, tt.path, r, tt.want)
		}
	}
	r := p.DecidePath(AccessRead, "/etc/shadow")
	if r.Rule.Reason != "system files are managed by the admin" {
		t.Errorf("reason lost: %q", r.Rule.Reason)
	}
}

func TestSuggestPathPattern(t *testing.T) {
	env := testEnv
	tests := []struct {
		a    Access
		path string
		want string
	}{
		{AccessWrite, "/home/u/src/proj/pkg/a.go", "/home/u/src/proj/pkg/**"},
		// Directly in the workspace: the file, never the whole workspace.
		{AccessWrite, "/home/u/src/proj/a.go", "/home/u/src/proj/a.go"},
		{AccessRead | AccessWrite, "/home/u/src/proj/a.go", "/home/u/src/proj/a.go"},
		{AccessWrite, "/etc/hosts", "/etc/hosts"},
		{AccessWrite, "/srv/app/logs/x.log", "/srv/app/logs/**"},
		// The home directory, a directory in it, an ancestor of the
		// workspace, a temporary area: the file.
		{AccessWrite, "/home/u/.bashrc", "/home/u/.bashrc"},
		{AccessWrite, "/home/u/.config/app.toml", "/home/u/.config/app.toml"},
		{AccessWrite, "/home/u/src/x.go", "/home/u/src/x.go"},
		{AccessWrite, "/tmp/u/out", "/tmp/u/out"},
		{AccessWrite, "/tmp/out", "/tmp/out"},
		{AccessWrite, "/home/u/.config/app/app.toml", "/home/u/.config/app/**"},
		{AccessWrite, "/tmp/u/build/out", "/tmp/u/build/**"},
		{AccessRead, "/home/u/src/proj/.env", "/home/u/src/proj/.env"},
		{AccessWrite, "/home/u/src/proj/we*ird/[x].go", "/home/u/src/proj/we\\*ird/**"},
		{AccessRead, "/tmp/${HOME}", "/tmp/[$]\\{HOME\\}"},
	}
	for _, tt := range tests {
		got := SuggestPathPattern(tt.a, tt.path, env)
		if got != tt.want {
			t.Errorf("SuggestPathPattern(%v, %q) = %q, want %q", tt.a, tt.path, got, tt.want)
		}
		// The suggestion must compile and match the path it came from.
		p, _ := compile(t, `{}`)
		s := SurfaceWrite
		if tt.a == AccessRead {
			s = SurfaceRead
		}
		if _, err := p.AddSessionRule(s, got); err != nil {
			t.Errorf("suggestion %q does not compile: %v", got, err)
			continue
		}
		if r := p.Evaluate(Check{s, tt.path}); r.Action != Allow {
			t.Errorf("suggestion %q does not match %q: %v", got, tt.path, r)
		}
	}
}

func TestSessionRulesConcurrent(t *testing.T) {
	p, _ := compile(t, `{"permission": {"bash": {"*": "ask"}}}`)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			if _, err := p.AddSessionRule(SurfaceBash, fmt.Sprintf("cmd%d *", i)); err != nil {
				t.Error(err)
			}
		}(i)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				p.Evaluate(Check{SurfaceBash, "cmd3 x"})
			}
		}()
	}
	wg.Wait()
	if n := len(p.SessionRules()); n != 8 {
		t.Fatalf("%d session rules, want 8", n)
	}
	for i := 0; i < 8; i++ {
		if r := p.Evaluate(Check{SurfaceBash, fmt.Sprintf("cmd%d x", i)}); r.Action != Allow {
			t.Fatalf("cmd%d: %v", i, r)
		}
	}
	if _, err := p.AddSessionRule(SurfaceWrite, "/a/{b,c}"); err == nil {
		t.Fatal("bad session pattern accepted")
	}
}

func TestExplain(t *testing.T) {
	p, _ := compile(t, `{"permission": {
		"write": {
			"/w/**": "allow",
			"/w/*.go": "ask",
			"*.go": "deny"
		}
	}}`, withHard(`{"permission": {"write": {"/w/**": "allow"}}}`))
	ex := p.Explain(Check{SurfaceWrite, "/w/a.go"})
	if ex.Result.Action != Ask || ex.Result.Rule.Pattern != "/w/*.go" {
		t.Fatalf("result %v", ex.Result)
	}
	var got []string
	for _, r := range ex.RunnerUps {
		got = append(got, r.Origin.String()+" "+r.Pattern)
	}
	// *.go and /w/** have 3 literals each; *.go has fewer wildcards.
	want := []string{"hard-guard /w/**", "global *.go", "global /w/**"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("runner-ups %q, want %q", got, want)
	}
	s := ex.String()
	for _, frag := range []string{"answer: ask", "decided by: rule write:/w/*.go (ask, policy.jsonc:4:4); origin global, layer policy", "runner-ups:", "rule write:*.go (deny, policy.jsonc:5:4); origin global"} {
		if !strings.Contains(s, frag) {
			t.Errorf("explanation lacks %q:\n%s", frag, s)
		}
	}
	d := p.ExplainPath(AccessWrite, "/w/a.go")
	if len(d.Surfaces) != 2 || d.Surfaces[1].Check.Surface != SurfacePath || !d.Surfaces[1].Abstained {
		t.Fatalf("ExplainPath surfaces: %+v", d.Surfaces)
	}
}

func TestLoadFromDir(t *testing.T) {
	dir := t.TempDir()
	// No policy.jsonc: the embedded default applies with origin default.
	p, warns, err := Load(LoadOptions{ConfigDir: dir, Env: testEnv})
	if err != nil || len(warns) != 0 {
		t.Fatal(err, warns)
	}
	r := p.DecidePath(AccessWrite, "/home/u/src/proj/x")
	if r.Action != Allow || r.Rule.Origin != OriginDefault || r.Rule.Pos.File != DefaultPolicyName {
		t.Fatalf("default: %v", r)
	}
	// A broken policy.jsonc is an error naming the position.
	os.WriteFile(filepath.Join(dir, "policy.jsonc"), []byte("{\n  \"permission\": {\"reed\": \"allow\"}\n}\n"), 0o600)
	_, _, err = Load(LoadOptions{ConfigDir: dir, Env: testEnv})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Pos.Line != 2 || ce.Pos.Column != 18 {
		t.Fatalf("got %v", err)
	}
	// PERMWRAP_CONFIG_DIR is honoured.
	os.WriteFile(filepath.Join(dir, "policy.jsonc"), []byte(`{"extends": "none", "permission": {"write": "deny"}}`), 0o600)
	t.Setenv("PERMWRAP_CONFIG_DIR", dir)
	p, _, err = Load(LoadOptions{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	if r := p.DecidePath(AccessWrite, "/home/u/src/proj/x"); r.Action != Deny || r.Rule.Origin != OriginGlobal {
		t.Fatalf("global: %v", r)
	}
	// A broken hard-guards.jsonc is an error too.
	os.WriteFile(filepath.Join(dir, "hard-guards.jsonc"), []byte(`{"yoloMode": true}`), 0o600)
	if _, _, err := Load(LoadOptions{Env: testEnv}); err == nil || !strings.Contains(err.Error(), "hard-guards.jsonc:1:2: key \"yoloMode\" is not allowed") {
		t.Fatalf("hard guards: %v", err)
	}
}

func TestLandlockFloor(t *testing.T) {
	p, _ := compile(t, `{"permission": {"*": "deny", "write": {
		"${WORKSPACE}/**": "allow",
		"/tmp/**": "allow",
		"/tmp/sub/**": "ask",
		"/dev/null": "allow",
		"/etc/**": "deny",
		"/var/*/log/**": "ask"
	}}}`, withHard(`{"protectedWrites": ["/srv/x/**"]}`))
	f := p.LandlockFloor()
	want := []string{"/dev", "/home/u/src/proj", "/srv/x", "/tmp", "/var"}
	if f.WriteAnywhere || strings.Join(f.WriteDirs, " ") != strings.Join(want, " ") {
		t.Fatalf("floor %+v, want %v", f, want)
	}
	// A basename allow, a leading ** or a non-deny fallback could match anywhere.
	for _, src := range []string{
		`{"permission": {"*": "deny", "write": {"*.log": "allow"}}}`,
		`{"permission": {"*": "deny", "write": {"**/build/**": "ask"}}}`,
		`{"permission": {"*": "ask", "write": {"/tmp/**": "allow"}}}`,
		`{"permission": {"write": {"/tmp/**": "allow"}}}`, // builtin ask
	} {
		q, _ := compile(t, src)
		if f := q.LandlockFloor(); !f.WriteAnywhere {
			t.Errorf("%s: floor %+v, want anywhere", src, f)
		}
	}
	// A catch-all deny on write bounds the floor even without a fallback.
	q, _ := compile(t, `{"permission": {"write": {"*": "deny", "/tmp/**": "allow"}}}`)
	if f := q.LandlockFloor(); f.WriteAnywhere || len(f.WriteDirs) != 1 || f.WriteDirs[0] != "/tmp" {
		t.Errorf("catch-all deny: %+v", f)
	}
}

func TestSettings(t *testing.T) {
	p, _ := compile(t, `{
		"permission": {},
		"authorizerChain": ["judge", "missing"],
		"authorizers": {"judge": {"command": ["/usr/local/bin/judge", "--fast"], "timeoutMs": 1500}},
		"modelDelegation": {"allowedSurfaces": ["read", "bash"], "excludedSurfaces": ["write"]},
		"askTimeout": "90s",
		"denialNotice": "off",
		"proxy": "off",
		"typoPaths": [{"from": "/home/*/src/proj/**", "to": "${WORKSPACE}"}],
		"log": {"path": "~/.local/state/permwrap/review.jsonl", "readAllows": "none", "scratchWrites": "each", "fieldWidth": 128, "rotateMB": 2, "keep": 0}
	}`)
	s := p.Settings()
	if strings.Join(s.AuthorizerChain, ",") != "judge,missing" ||
		s.Authorizers["judge"].Timeout.Milliseconds() != 1500 || s.Authorizers["judge"].Command[1] != "--fast" ||
		len(s.ModelDelegation.AllowedSurfaces) != 2 || s.ModelDelegation.ExcludedSurfaces[0] != SurfaceWrite ||
		s.AskTimeout.Seconds() != 90 || s.DenialNotice != "off" || s.Proxy != "off" ||
		s.Log.Path != "/home/u/.local/state/permwrap/review.jsonl" || s.Log.ReadAllows != "none" || s.Log.FieldWidth != 128 ||
		s.Log.RotateBytes != 2<<20 || s.Log.Keep != 0 || s.Log.ScratchWrites != "each" {
		t.Fatalf("settings %+v", s)
	}
	if len(s.TypoPaths) != 1 || !s.TypoPaths[0].Match("/home/v/src/proj/a") || s.TypoPaths[0].To != "/home/u/src/proj" {
		t.Fatalf("typoPaths %+v", s.TypoPaths)
	}
	if old, _ := compile(t, `{"log": {"readAllows": "all"}}`); old.Settings().Log.ReadAllows != "each" {
		t.Fatalf(`readAllows "all" (the old name of "each") read as %q`, old.Settings().Log.ReadAllows)
	}
	d, _ := compile(t, `{}`)
	ds := d.Settings()
	if ds.AskTimeout != DefaultAskTimeout || ds.DenialNotice != "stderr" || ds.Proxy != "env" || ds.Log.ReadAllows != "summary" || ds.Log.ScratchWrites != "summary" || ds.Log.FieldWidth != DefaultLogFieldWidth || ds.Yolo ||
		ds.Log.RotateBytes != 10<<20 || ds.Log.Keep != 3 {
		t.Fatalf("defaults %+v", ds)
	}
}
