package supervisor_test

import (
	"os"
	"testing"
)

// TestSymlinkJudgedAsMove: a symlink's name may be allowed while what
// lies beneath it is not (the default policy allows creating
// `.git/hooks` for git init but asks for every hook in it). A symlink
// there would make everything beneath reach a laxer place, so it is
// judged as a move (engine.DecideMove) and refused; the same symlink
// elsewhere, and the directory itself, still work. Each script first
// runs bare, where it must succeed.
func TestSymlinkJudgedAsMove(t *testing.T) {
	s := newSandbox(t, `{"permission": {"*": "allow",
		"write": {"*": "allow", "${WORKSPACE}/hk/?**": {"action": "deny", "reason": "hooks"}},
		"bash": {"*": "allow"}}}`)
	cases := []struct {
		name, script string
		ok           bool
	}{
		{"the directory itself", "mkdir hk && rmdir hk", true},
		{"a file beneath", "mkdir -p hk && echo x > hk/f", false},
		{"the directory as a symlink to a writable place", "ln -s elsewhere hk", false},
		{"the same symlink elsewhere", "ln -s elsewhere other && rm other", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range []string{"hk", "other", "elsewhere"} {
				os.RemoveAll(s.path(p))
			}
			if err := os.MkdirAll(s.path("elsewhere"), 0o755); err != nil {
				t.Fatal(err)
			}
			if r := s.bare("bash", "-c", c.script); r.code != 0 {
				t.Fatalf("bare %q: exit %d: %s", c.script, r.code, r.stderr)
			}
			for _, p := range []string{"hk", "other"} {
				os.RemoveAll(s.path(p))
			}
			r := s.run("bash", "-c", c.script)
			if (r.code == 0) != c.ok {
				t.Errorf("%q under permwrap: exit %d, want success=%v\n%s", c.script, r.code, c.ok, r.stderr)
			}
			if !c.ok {
				if fi, err := os.Lstat(s.path("hk")); err == nil && fi.Mode()&os.ModeSymlink != 0 {
					t.Errorf("%q: the symlink was created", c.script)
				}
			}
		})
	}
}
