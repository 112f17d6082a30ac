package supervisor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/testutil"
	"github.com/permwrap/permwrap/notify/pin"
)

// writeProgram writes an executable file and returns its identity.
func writeProgram(t *testing.T, p, content string) pin.FileID {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return pin.FileID{Dev: st.Dev, Ino: st.Ino}
}

// TestProgramIDsIndexOffTheExecPath: the index of the programs the policy
// names is built in the background, and the first identity waits for it
// (an exec is never judged without it); a stale index starts a new build
// and serves until that one is done, which then knows a program replaced
// meanwhile.
func TestProgramIDsIndexOffTheExecPath(t *testing.T) {
	dir := t.TempDir()
	git := filepath.Join(dir, "git")
	id1 := writeProgram(t, git, "#!/bin/sh\n")
	ids := newProgramIDs(testPolicy(t, scriptPolicy), dir)
	// A copy of git elsewhere, known by its inode.
	elsewhere := &pin.Resolved{Path: "/w/bin/tool"}
	if got := ids.identity(id1, 10, elsewhere); got != "git" {
		t.Fatalf("first identity: %q, want git (it must wait for the first index)", got)
	}

	// git is replaced (a new inode, another size: written beside it and
	// renamed over it, as an upgrade does) and the index is stale.
	id2 := writeProgram(t, git+".new", "#!/bin/sh\n# upgraded\n")
	if err := os.Rename(git+".new", git); err != nil {
		t.Fatal(err)
	}
	if id2 == id1 {
		t.Fatal("the new git has the old one's inode")
	}
	ids.mu.Lock()
	ids.builtAt = time.Now().Add(-2 * indexTTL)
	ids.mu.Unlock()
	// The call that finds it stale is answered from the old index: the
	// new build can only take its place after the call lets go of it.
	if got := ids.identity(id2, 22, elsewhere); got != "" {
		t.Errorf("identity from the stale index: %q, want \"\" (the new git is not in it)", got)
	}
	deadline := time.Now().Add(testutil.Scale(10 * time.Second))
	for ids.identity(id2, 22, elsewhere) != "git" {
		if time.Now().After(deadline) {
			t.Fatal("the new build never took the stale index's place")
		}
		time.Sleep(time.Millisecond)
	}
	ids.mu.Lock()
	building := ids.building
	ids.mu.Unlock()
	if building {
		t.Error("still building after the new index took its place")
	}
}
