package engine

import (
	"os"
	"path/filepath"
	"strings"
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

// TestListingsFree: listings are free unless the global policy says
// "judged" (a profile's value is layered over like any setting), and a
// run whose scope failed to load judges them (fail-closed). explain and
// check say which.
func TestListingsFree(t *testing.T) {
	for _, c := range []struct {
		src  string
		want bool
	}{
		{`{}`, true},
		{`{"listings": "free"}`, true},
		{`{"listings": "judged"}`, false},
		{`{"listings": "judged", "permission": {"read": {"*": "allow"}}}`, false},
	} {
		p, _ := compile(t, c.src)
		if got := p.ListingsFree(); got != c.want {
			t.Errorf("%s: ListingsFree = %v, want %v", c.src, got, c.want)
		}
		word := "directory listings judged"
		if c.want {
			word = "directory listings not judged (listings: free)"
		}
		if !strings.Contains(p.Summary(), word) {
			t.Errorf("%s: summary %q does not say %q", c.src, p.Summary(), word)
		}
	}
	dir := t.TempDir()
	p, _, err := Load(LoadOptions{ConfigDir: dir, Scopes: []string{filepath.Join(dir, "missing.jsonc")}, ScopesOptional: true, Env: testEnv})
	if err != nil || !p.failClosed {
		t.Fatalf("a missing optional scope: %v, fail-closed %v", err, p != nil && p.failClosed)
	}
	if p.ListingsFree() {
		t.Error("a fail-closed run leaves listings free")
	}
	free, _ := compile(t, `{"permission": {"read": {"*": "allow", "/home/u/keys/**": "ask"}}}`)
	judged, _ := compile(t, `{"listings": "judged", "permission": {"read": {"*": "allow", "/home/u/keys/**": "ask"}}}`)
	check := Check{Surface: SurfaceRead, Value: "/home/u/keys"}
	if n := strings.Join(free.Explain(check).Notes, "\n"); !strings.Contains(n, `listing it (its names, as ls or find read them) is not judged: "listings" is "free"`) {
		t.Errorf("explain under free listings: notes %q", n)
	}
	if n := strings.Join(judged.Explain(check).Notes, "\n"); !strings.Contains(n, `listing it is judged like this read ("listings": "judged")`) {
		t.Errorf("explain under judged listings: notes %q", n)
	}
	if n := strings.Join(free.Explain(Check{Surface: SurfaceRead, Value: "/home/u/src"}).Notes, "\n"); strings.Contains(n, "listing") {
		t.Errorf("an allowed read needs no note on listings: %q", n)
	}
}
