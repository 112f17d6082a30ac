package engine

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"strings"
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
		// A process's own user-namespace maps (unshare -Ur).
		{AccessWrite, "/proc/4242/uid_map", Allow},
		{AccessWrite, "/proc/4242/gid_map", Allow},
		{AccessWrite, "/proc/4242/setgroups", Allow},
		{AccessWrite, "/proc/4242/oom_score_adj", Ask},
		// Memory: its own, or a tracee's (gdb).
		{AccessRead | AccessWrite, "/proc/4242/mem", Allow},
		{AccessRead | AccessWrite, "/proc/4242/task/4243/mem", Allow},
		// Agent and tool state.
		{AccessWrite, "/home/u/.claude/projects/x.jsonl", Allow},
		{AccessWrite, "/home/u/.claude/.credentials.json", Allow},
		{AccessWrite, "/home/u/.claude/CLAUDE.md", Allow},
		{AccessWrite, "/home/u/.claude.json", Allow},
		{AccessWrite, "/home/u/.claude.json.backup", Allow},
		{AccessWrite, "/home/u/.codex/sessions/a", Allow},
		{AccessWrite, "/home/u/.codex/auth.json", Allow},
		{AccessWrite, "/home/u/.pi/agent/sessions/x", Allow},
		{AccessWrite, "/home/u/.cache/go-build/ab/cd", Allow},
		{AccessWrite, "/home/u/.cache/pip/http/x", Allow},
		{AccessWrite, "/home/u/.npm/_cacache/x", Allow},
		{AccessWrite, "/home/u/go/pkg/mod/x", Allow},
		{AccessWrite, "/home/u/.cargo/registry/x", Allow},
		{AccessWrite, "/home/u/.cargo/.package-cache", Allow},
		{AccessWrite, "/home/u/.rustup/toolchains/stable/lib/x", Allow},
		{AccessWrite, "/home/u/.local/share/x", Allow},
		{AccessWrite, "/home/u/.local/share/pnpm/store/v3/x", Allow},
		{AccessWrite, "/home/u/.local/share/nvim/shada/main.shada", Allow},
		{AccessWrite, "/home/u/.local/state/nvim/swap/x", Allow},
		{AccessWrite, "/home/u/.config/go/telemetry/local/go@1.26.count", Allow},
		{AccessWrite, "/home/u/.config/configstore/update-notifier-npm.json", Allow},
		{AccessWrite, "/home/u/.ipython/profile_default/history.sqlite", Allow},
		{AccessWrite, "/home/u/.bash_history", Allow},
		{AccessWrite, "/home/u/.viminfo", Allow},
		{AccessWrite, "/home/u/.viminfz.tmp", Allow},
		{AccessWrite, "/home/u/.vim/.netrwhist", Allow},
		{AccessWrite, "/home/u/.wget-hsts", Allow},
		// less's temporary history file, renamed over ~/.lesshst; no
		// other name like it.
		{AccessWrite, "/home/u/.lesshst", Allow},
		{AccessWrite, "/home/u/.lesshsQ", Allow},
		{AccessWrite, "/home/u/.lesshsX", Ask},
		{AccessWrite, "/home/u/.lesshsQQ", Ask},
		{AccessWrite, "/home/u/src/other/.lesshsQ", Ask},
		// Public keys are read, never written without asking.
		{AccessWrite, "/home/u/.ssh/id_ed25519.pub", Ask},
		// Writes elsewhere ask.
		{AccessWrite, "/etc/hosts", Ask},
		{AccessWrite, "/usr/local/bin/tool", Ask},
		{AccessWrite, "/home/u/notes.txt", Ask},
		{AccessWrite, "/home/u/src/other/x", Ask},
		// ~/.config is no longer writable wholesale.
		{AccessWrite, "/home/u/.config/nvim/init.lua", Ask},
		{AccessWrite, "/home/u/.config/pip/pip.conf", Ask},
		{AccessWrite, "/home/u/.config/environment.d/x.conf", Ask},
		{AccessWrite, "/home/u/.config/some-tool/config.toml", Ask},
		{AccessWrite, "/home/u/.config/go/env", Ask},
		// permwrap's own policy and log are never written.
		{AccessWrite, "/home/u/.config/permwrap/policy.jsonc", Deny},
		{AccessWrite, "/home/u/.config/permwrap/hard-guards.jsonc", Deny},
		{AccessWrite, "/home/u/.local/state/permwrap/review.jsonl", Deny},
		{AccessRead, "/home/u/.config/permwrap/policy.jsonc", Allow},
		// Code that runs later asks, even inside allowed trees.
		{AccessWrite, "/home/u/.bashrc", Ask},
		{AccessWrite, "/home/u/.bash_aliases", Ask},
		{AccessWrite, "/home/u/.profile", Ask},
		{AccessWrite, "/home/u/.zshrc", Ask},
		{AccessWrite, "/home/u/.config/fish/config.fish", Ask},
		{AccessWrite, "/home/u/.local/share/fish/vendor_conf.d/x.fish", Ask},
		{AccessWrite, "/home/u/.gitconfig", Ask},
		{AccessWrite, "/home/u/.config/git/config", Ask},
		{AccessWrite, "/home/u/.ssh/authorized_keys", Ask},
		{AccessWrite, "/home/u/.ssh/config", Ask},
		{AccessWrite, "/home/u/.config/gh/hosts.yml", Ask},
		{AccessWrite, "/home/u/.claude/settings.json", Ask},
		{AccessWrite, "/home/u/.claude/settings.local.json", Ask},
		{AccessWrite, "/home/u/.claude/hooks/format.sh", Ask},
		{AccessWrite, "/home/u/.claude/plugins/marketplaces/x/hooks/hooks.json", Ask},
		{AccessWrite, "/home/u/.codex/config.toml", Ask},
		{AccessWrite, "/home/u/.codex/hooks.json", Ask},
		{AccessWrite, "/home/u/.codex/rules/default.rules", Ask},
		{AccessWrite, "/home/u/.pi/agent/extensions/x.ts", Ask},
		{AccessWrite, "/home/u/.cargo/config.toml", Ask},
		{AccessWrite, "/home/u/.cargo/config", Ask},
		{AccessWrite, "/home/u/.cargo/bin/rg", Ask},
		{AccessWrite, "/home/u/.cargo/env", Ask},
		{AccessWrite, "/home/u/go/bin/tool", Ask},
		{AccessWrite, "/home/u/.bun/bin/bun", Ask},
		{AccessWrite, "/home/u/.local/bin/tool", Ask},
		{AccessWrite, "/home/u/.local/lib/python3.12/site-packages/evil.pth", Ask},
		{AccessWrite, "/home/u/.local/share/applications/x.desktop", Ask},
		{AccessWrite, "/home/u/.local/share/systemd/user/x.service", Ask},
		{AccessWrite, "/home/u/.config/systemd/user/x.service", Ask},
		{AccessWrite, "/home/u/.config/autostart/x.desktop", Ask},
		{AccessWrite, "/home/u/.local/share/dbus-1/services/x.service", Ask},
		{AccessWrite, "/home/u/.local/share/direnv/allow/abc", Ask},
		{AccessWrite, "/home/u/.local/share/nvim/site/plugin/x.lua", Ask},
		{AccessWrite, "/home/u/.local/share/pnpm/tsc", Ask},
		{AccessWrite, "/home/u/.local/share/keyrings/login.keyring", Ask},
		{AccessWrite, "/home/u/.local/share/jupyter/kernels/py/kernel.json", Ask},
		{AccessWrite, "/home/u/.ipython/profile_default/startup/00.py", Ask},
		{AccessWrite, "/home/u/.ipython/profile_default/ipython_config.py", Ask},
		{AccessWrite, "/home/u/.gradle/init.d/x.gradle", Ask},
		{AccessWrite, "/home/u/.gradle/gradle.properties", Ask},
		{AccessWrite, "/home/u/.m2/settings.xml", Ask},
		{AccessWrite, "/home/u/.npmrc", Ask},
		{AccessWrite, "/home/u/.vimrc", Ask},
		{AccessWrite, "/home/u/.vim/plugin/x.vim", Ask},
		// In the workspace and other projects.
		{AccessWrite, "/home/u/src/proj/.claude/settings.json", Ask},
		{AccessWrite, "/home/u/src/proj/.claude/settings.local.json", Ask},
		{AccessWrite, "/home/u/src/proj/.claude/commands/x.md", Allow},
		{AccessWrite, "/home/u/src/proj/.codex/config.toml", Ask},
		{AccessWrite, "/home/u/src/proj/.codex/hooks.json", Ask},
		{AccessWrite, "/home/u/src/proj/.mcp.json", Ask},
		{AccessWrite, "/tmp/x/.claude/settings.json", Ask},
		{AccessWrite, "/tmp/x/.mcp.json", Ask},
		// Git hooks ask; git's own inactive samples and the directory do not.
		{AccessWrite, "/home/u/src/proj/.git/hooks/pre-commit", Ask},
		{AccessWrite, "/home/u/src/proj/.git/hooks/sub/x", Ask},
		{AccessWrite, "/home/u/src/proj/vendor/sub/.git/hooks/post-checkout", Ask},
		{AccessWrite, "/tmp/clone/.git/hooks/pre-push", Ask},
		{AccessWrite, "/var/tmp/clone/.git/hooks/pre-push", Ask},
		{AccessWrite, "/home/u/src/other/.git/hooks/x", Ask},
		{AccessWrite, "/home/u/src/proj/.git/modules/lib/hooks/pre-commit", Ask},
		{AccessWrite, "/home/u/src/proj/.git/modules/a/modules/b/hooks/pre-commit", Ask},
		{AccessWrite, "/home/u/src/proj/.git/hooks", Allow},
		{AccessWrite, "/home/u/src/proj/.git/hooks/pre-commit.sample", Allow},
		{AccessWrite, "/home/u/src/proj/.git/hooks/fsmonitor-watchman.sample", Allow},
		{AccessWrite, "/tmp/clone/.git/hooks/pre-push.sample", Allow},
		{AccessWrite, "/home/u/src/proj/.git/modules/lib/hooks/update.sample", Allow},
		{AccessWrite, "/home/u/src/proj/.git/modules/lib/hooks", Allow},
		// Ordinary git state in the workspace does not prompt (.git/config
		// included: git init, clone and remote add write it; see
		// docs/policy.md for what that leaves open).
		{AccessWrite, "/home/u/src/proj/.git/index", Allow},
		{AccessWrite, "/home/u/src/proj/.git/config", Allow},
		{AccessWrite, "/home/u/src/proj/.git/refs/heads/main", Allow},
		{AccessWrite, "/home/u/src/proj/.git/info/exclude", Allow},
		// Reads are allowed except secrets.
		{AccessRead, "/etc/passwd", Allow},
		{AccessRead, "/usr/lib/x86_64-linux-gnu/libc.so.6", Allow},
		{AccessRead, "/home/u/src/proj/go.mod", Allow},
		{AccessRead, "/home/u/.ssh/id_ed25519", Ask},
		{AccessRead, "/home/u/.ssh", Ask},
		{AccessRead, "/home/u/.ssh/known_hosts", Ask},
		{AccessRead, "/home/u/.ssh/authorized_keys", Ask},
		{AccessRead, "/home/u/.ssh/config", Ask},
		{AccessRead, "/home/u/.ssh/id_ed25519.pub.bak", Ask},
		{AccessRead, "/root/.ssh/id_rsa", Ask},
		{AccessRead, "/etc/ssh/ssh_host_ed25519_key", Ask},
		{AccessRead, "/etc/ssh/ssh_host_ed25519_key.pub", Allow},
		{AccessRead, "/home/u/.aws/credentials", Ask},
		{AccessRead, "/home/u/.aws/sso/cache/x.json", Ask},
		{AccessRead, "/home/u/.azure/msal_token_cache.json", Ask},
		{AccessRead, "/home/u/.config/gcloud/application_default_credentials.json", Ask},
		{AccessRead, "/home/u/.gnupg/private-keys-v1.d/x.key", Ask},
		{AccessRead, "/home/u/.password-store/x.gpg", Ask},
		{AccessRead, "/home/u/.config/gh/hosts.yml", Ask},
		{AccessRead, "/home/u/.config/github-copilot/apps.json", Ask},
		{AccessRead, "/home/u/.netrc", Ask},
		{AccessRead, "/home/u/.pgpass", Ask},
		{AccessRead, "/home/u/.pypirc", Ask},
		{AccessRead, "/home/u/.git-credentials", Ask},
		{AccessRead, "/home/u/.config/git/credentials", Ask},
		{AccessRead, "/home/u/.cargo/credentials.toml", Ask},
		{AccessRead, "/home/u/.cargo/credentials", Ask},
		{AccessRead, "/home/u/.gem/credentials", Ask},
		{AccessRead, "/home/u/.terraform.d/credentials.tfrc.json", Ask},
		{AccessRead, "/home/u/.vault-token", Ask},
		{AccessRead, "/home/u/.local/share/keyrings/login.keyring", Ask},
		{AccessRead, "/home/u/.docker/config.json", Ask},
		{AccessRead, "/home/u/.config/containers/auth.json", Ask},
		{AccessRead, "/run/user/1000/containers/auth.json", Ask},
		{AccessRead, "/home/u/.kube/config", Ask},
		{AccessRead, "/home/u/.m2/settings-security.xml", Ask},
		{AccessRead, "/etc/shadow", Ask},
		{AccessRead, "/home/u/src/proj/release.p12", Ask},
		{AccessRead, "/home/u/src/proj/android/app/release.jks", Ask},
		{AccessRead, "/home/u/.config/nvim/init.lua", Allow},
		{AccessRead, "/home/u/.gitconfig", Allow},
		{AccessRead, "/home/u/.claude/.credentials.json", Allow}, // the agent's own; see docs/policy.md
		{AccessRead, "/home/u/src/proj/.env.example", Allow},
		{AccessRead, "/home/u/src/proj/.env.sample", Allow},
		{AccessRead, "/home/u/src/proj/.env.template", Allow},
		{AccessRead, "/usr/lib/python3.12/secrets.py", Allow},
		{AccessRead, "/usr/lib/python3.12/__pycache__/secrets.cpython-312.pyc", Allow},
		{AccessRead, "/home/u/.docker/buildx/current", Allow},
		// Programs run.
		{AccessExec, "/usr/bin/git", Allow},
		{AccessExec, "/home/u/src/proj/bin/tool", Allow},
	}
	for _, tt := range paths {
		r := p.DecidePath(tt.a, tt.path)
		if r.Action != tt.want || r.DependsOnContent {
			t.Errorf("%v %s = %v, want %v", tt.a, tt.path, r, tt.want)
		}
		if r.Action == Allow && r.Rule.Origin != OriginDefault {
			t.Errorf("%v %s: origin %v, want default", tt.a, tt.path, r.Rule.Origin)
		}
	}
	// Files that hold secrets only sometimes: the answer depends on what
	// is in them. Asked strictly until looked at; then a secret asks and
	// anything else is read.
	byContent := []string{
		"/home/u/.npmrc",
		"/home/u/src/proj/.npmrc",
		"/home/u/src/proj/.yarnrc.yml",
		"/home/u/.config/pip/pip.conf",
		"/home/u/.m2/settings.xml",
		"/home/u/.gradle/gradle.properties",
		"/home/u/.my.cnf",
		"/home/u/src/proj/.env",
		"/home/u/src/proj/.env.production",
		"/home/u/src/proj/.env.local",
		"/home/u/src/proj/certs/server.pem",
		"/venv/lib/python3.12/site-packages/certifi/cacert.pem",
		"/etc/ssl/certs/ISRG_Root_X1.pem",
		"/home/u/src/proj/testdata/server.pem",
		"/srv/tls/server.key",
		"/home/u/src/proj/config/master.key",
		"/backup/id_rsa",
		"/backup/id_ed25519.pub",
		// Public keys in ~/.ssh (anyone's): read unless what is in them
		// looks secret (a private key saved under a .pub name).
		"/home/u/.ssh/id_ed25519.pub",
		"/home/u/.ssh/id_rsa.pub",
		"/home/u/.ssh/work.pub",
		"/root/.ssh/id_rsa.pub",
		"/home/other/.ssh/id_ed25519.pub",
		"/home/u/src/proj/credentials.json",
		"/home/u/go/pkg/mod/github.com/aws/aws-sdk-go@v1.0.0/aws/credentials",
		"/home/u/src/proj/k8s/secrets.yaml",
		"/home/u/src/proj/deploy/secrets",
	}
	for _, path := range byContent {
		r := p.DecidePath(AccessRead, path)
		if r.Action != Ask || !r.DependsOnContent {
			t.Errorf("read %s = %v, want ask depending on content", path, r)
		}
		if r := p.DecidePathContent(AccessRead, path, true); r.Action != Ask || r.Rule.Reason == "" {
			t.Errorf("read %s (secret) = %v, want ask with a reason", path, r)
		}
		if r := p.DecidePathContent(AccessRead, path, false); r.Action != Allow {
			t.Errorf("read %s (not secret) = %v, want allow", path, r)
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
	if r := y.DecidePath(AccessWrite, "/home/u/.config/permwrap/policy.jsonc"); r.Action != Deny {
		t.Errorf("yolo: %v", r)
	}
}

// TestDefaultPolicyEnvironments: the rules that must hold anywhere hold
// however long the workspace or TMPDIR is, and when the workspace is the
// home directory.
func TestDefaultPolicyEnvironments(t *testing.T) {
	envs := map[string]Env{
		"deep workspace": {Home: "/home/u", Workspace: "/home/u/src/github.com/some-organisation/a-rather-long-repository-name", TmpDir: "/tmp"},
		"long TMPDIR":    {Home: "/home/u", Workspace: "/srv/w", TmpDir: "/tmp/user/1000/a-long-private-temp-directory"},
		"workspace=home": {Home: "/home/u", Workspace: "/home/u", TmpDir: "/tmp"},
		"workspace=/tmp": {Home: "/home/u", Workspace: "/tmp/work", TmpDir: "/tmp"},
	}
	for name, env := range envs {
		p, _, err := Compile(Config{Env: env})
		if err != nil {
			t.Fatal(err)
		}
		ask := []string{}
		allow := []string{}
		for _, tree := range []string{env.Workspace, env.TmpDir} {
			ask = append(ask,
				tree+"/.git/hooks/pre-commit", tree+"/sub/.git/hooks/pre-commit",
				tree+"/.git/modules/m/hooks/post-checkout",
				tree+"/.claude/settings.json", tree+"/p/.claude/settings.local.json",
				tree+"/.codex/config.toml", tree+"/.mcp.json")
			allow = append(allow, tree+"/.git/hooks", tree+"/.git/hooks/pre-commit.sample",
				tree+"/.git/modules/m/hooks/update.sample", tree+"/src/main.go", tree+"/.git/config")
		}
		if name == "workspace=home" {
			ask = append(ask, "/home/u/.bashrc", "/home/u/.ssh/config", "/home/u/.gitconfig", "/home/u/.local/bin/x",
				"/home/u/.config/systemd/user/x.service", "/home/u/.vimrc", "/home/u/.npmrc", "/home/u/bin/x",
				"/home/u/.config/git/config", "/home/u/.claude/settings.json")
		}
		for _, path := range ask {
			if r := p.DecidePath(AccessWrite, path); r.Action != Ask {
				t.Errorf("%s: write %s = %v, want ask", name, path, r)
			}
		}
		for _, path := range allow {
			if r := p.DecidePath(AccessWrite, path); r.Action != Allow {
				t.Errorf("%s: write %s = %v, want allow", name, path, r)
			}
		}
		if r := p.DecidePath(AccessWrite, "/home/u/.config/permwrap/policy.jsonc"); r.Action != Deny {
			t.Errorf("%s: permwrap policy write = %v", name, r)
		}
	}
}

// TestDefaultGitTemplateHooks: what `git init`, `git clone` and
// `git submodule add` write under the default policy (the file names come
// from git's template directory when the machine has one), and that
// turning a sample into a hook still asks, by rename or by link.
func TestDefaultGitTemplateHooks(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	samples := []string{"pre-commit.sample", "pre-push.sample", "commit-msg.sample", "fsmonitor-watchman.sample"}
	if ents, err := os.ReadDir("/usr/share/git-core/templates/hooks"); err == nil {
		samples = samples[:0]
		for _, e := range ents {
			samples = append(samples, e.Name())
		}
	}
	for _, gitDir := range []string{"/home/u/src/proj/.git", "/home/u/src/proj/.git/modules/lib", "/tmp/u/clone/.git"} {
		for _, path := range []string{gitDir, gitDir + "/hooks", gitDir + "/info", gitDir + "/info/exclude", gitDir + "/description", gitDir + "/config", gitDir + "/HEAD"} {
			if r := p.DecidePath(AccessWrite, path); r.Action != Allow {
				t.Errorf("git writes %s: %v", path, r)
			}
		}
		for _, s := range samples {
			if !strings.HasSuffix(s, ".sample") {
				t.Errorf("git's template holds %s, which is not a sample: it would ask", s)
				continue
			}
			sample := gitDir + "/hooks/" + s
			if r := p.DecidePath(AccessWrite, sample); r.Action != Allow {
				t.Errorf("git writes %s: %v", sample, r)
			}
			hook := gitDir + "/hooks/" + strings.TrimSuffix(s, ".sample")
			if r := p.DecidePath(AccessWrite, hook); r.Action != Ask {
				t.Errorf("a hook %s: %v", hook, r)
			}
			for _, m := range []Move{
				{Kind: MoveRename, From: sample, To: hook},
				{Kind: MoveLink, From: sample, To: hook},
				{Kind: MoveSymlink, From: sample, To: hook},
			} {
				if r := p.DecideMove(m); r.Action != Ask {
					t.Errorf("%v: %v", m, r)
				}
			}
		}
	}
}

// TestDefaultPolicyDocumented: every rule of the default appears in the
// table of docs/policy.md, so the page says what the policy does.
func TestDefaultPolicyDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	check := func(r *compiledRule) {
		pat := r.Pattern
		if seen[pat] {
			return
		}
		seen[pat] = true
		if !bytes.Contains(doc, []byte("`"+pat+"`")) {
			t.Errorf("docs/policy.md does not name %s rule `%s`", r.Surface, pat)
		}
	}
	p.eachPathRule(false, check)
	for _, e := range p.rules[SurfaceBash].rules {
		check(e.r)
	}
	for _, r := range p.rules[SurfaceBash].exact {
		check(r)
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

// TestDefaultPublicSSHKeys: ~/.ssh/*.pub is read when it holds public key
// lines, and asks when a private key was saved under that name, whatever
// its format; the private keys beside it always ask.
func TestDefaultPublicSSHKeys(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	k := makeKeys(t)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	edPEM := pem.EncodeToMemory(&pem.Block{Type: "OPENSSH PRIVATE KEY", Bytes: edKey})
	for _, c := range []struct {
		name, path string
		head       []byte
		want       Action
	}{
		{"ed25519 public key", "/home/u/.ssh/id_ed25519.pub", []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl dev@example.com\n"), Allow},
		{"two public keys", "/home/u/.ssh/keys.pub", []byte("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC a@b\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl c@d\n"), Allow},
		{"empty", "/home/u/.ssh/id_rsa.pub", nil, Allow},
		{"OpenSSH private key under a .pub name", "/home/u/.ssh/id_ed25519.pub", edPEM, Ask},
		{"PKCS#8 private key under a .pub name", "/home/u/.ssh/id_ecdsa.pub", k.pkcs8PEM, Ask},
		{"public line then a private key", "/home/u/.ssh/id_ed25519.pub", append([]byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl x@y\n"), edPEM...), Ask},
		{"not a key at all", "/home/u/.ssh/notes.pub", []byte("password=hunter2\n"), Ask},
		{"another user's private key under .pub", "/root/.ssh/id_rsa.pub", k.ecPEM, Ask},
	} {
		secret := LooksSecret(c.path, c.head)
		if r := p.DecidePathContent(AccessRead, c.path, secret); r.Action != c.want {
			t.Errorf("%s: read %s (looks secret: %v) = %v, want %v", c.name, c.path, secret, r, c.want)
		}
	}
	// The private key itself asks whatever it holds.
	for _, path := range []string{"/home/u/.ssh/id_ed25519", "/home/u/.ssh/id_rsa", "/home/u/.ssh/github"} {
		for _, secret := range []bool{false, true} {
			if r := p.DecidePathContent(AccessRead, path, secret); r.Action != Ask {
				t.Errorf("read %s (secret %v) = %v, want ask", path, secret, r)
			}
		}
	}
}
