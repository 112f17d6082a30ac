package supervisor_test

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
	"github.com/permwrap/permwrap/internal/testutil"
	"github.com/permwrap/permwrap/notify"
)

// permwrapBin is the permwrap binary built once for the end-to-end tests.
var permwrapBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "permwrap-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	permwrapBin = filepath.Join(dir, "permwrap")
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(self))
	build := exec.Command("go", "build", "-o", permwrapBin, "./cmd/permwrap")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building permwrap:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sandbox is one isolated permwrap environment: a config dir with a
// policy, a workspace, a home, and a review log.
type sandbox struct {
	t         *testing.T
	dir       string
	configDir string
	workspace string
	home      string
	logPath   string
	// env is added to the environment of run and bare.
	env []string
	// prefix, when set, is a command run and bare are started through
	// (it execs its arguments), such as a private mount namespace.
	prefix []string
	// innerArgs, when set, run the command under a nested permwrap:
	// `permwrap … -- innerArgs… argv…` (innerArgs end with "--").
	innerArgs []string
}

// requireSupervision skips (or, under PERMWRAP_REQUIRE_KERNEL=1, fails)
// unless seccomp user notification and Landlock are usable here, as
// notify.Probe (what permwrap doctor says) sees them.
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

// newSandbox writes policy (JSONC text, "" for the embedded default) and
// returns the environment. It skips (or fails in CI) without the kernel
// features.
func newSandbox(t *testing.T, policy string) *sandbox {
	t.Helper()
	requireSupervision(t)
	dir := t.TempDir()
	// t.TempDir may sit under a path the policy mentions; resolve it.
	dir, _ = filepath.EvalSymlinks(dir)
	s := &sandbox{
		t:         t,
		dir:       dir,
		configDir: filepath.Join(dir, "config"),
		workspace: filepath.Join(dir, "ws"),
		home:      filepath.Join(dir, "home"),
		logPath:   filepath.Join(dir, "review.jsonl"),
	}
	for _, d := range []string{s.configDir, s.workspace, s.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if policy != "" {
		if err := os.WriteFile(filepath.Join(s.configDir, "policy.jsonc"), []byte(policy), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// result is what a run left behind.
type result struct {
	stdout, stderr string
	code           int
}

// run runs `permwrap --log LOG -- argv...` in the workspace.
func (s *sandbox) run(argv ...string) result {
	s.t.Helper()
	return s.runWith(nil, argv...)
}

// runWith is run with a hook called once permwrap has started.
func (s *sandbox) runWith(onStart func(*exec.Cmd), argv ...string) result {
	s.t.Helper()
	args := append([]string{permwrapBin, "--log", s.logPath, "--workspace", s.workspace, "--"}, s.innerArgs...)
	args = append(append([]string(nil), s.prefix...), append(args, argv...)...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = s.workspace
	cmd.Env = append(os.Environ(),
		"PERMWRAP_CONFIG_DIR="+s.configDir,
		"HOME="+s.home,
		"XDG_STATE_HOME="+filepath.Join(s.dir, "state"),
	)
	cmd.Env = append(cmd.Env, s.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	if onStart != nil {
		onStart(cmd)
	}
	go func() { done <- cmd.Wait() }()
	bound := testutil.Scale(2 * time.Minute)
	select {
	case <-done:
	case <-time.After(bound):
		_ = cmd.Process.Kill()
		<-done
		s.t.Fatalf("permwrap %v did not finish in %v; stderr:\n%s", argv, bound, errb.String())
	}
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// bare runs argv without permwrap, in the same environment, for the
// baseline of "runs exactly as without permwrap".
func (s *sandbox) bare(argv ...string) result {
	s.t.Helper()
	argv = append(append([]string(nil), s.prefix...), argv...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.workspace
	cmd.Env = append(append(os.Environ(), "HOME="+s.home), s.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
}

// logRecords parses the review log; every line must be JSON.
func (s *sandbox) logRecords() []map[string]any {
	s.t.Helper()
	return readLogFile(s.t, s.logPath)
}

// readLogFile parses a review log: every line must be one JSON record
// (permwrap writes no blank line and never a cut one in a run that
// ended).
func readLogFile(t *testing.T, path string) []map[string]any {
	t.Helper()
	return testutil.ReadRecords(t, path)
}

func (s *sandbox) path(rel string) string { return filepath.Join(s.workspace, rel) }

func (s *sandbox) exists(rel string) bool {
	_, err := os.Lstat(s.path(rel))
	return err == nil
}

func (s *sandbox) write(rel, content string) {
	s.t.Helper()
	p := s.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

func (s *sandbox) read(rel string) string {
	s.t.Helper()
	b, err := os.ReadFile(s.path(rel))
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

func mustContain(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%s does not contain %q:\n%s", what, sub, s)
	}
}
