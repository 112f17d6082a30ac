package authority

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permwrap/permwrap/engine"
)

var denySSH = engine.Rule{Surface: engine.SurfaceRead, Pattern: "~/.ssh/**", Action: engine.Deny}

func fixedNow() time.Time { return time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC) }

func TestRememberAppends(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "policy.jsonc")
	src := "{\n  // keep me\n  \"permission\": {}\n}\n"
	os.WriteFile(p, []byte(src), 0o600)
	f := &PolicyFile{Path: p, Loaded: []byte(src), now: fixedNow}
	if err := f.Remember([]engine.Rule{denySSH}, "req-1"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	want := "{\n  // keep me\n  \"permission\": {\n    \"read\": {\n      // permwrap: always deny, 2026-05-04, request req-1\n      \"~/.ssh/**\": \"deny\"\n    }\n  }\n}\n"
	if string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	// A second "always" in the same run builds on the first.
	if err := f.Remember([]engine.Rule{{Surface: engine.SurfaceRead, Pattern: "~/.aws/**", Action: engine.Deny}}, "req-2"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !strings.Contains(string(got), `"~/.aws/**": "deny"`) || !strings.Contains(string(got), `"~/.ssh/**": "deny"`) {
		t.Fatalf("second rule:\n%s", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp")); len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// A symlinked policy (a dotfiles repository) stays a symlink; the rule
// goes into the file it points to.
func TestRememberThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "permwrap.jsonc")
	os.MkdirAll(filepath.Dir(real), 0o755)
	src := `{"permission": {"read": {"*": "allow"}}}`
	os.WriteFile(real, []byte(src), 0o644)
	link := filepath.Join(dir, "policy.jsonc")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	f := &PolicyFile{Path: link, Loaded: []byte(src)}
	if err := f.Remember([]engine.Rule{denySSH}, "r"); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	if got, _ := os.ReadFile(real); !strings.Contains(string(got), `"~/.ssh/**": "deny"`) {
		t.Fatalf("target:\n%s", got)
	}
	if st, _ := os.Stat(real); st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
}

func TestRememberRefuses(t *testing.T) {
	src := `{"permission": {}}`
	for _, c := range []struct {
		name  string
		setup func(p string) *PolicyFile
		want  string
	}{
		{"changed since load", func(p string) *PolicyFile {
			os.WriteFile(p, []byte(`{"permission": {"bash": "allow"}}`), 0o600)
			return &PolicyFile{Path: p, Loaded: []byte(src)}
		}, "changed since permwrap loaded it"},
		{"removed since load", func(p string) *PolicyFile {
			return &PolicyFile{Path: p, Loaded: []byte(src)}
		}, "was removed"},
		{"created since start", func(p string) *PolicyFile {
			os.WriteFile(p, []byte(src), 0o600)
			return &PolicyFile{Path: p}
		}, "was created since"},
		{"not parseable", func(p string) *PolicyFile {
			bad := `{"permission": {` // as loaded: a test of the check, not of the loader
			os.WriteFile(p, []byte(bad), 0o600)
			return &PolicyFile{Path: p, Loaded: []byte(bad)}
		}, "cannot be read back"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "policy.jsonc")
			f := c.setup(p)
			before, _ := os.ReadFile(p)
			err := f.Remember([]engine.Rule{denySSH}, "r")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if after, _ := os.ReadFile(p); string(after) != string(before) {
				t.Fatalf("file changed:\n%s", after)
			}
		})
	}
}

// A policy.jsonc that did not exist starts from the seed the caller
// gives (today the embedded default, which a policy.jsonc replaces).
func TestRememberSeedsMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cfg", "policy.jsonc")
	f := &PolicyFile{Path: p, Seed: engine.DefaultPolicy()}
	if err := f.Remember([]engine.Rule{{Surface: engine.SurfaceRead, Pattern: "~/private/**", Action: engine.Deny}}, "r"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), "// permwrap's embedded default policy.") || !strings.Contains(string(got), `"~/private/**": "deny"`) {
		t.Fatalf("seeded file:\n%.300s", got)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
}
