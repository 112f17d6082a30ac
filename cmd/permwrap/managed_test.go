package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

// withManagedPolicy points engine.ManagedPolicyPath (a build-time
// setting) at a root-owned file holding content for the test.
func withManagedPolicy(t *testing.T, content string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the managed policy must be owned by root: needs to run as root")
	}
	dir := filepath.Join(t.TempDir(), "etc")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "managed.jsonc")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	old := engine.ManagedPolicyPath
	engine.ManagedPolicyPath = path
	t.Cleanup(func() { engine.ManagedPolicyPath = old })
	return path
}

// TestManagedCommands: check and doctor say the managed policy is in
// force and what it forbids; explain names it as the origin; trust
// refuses when it forbids project trust.
func TestManagedCommands(t *testing.T) {
	path := withManagedPolicy(t, `{
  "permission": {"read": {"~/.ssh/**": "deny"}, "bash": {"git push *": "ask"}},
  "forbid": ["yolo", "projectTrust"]
}`)
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".permwrap"), 0o755)
	os.WriteFile(filepath.Join(ws, ".permwrap", "policy.jsonc"), []byte(`{}`), 0o644)
	cfg := t.TempDir()
	t.Setenv("PERMWRAP_CONFIG_DIR", cfg)
	var out, errb bytes.Buffer
	if code := cmdCheck([]string{"--workspace", ws}, &out, &errb); code != exitOK {
		t.Fatalf("check: %d\n%s", code, errb.String())
	}
	mustHave(t, "check", out.String(), "managed policy: "+path+": in force, 2 rules; forbids yolo, projectTrust")

	out.Reset()
	errb.Reset()
	if code := cmdExplain([]string{"--workspace", ws, "read", "~/.ssh/id_rsa"}, &out, &errb); code == exitInternal {
		t.Fatalf("explain: %d\n%s", code, errb.String())
	}
	mustHave(t, "explain", out.String(), path+":2:27); origin managed, layer managed")

	out.Reset()
	errb.Reset()
	if code := cmdTrust([]string{ws}, &out, &errb); code != exitInternal {
		t.Fatalf("trust: exit %d, want %d\n%s%s", code, exitInternal, out.String(), errb.String())
	}
	mustHave(t, "trust", errb.String(), "refused: the managed policy forbids project trust ("+path+":3:22)")
	if _, err := os.Stat(filepath.Join(cfg, engine.TrustFileName)); err == nil {
		t.Error("trust wrote the trust file")
	}

	out.Reset()
	if code := cmdDoctor(nil, &out, &errb); code == exitInternal && strings.Contains(out.String(), "refuses") {
		t.Fatalf("doctor: %d\n%s", code, out.String())
	}
	mustHave(t, "doctor", out.String(), "managed policy: "+path+": in force, 2 rules; forbids yolo, projectTrust")

	// An unsafe file: doctor says permwrap refuses to run, and why.
	os.Chmod(path, 0o666)
	out.Reset()
	if code := cmdDoctor(nil, &out, &errb); code != exitInternal {
		t.Fatalf("doctor with a world-writable managed policy: exit %d", code)
	}
	mustHave(t, "doctor", out.String(), "writable by group and others (mode 0666)")
}

func mustHave(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s output lacks %q:\n%s", what, sub, s)
	}
}
