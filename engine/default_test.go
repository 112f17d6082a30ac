package engine

import (
	"bytes"
	"testing"
)

// TestDefaultPolicy pins what the embedded default is for: development in
// the workspace with no prompts, secrets and persistence asking.
func TestDefaultPolicy(t *testing.T) {
	p, warns, err := Compile(Config{Env: testEnv})
	if err != nil || len(warns) != 0 {
		t.Fatalf("default policy does not load: %v %v", err, warns)
	}
	paths := []struct {
		a    Access
		path string
		want Action
	}{
		// The workspace and temp areas.
		{AccessRead | AccessWrite, "/home/u/src/proj/main.go", Allow},
		{AccessWrite, "/home/u/src/proj/internal/x/y.go", Allow},
		{AccessWrite, "/home/u/src/proj", Allow},
		{AccessWrite, "/tmp/u/go-build123/b001/exe", Allow},
		{AccessWrite, "/tmp/x", Allow},
		{AccessWrite, "/var/tmp/x", Allow},
		// Devices that are not files never prompt.
		{AccessWrite, "/dev/null", Allow},
		{AccessRead | AccessWrite, "/dev/tty", Allow},
		{AccessWrite, "/dev/pts/3", Allow},
		{AccessWrite, "/dev/shm/sem.x", Allow},
		// Agent and tool state.
		{AccessWrite, "/home/u/.claude/projects/x.jsonl", Allow},
		{AccessWrite, "/home/u/.claude.json", Allow},
		{AccessWrite, "/home/u/.claude.json.backup", Allow},
		{AccessWrite, "/home/u/.codex/sessions/a", Allow},
		{AccessWrite, "/home/u/.pi/agent/x", Allow},
		{AccessWrite, "/home/u/.cache/go-build/ab/cd", Allow},
		{AccessWrite, "/home/u/.npm/_cacache/x", Allow},
		{AccessWrite, "/home/u/go/pkg/mod/x", Allow},
		{AccessWrite, "/home/u/.cargo/registry/x", Allow},
		{AccessWrite, "/home/u/.config/nvim/init.lua", Allow},
		{AccessWrite, "/home/u/.local/share/x", Allow},
		{AccessWrite, "/home/u/.bash_history", Allow},
		// Writes elsewhere ask.
		{AccessWrite, "/etc/hosts", Ask},
		{AccessWrite, "/usr/local/bin/tool", Ask},
		{AccessWrite, "/home/u/notes.txt", Ask},
		{AccessWrite, "/home/u/src/other/x", Ask},
		// Persistence asks even inside allowed trees.
		{AccessWrite, "/home/u/.bashrc", Ask},
		{AccessWrite, "/home/u/.profile", Ask},
		{AccessWrite, "/home/u/.zshrc", Ask},
		{AccessWrite, "/home/u/.gitconfig", Ask},
		{AccessWrite, "/home/u/.ssh/authorized_keys", Ask},
		{AccessWrite, "/home/u/.config/gh/hosts.yml", Ask},
		{AccessWrite, "/home/u/.config/git/config", Ask},
		{AccessWrite, "/home/u/src/proj/.git/hooks/pre-commit", Ask},
		{AccessWrite, "/home/u/src/proj/vendor/sub/.git/hooks/post-checkout", Ask},
		{AccessWrite, "/tmp/clone/.git/hooks/pre-push", Ask},
		{AccessWrite, "/home/u/src/other/.git/hooks/x", Ask},
		// Ordinary git state in the workspace does not prompt.
		{AccessWrite, "/home/u/src/proj/.git/index", Allow},
		{AccessWrite, "/home/u/src/proj/.git/refs/heads/main", Allow},
		// Reads are allowed except secrets.
		{AccessRead, "/etc/passwd", Allow},
		{AccessRead, "/usr/lib/x86_64-linux-gnu/libc.so.6", Allow},
		{AccessRead, "/home/u/src/proj/go.mod", Allow},
		{AccessRead, "/home/u/.ssh/id_ed25519", Ask},
		{AccessRead, "/home/u/.ssh", Ask},
		{AccessRead, "/home/u/.aws/credentials", Ask},
		{AccessRead, "/home/u/.gnupg/private-keys-v1.d/x.key", Ask},
		{AccessRead, "/home/u/.config/gh/hosts.yml", Ask},
		{AccessRead, "/home/u/.netrc", Ask},
		{AccessRead, "/home/u/.docker/config.json", Ask},
		{AccessRead, "/home/u/.kube/config", Ask},
		{AccessRead, "/home/u/src/proj/.env", Ask},
		{AccessRead, "/home/u/src/proj/.env.production", Ask},
		{AccessRead, "/home/u/src/proj/certs/server.pem", Ask},
		{AccessRead, "/srv/tls/server.key", Ask},
		{AccessRead, "/backup/id_rsa", Ask},
		{AccessRead, "/home/u/.config/nvim/init.lua", Allow},
		// Programs run.
		{AccessExec, "/usr/bin/git", Allow},
		{AccessExec, "/home/u/src/proj/bin/tool", Allow},
	}
	for _, tt := range paths {
		r := p.DecidePath(tt.a, tt.path)
		if r.Action != tt.want {
			t.Errorf("%v %s = %v, want %v", tt.a, tt.path, r, tt.want)
		}
		if r.Action == Allow && r.Rule.Origin != OriginDefault {
			t.Errorf("%v %s: origin %v, want default", tt.a, tt.path, r.Rule.Origin)
		}
	}
	commands := []struct {
		line string
		want Action
	}{
		{"go test ./...", Allow},
		{"npm run dev", Allow},
		{"git commit -m 'x'", Allow},
		{"rm -rf build", Allow},
		{"rm -rf /tmp/x", Allow},
		{"git push", Ask},
		{"git push origin main", Ask},
		{"git push --force origin main", Ask},
		{"git push -f", Ask},
		{"rm -rf /", Deny},
		{"rm -rf / --no-preserve-root", Deny},
		{"rm -rf /*", Deny},
		{"rm -rf ~", Deny},
		{"rm -rf ~/*", Deny},
		// Not named by the default: parts only known at run time are
		// judged as they run (the catch-all matches, but a sentinel
		// counts only when a rule names it: see TestDecideExecSentinels).
		{"<opaque-shell-wrapper>", Allow},
		{"<unparseable-shell-script>", Allow},
	}
	for _, tt := range commands {
		if r := p.Evaluate(Check{SurfaceBash, tt.line}); r.Action != tt.want {
			t.Errorf("bash %q = %v, want %v", tt.line, r, tt.want)
		}
	}
	// A deep workspace must not outrank the hooks rule.
	deep := testEnv
	deep.Workspace = "/home/u/src/github.com/some-organisation/a-rather-long-repository-name"
	q, _, err := Compile(Config{Env: deep})
	if err != nil {
		t.Fatal(err)
	}
	if r := q.DecidePath(AccessWrite, deep.Workspace+"/.git/hooks/pre-commit"); r.Action != Ask {
		t.Errorf("deep workspace hooks: %v", r)
	}
	// With the workspace being the home directory, start-up files still ask.
	home := testEnv
	home.Workspace = home.Home
	q, _, _ = Compile(Config{Env: home})
	for _, path := range []string{"/home/u/.bashrc", "/home/u/.ssh/config", "/home/u/.gitconfig", "/home/u/.git/hooks/x"} {
		if r := q.DecidePath(AccessWrite, path); r.Action != Ask {
			t.Errorf("workspace=home: write %s = %v", path, r)
		}
	}
	// Writes anywhere may ask, so the Landlock floor cannot narrow them.
	if f := p.LandlockFloor(); !f.WriteAnywhere {
		t.Errorf("default floor %+v, want WriteAnywhere", f)
	}
	// Yolo lifts the default's asks but not its denies.
	y, _, _ := Compile(Config{Env: testEnv, Yolo: true})
	if r := y.DecidePath(AccessWrite, "/etc/hosts"); r.Action != Allow {
		t.Errorf("yolo: %v", r)
	}
	if r := y.Evaluate(Check{SurfaceBash, "rm -rf /"}); r.Action != Deny {
		t.Errorf("yolo: %v", r)
	}
}

func TestDefaultPolicyBytes(t *testing.T) {
	got := DefaultPolicy()
	if !bytes.Equal(got, defaultPolicy) || len(got) == 0 {
		t.Fatal("DefaultPolicy differs from the embedded file")
	}
	got[0] ^= 0xff // callers cannot corrupt the embedded copy
	if bytes.Equal(got, defaultPolicy) {
		t.Fatal("DefaultPolicy returned the embedded slice itself")
	}
}
