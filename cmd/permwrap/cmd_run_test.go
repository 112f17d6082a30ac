package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/permwrap/permwrap/engine"
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

// The scratch directories are the temporary ones and the cache home,
// never one that holds the home or the workspace.
func TestScratchDirs(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "")
	for _, c := range []struct {
		name string
		env  engine.Env
		want string
	}{
		{"usual", engine.Env{Home: "/home/u", Workspace: "/home/u/p", TmpDir: "/tmp"}, "[/tmp /var/tmp /home/u/.cache]"},
		{"own TMPDIR", engine.Env{Home: "/home/u", Workspace: "/home/u/p", TmpDir: "/run/user/1000/tmp/"}, "[/tmp /var/tmp /run/user/1000/tmp /home/u/.cache]"},
		{"workspace in /tmp", engine.Env{Home: "/home/u", Workspace: "/tmp/w", TmpDir: "/tmp"}, "[/var/tmp /home/u/.cache]"},
		{"TMPDIR is the home", engine.Env{Home: "/home/u", Workspace: "/srv/p", TmpDir: "/home/u"}, "[/tmp /var/tmp /home/u/.cache]"},
		{"TMPDIR is /", engine.Env{Home: "/home/u", Workspace: "/srv/p", TmpDir: "/"}, "[/tmp /var/tmp /home/u/.cache]"},
		{"workspace in the cache", engine.Env{Home: "/home/u", Workspace: "/home/u/.cache/x", TmpDir: "/tmp"}, "[/tmp /var/tmp]"},
	} {
		if got := fmt.Sprint(scratchDirs(c.env)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	t.Setenv("XDG_CACHE_HOME", "/var/cache/u")
	if got := fmt.Sprint(scratchDirs(engine.Env{Home: "/home/u", Workspace: "/home/u/p", TmpDir: "/tmp"})); got != "[/tmp /var/tmp /var/cache/u]" {
		t.Errorf("XDG_CACHE_HOME: %s", got)
	}
}
