// Package e2e runs the real coding agents from npm — Claude Code, Codex,
// pi and Gemini CLI, as ./scripts/agents installs them — under permwrap,
// each driven by a scripted model (internal/modelserver), with the
// agent's own sandbox and approval gates turned off. It is the evidence
// that permwrap's promise holds for them: the agent runs unchanged, what
// the policy denies is blocked, the agent survives every denial, and the
// model receives the reason.
//
// The tests skip when the agents are not installed, and fail instead when
// PERMWRAP_REQUIRE_KERNEL=1 (CI sets it; ./scripts/test installs them).
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/internal/modelserver"
	"github.com/permwrap/permwrap/internal/testutil"
	"github.com/permwrap/permwrap/notify"
)

// permwrapBin is the permwrap binary built once for these tests.
var permwrapBin string

func repoRoot() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(self)))
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "permwrap-agents-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	permwrapBin = filepath.Join(dir, "permwrap")
	build := exec.Command("go", "build", "-o", permwrapBin, "./cmd/permwrap")
	build.Dir = repoRoot()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building permwrap:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// agentsDir is where ./scripts/agents installed the agents.
func agentsDir() string {
	if d := os.Getenv("PERMWRAP_AGENTS_DIR"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "permwrap-e2e", "agents")
}

// requireSupervision skips (or, under PERMWRAP_REQUIRE_KERNEL=1, fails)
// unless seccomp user notification and Landlock are usable here.
func requireSupervision(t *testing.T) {
	t.Helper()
	f := notify.Probe()
	if f.UserNotif != notify.Yes {
		kerneltest.Skip(t, "seccomp user notification ("+f.UserNotif.String()+")")
	}
	if f.LandlockABI < 1 {
		kerneltest.Skip(t, "landlock")
	}
}

// baseDir makes a directory for one test's home and workspace outside
// the temporary directories: $PERMWRAP_E2E_DIR, /home, or beside the
// repository.
func baseDir(t *testing.T) string {
	t.Helper()
	return testutil.HomeBase(t, "PERMWRAP_E2E_DIR", "permwrap-agents-", filepath.Dir(repoRoot()))
}

// env is one fresh machine-user: a home with a private key and a
// .bashrc, a git workspace with a local bare remote, permwrap's
// configuration and review log.
type env struct {
	t         *testing.T
	base      string
	home      string
	ws        string // the workspace (a git repository)
	remote    string // its origin, a bare repository
	configDir string // PERMWRAP_CONFIG_DIR
	logPath   string
	secret    string // a marker inside ~/.ssh/id_rsa
	bashrc    string // ~/.bashrc as written
	// modelPolicy is a --policy scope that allows the scripted model
	// server: it runs outside the sandbox on loopback, where the default
	// policy asks (a person with a local model server writes the same
	// rule).
	modelPolicy string
}

// allowModel lets the agent reach the scripted model at url (see
// modelPolicy).
func (e *env) allowModel(url string) {
	host := strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://")
	host, _, _ = strings.Cut(host, "/")
	e.modelPolicy = filepath.Join(e.base, "model-policy.jsonc")
	e.writeFile(e.modelPolicy, `{"permission": {"net": {"`+host+`": "allow"}}}`, 0o644)
}

// wrapArgs is `permwrap --log … --workspace … [--policy model] --`.
func (e *env) wrapArgs() []string {
	args := []string{permwrapBin, "--log", e.logPath, "--workspace", e.ws}
	if e.modelPolicy != "" {
		args = append(args, "--policy", e.modelPolicy)
	}
	return append(args, "--")
}

func newEnv(t *testing.T, policy string) *env {
	t.Helper()
	base := baseDir(t)
	e := &env{
		t:         t,
		base:      base,
		home:      filepath.Join(base, "home", "dev"),
		ws:        filepath.Join(base, "home", "dev", "src", "project"),
		remote:    filepath.Join(base, "remote.git"),
		configDir: filepath.Join(base, "permwrap-config"),
		logPath:   filepath.Join(base, "review.jsonl"),
		secret:    fmt.Sprintf("E2E-SECRET-%d-%d", os.Getpid(), time.Now().UnixNano()),
		bashrc:    "# e2e bashrc\nexport E2E_BASHRC=1\n",
	}
	for _, d := range []string{e.home, e.ws, e.configDir, filepath.Join(e.home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\n" + e.secret + "\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n"
	e.writeFile(filepath.Join(e.home, ".ssh", "id_rsa"), key, 0o600)
	e.writeFile(filepath.Join(e.home, ".bashrc"), e.bashrc, 0o644)
	if policy != "" {
		e.writeFile(filepath.Join(e.configDir, "policy.jsonc"), policy, 0o644)
	}
	e.git(base, "init", "-q", "--bare", "-b", "main", e.remote)
	e.git(e.ws, "init", "-q", "-b", "main")
	e.writeFile(filepath.Join(e.ws, "README.md"), "# project\n", 0o644)
	e.git(e.ws, "add", "README.md")
	e.git(e.ws, "commit", "-qm", "initial")
	e.git(e.ws, "remote", "add", "origin", e.remote)
	return e
}

func (e *env) writeFile(p, content string, mode os.FileMode) {
	e.t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) readFile(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// gitEnv is the identity git needs, without a ~/.gitconfig.
var gitEnv = []string{
	"GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.com",
	"GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.com",
}

func (e *env) git(dir string, args ...string) string {
	e.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"HOME=" + e.home, "PATH=" + os.Getenv("PATH")}, gitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// remoteRefs lists the refs of the bare remote.
func (e *env) remoteRefs() string {
	cmd := exec.Command("git", "--git-dir", e.remote, "for-each-ref")
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("git for-each-ref: %v\n%s", err, out)
	}
	return string(out)
}

// baseEnv is the environment every agent runs with: nothing of the
// test's own (no real API key can leak in), offline switches for the
// tools the tasks use.
func (e *env) baseEnv() []string {
	return append([]string{
		"HOME=" + e.home,
		"USER=root", "LOGNAME=root",
		"PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8",
		"PERMWRAP_CONFIG_DIR=" + e.configDir,
		"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local", "GOTELEMETRY=off",
		"npm_config_update_notifier=false", "npm_config_audit=false", "npm_config_fund=false",
		"PIP_DISABLE_PIP_VERSION_CHECK=1",
	}, gitEnv...)
}

// result is what a run left behind.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// runWrapped runs argv under permwrap, headless (no terminal: an ask is
// denied), in the workspace.
func (e *env) runWrapped(extraEnv []string, timeout time.Duration, argv ...string) result {
	e.t.Helper()
	args := append(e.wrapArgs(), argv...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = e.ws
	cmd.Env = append(e.baseEnv(), extraEnv...)
	cmd.Env = append(cmd.Env, "TERM=dumb")
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("%v: %v", args, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(testutil.Scale(timeout)):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		e.t.Errorf("%v did not finish in %v", argv, timeout)
	}
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code, elapsed: time.Since(start)}
}

// logRecords parses the review log; every line must be JSON.
func (e *env) logRecords() []map[string]any {
	e.t.Helper()
	b, err := os.ReadFile(e.logPath)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		e.t.Fatalf("review log: %v", err)
	}
	return testutil.ParseRecords(e.t, "review log", b)
}

// isDenial reports a record of a request that was refused.
func isDenial(rec map[string]any) bool {
	switch rec["event"] {
	case "permission_request.denied", "permission_request.rejected", "permission_request.timed_out":
		return true
	}
	return false
}

// describe is a record in one line.
func describe(rec map[string]any) string {
	reason, _ := rec["reason"].(string)
	return fmt.Sprintf("%v %v %v %q (comm %v) %s", rec["event"], rec["surface"], rec["access"], rec["value"], rec["comm"], reason)
}

// startModel starts a scripted model for t.
func startModel(t *testing.T, script []modelserver.Step) *modelserver.Server {
	t.Helper()
	srv, err := modelserver.Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}
