package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The file "always allow" checks against is the one the loader compiled:
// an edit after loading is a change, not the new baseline.
func TestUserPolicyFileIsWhatTheLoaderCompiled(t *testing.T) {
	dir := t.TempDir()
	cfgDir := filepath.Join(dir, "config")
	ws := filepath.Join(dir, "ws")
	for _, d := range []string{cfgDir, ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", dir)
	name := filepath.Join(cfgDir, "policy.jsonc")
	loadedText := []byte(`{ "permission": { "write": { "/x/**": "ask" } } }` + "\n")
	if err := os.WriteFile(name, loadedText, 0o644); err != nil {
		t.Fatal(err)
	}
	var pf policyFlags
	pf.configDir.v, pf.workspace.v = cfgDir, ws
	ld, err := loadPolicy(&pf, filepath.Join(dir, "review.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Someone edits the file after permwrap loaded it.
	if err := os.WriteFile(name, []byte(`{}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := userPolicyFile(cfgDir, ld.policy)
	if f == nil || f.Path != name || !bytes.Equal(f.Loaded, loadedText) {
		t.Fatalf("userPolicyFile = %+v, want %s with the bytes loaded", f, name)
	}

	// No policy.jsonc: nothing loaded, the file starts from the seed.
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
	if ld, err = loadPolicy(&pf, filepath.Join(dir, "review.jsonl")); err != nil {
		t.Fatal(err)
	}
	if f := userPolicyFile(cfgDir, ld.policy); f == nil || f.Loaded != nil || len(f.Seed) == 0 {
		t.Fatalf("without a policy.jsonc: %+v", f)
	}
}
