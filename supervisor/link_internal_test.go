package supervisor

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify/pin"
)

// A hard link the policy would ask about is answered EXDEV (so the
// program copies) only when the new name may be written and the file
// read: a copy then writes only the new name, and reads what the policy
// already lets the sandbox read.
func TestLinkCopyInstead(t *testing.T) {
	p, _, err := engine.Compile(engine.Config{
		Global: &engine.File{Name: "policy.jsonc", Data: []byte(`{ "extends": "none", "permission": { "*": "allow",
  "read":  { "*": "allow", "/src/secret/**": "deny" },
  "write": { "*": "ask", "/w/**": "allow", "/w/.git/hooks/?**": "ask" } } }`)},
		Env: engine.Env{Home: "/home/u", Workspace: "/w", TmpDir: "/tmp"},
	})
	if err != nil {
		t.Fatal(err)
	}
	file := func(path string) *pin.Resolved {
		return &pin.Resolved{Path: path, Exists: true, Stat: unix.Stat_t{Mode: unix.S_IFREG | 0o444}}
	}
	missing := func(path string) *pin.Resolved { return &pin.Resolved{Path: path} }
	for _, tt := range []struct {
		name     string
		from, to *pin.Resolved
		action   engine.Action
		copy     bool
	}{
		{"object of a repository outside the workspace", file("/src/repo.git/objects/7a/5f"), missing("/w/clone/.git/objects/7a/5f"), engine.Ask, true},
		{"a file the sandbox may not read", file("/src/secret/key"), missing("/w/key"), engine.Deny, false},
		{"to a name that asks", file("/src/hook"), missing("/w/.git/hooks/pre-commit"), engine.Ask, false},
		{"within the workspace", file("/w/a"), missing("/w/b"), engine.Allow, false},
		{"missing source", missing("/src/gone"), missing("/w/gone"), engine.Ask, false},
	} {
		c := &linkCall{from: tt.from, to: tt.to}
		v := c.judge(p)
		if v.result.Action != tt.action || c.copyInstead != tt.copy {
			t.Errorf("%s: %v copyInstead=%v, want %v %v", tt.name, v.result.Action, c.copyInstead, tt.action, tt.copy)
		}
		if got := c.kernelAnswer().errno; tt.copy && got != unix.EXDEV {
			t.Errorf("%s: answered %v, want EXDEV", tt.name, got)
		}
	}
}
