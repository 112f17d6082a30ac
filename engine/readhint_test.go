package engine

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadsAlwaysAllowed(t *testing.T) {
	cases := []struct {
		policy string
		want   bool
	}{
		{`{"permission": {"*": "allow"}}`, true},
		{`{"permission": {"*": "ask", "read": "allow"}}`, true},
		{`{"permission": {"*": "ask", "path": {"*": "allow"}}}`, true},
		{`{"permission": {"*": "allow", "read": {"*": "allow", "~/.ssh/**": "deny"}}}`, false},
		{`{"permission": {"*": "allow", "read": {"*.pem": "ask"}}}`, false},
		{`{"permission": {"*": "allow", "path": {"/etc/**": "deny"}}}`, false},
		{`{"permission": {"*": "ask"}}`, false},
		{`{"permission": {"*": "ask", "write": "allow"}}`, false},
		{`{"permission": {"*": "allow", "write": {"/etc/**": "deny"}}}`, true},
	}
	for _, c := range cases {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "policy.jsonc"), []byte(c.policy), 0o644); err != nil {
			t.Fatal(err)
		}
		p, _, err := Load(LoadOptions{ConfigDir: dir, Profile: ExtendsNone, Env: Env{Home: "/home/u", Workspace: "/w", TmpDir: "/tmp"}})
		if err != nil {
			t.Fatalf("%s: %v", c.policy, err)
		}
		if got := p.ReadsAlwaysAllowed(); got != c.want {
			t.Errorf("%s: ReadsAlwaysAllowed = %v, want %v", c.policy, got, c.want)
		}
		// Whatever the hint says must agree with the engine on reads.
		if c.want {
			for _, v := range []string{"/etc/shadow", "/home/u/.ssh/id_rsa", "/w/x.pem", "/"} {
				if r := p.DecidePath(AccessRead, v); r.Action != Allow {
					t.Errorf("%s: hint says reads always allowed, but read %s → %v", c.policy, v, r.Action)
				}
			}
		}
	}
	// The embedded default asks for secrets: reads must be watched.
	p, _, err := Load(LoadOptions{ConfigDir: t.TempDir(), Env: Env{Home: "/home/u", Workspace: "/w", TmpDir: "/tmp"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.ReadsAlwaysAllowed() {
		t.Error("the default policy asks for secret reads; ReadsAlwaysAllowed must be false")
	}
}
