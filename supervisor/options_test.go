package supervisor_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The policy, on real git under the kernel: a push to origin is
// allowed whatever its options, a force push is denied however it is
// written, and nothing reaches the remote when it is. Headless, so an
// ask would be a denial; the remote's directory is allowed for writes so
// that only the command rule is tested.
func TestOptionRulesOnRealGit(t *testing.T) {
	need(t, "git")
	s := newSandbox(t, "")
	remote := filepath.Join(s.dir, "remote.git")
	policy := `{ "permission": {
  "bash": { "git push origin *": "allow", "git push --force*": "deny" },
  "write": { "` + remote + `/**": "allow" } } }`
	if err := os.WriteFile(filepath.Join(s.configDir, "policy.jsonc"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		r := s.bare(append([]string{"git", "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if r.code != 0 {
			t.Fatalf("bare git %q: %s", args, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	git("init", "-q", "-b", "main", ".")
	git("init", "-q", "--bare", remote)
	git("remote", "add", "origin", remote)
	git("commit", "-q", "--allow-empty", "-m", "one")

	// Allowed: options the rule does not name, anywhere.
	for _, argv := range [][]string{
		{"git", "push", "-q", "origin", "main"},
		{"git", "push", "origin", "main", "--quiet"},
		{"bash", "-c", "git push -q origin main"},
	} {
		r := s.run(argv...)
		if r.code != 0 {
			t.Fatalf("%q: exit %d under permwrap, want the push allowed:\n%s", argv, r.code, r.stderr)
		}
		if strings.Contains(r.stderr, "permwrap: denied") {
			t.Errorf("%q: a denial:\n%s", argv, r.stderr)
		}
	}
	pushed := git("--git-dir", remote, "rev-parse", "main")
	if pushed != git("rev-parse", "main") {
		t.Fatalf("the remote has %s, not the pushed commit", pushed)
	}

	// A rewritten history needs a force push: each way of writing one
	// is denied before git runs, and the remote keeps its commit.
	git("commit", "-q", "--amend", "--allow-empty", "-m", "rewritten")
	for _, argv := range [][]string{
		{"git", "push", "--force", "origin", "main"},
		{"git", "push", "origin", "main", "--force"},
		{"git", "push", "-f", "origin", "main"},
		{"git", "push", "-qf", "origin", "main"},
		{"git", "push", "origin", "+main"},
		{"git", "push", "--forc", "origin", "main"},
		{"git", "push", "--force-with-lease", "origin", "main"},
		{"git", "push", "--force-w", "origin", "main"},
		{"bash", "-c", "git push origin main -f"},
	} {
		r := s.run(argv...)
		if r.code == 0 {
			t.Errorf("%q: exit 0, want the force push denied", argv)
		}
		mustContain(t, strings.Join(argv, " "), r.stderr, "permwrap: denied")
		mustContain(t, strings.Join(argv, " "), r.stderr, "rule bash:git push --force*")
		if got := git("--git-dir", remote, "rev-parse", "main"); got != pushed {
			t.Fatalf("%q: the remote moved to %s", argv, got)
		}
	}
	// Without permwrap, git takes an abbreviation (--forc it refuses as
	// ambiguous, --force-w is --force-with-lease): the rule had to.
	if r := s.bare("git", "push", "-q", "--force-w", "origin", "main"); r.code != 0 {
		t.Fatalf("bare git push --force-w: %s", r.stderr)
	}
	if git("--git-dir", remote, "rev-parse", "main") == pushed {
		t.Fatal("bare git push --force-w did not force the update")
	}
}
