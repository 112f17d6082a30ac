package supervisor_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/internal/testutil"
)

// The managed policy's path is fixed at build time
// (engine.ManagedPolicyPath), so these tests build a second permwrap
// whose managed policy is a file they own: in a root-owned directory
// beside the binary TestMain builds (and removes).
var (
	managedOnce sync.Once
	managedBin  string
	managedPath string
	managedErr  error
)

func buildManaged(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the managed policy must be owned by root: needs to run as root")
	}
	managedOnce.Do(func() {
		dir := filepath.Join(filepath.Dir(permwrapBin), "managed")
		if managedErr = os.MkdirAll(filepath.Join(dir, "etc"), 0o755); managedErr != nil {
			return
		}
		managedBin = filepath.Join(dir, "permwrap")
		managedPath = filepath.Join(dir, "etc", "managed.jsonc")
		_, self, _, _ := runtime.Caller(0)
		build := exec.Command("go", "build", "-o", managedBin,
			"-ldflags", "-X github.com/permwrap/permwrap/engine.ManagedPolicyPath="+managedPath, "./cmd/permwrap")
		build.Dir = filepath.Dir(filepath.Dir(self))
		var out bytes.Buffer
		build.Stdout, build.Stderr = &out, &out
		if err := build.Run(); err != nil {
			managedErr = &buildError{err, out.String()}
		}
	})
	if managedErr != nil {
		t.Fatalf("building permwrap with a managed policy path: %v", managedErr)
	}
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// setManaged writes the managed policy (root-owned, 0644); "" removes it.
func setManaged(t *testing.T, content string) {
	t.Helper()
	if content == "" {
		os.Remove(managedPath)
		return
	}
	if err := os.WriteFile(managedPath, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(managedPath) })
}

// runBin is sandbox.run with another permwrap binary and extra flags.
func (s *sandbox) runBin(bin string, flags []string, argv ...string) result {
	s.t.Helper()
	args := append([]string{"--log", s.logPath, "--workspace", s.workspace}, flags...)
	args = append(append(args, "--"), argv...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.workspace
	cmd.Env = append(os.Environ(),
		"PERMWRAP_CONFIG_DIR="+s.configDir,
		"HOME="+s.home,
		"XDG_STATE_HOME="+filepath.Join(s.dir, "state"),
	)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	bound := testutil.Scale(2 * time.Minute)
	select {
	case <-done:
	case <-time.After(bound):
		_ = cmd.Process.Kill()
		<-done
		s.t.Fatalf("permwrap %v did not finish in %v; stderr:\n%s", argv, bound, errb.String())
	}
	return result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
}

// TestManagedDenyHoldsE2E: on the real kernel, a write the managed
// policy denies does not happen under --yolo, an allowing user policy,
// an allowing --policy scope and an allowing trusted project policy;
// the same run without the managed policy writes the file.
func TestManagedDenyHoldsE2E(t *testing.T) {
	buildManaged(t)
	kerneltest.Tool(t, "python3")
	allow := `{"permission": {"write": {"${WORKSPACE}/locked/**": "allow"}, "exec": {"*": "allow"}, "bash": {"python3 *": "allow"}}}`
	s := newSandbox(t, allow)
	scope := filepath.Join(s.dir, "scope.jsonc")
	os.WriteFile(scope, []byte(allow), 0o644)
	os.MkdirAll(s.path(".git"), 0o755)
	os.MkdirAll(s.path(".permwrap"), 0o755)
	os.WriteFile(s.path(".permwrap/policy.jsonc"), []byte(allow), 0o644)
	os.MkdirAll(s.path("locked"), 0o755)
	trust := exec.Command(managedBin, "trust", "--config-dir", s.configDir, s.workspace)
	if out, err := trust.CombinedOutput(); err != nil {
		t.Fatalf("permwrap trust: %v\n%s", err, out)
	}
	// The open is the program's own: no command-line analysis sees it.
	prog := `open("locked/f", "w").write("x")`
	flags := []string{"--yolo", "--policy", scope}

	// Without a managed policy every layer allows it.
	setManaged(t, "")
	if r := s.runBin(managedBin, flags, "python3", "-c", prog); r.code != 0 || !s.exists("locked/f") {
		t.Fatalf("without the managed policy: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	os.Remove(s.path("locked/f"))

	setManaged(t, `{"permission": {"write": {"${WORKSPACE}/locked/**": "deny"}}}`)
	r := s.runBin(managedBin, flags, "python3", "-c", prog)
	if r.code == 0 || s.exists("locked/f") {
		t.Fatalf("the managed deny did not hold: exit %d, file written: %v; stderr:\n%s", r.code, s.exists("locked/f"), r.stderr)
	}
	mustContain(t, "stderr", r.stderr, managedPath+":1:27")
	found := false
	for _, rec := range s.logRecords() {
		rule, _ := rec["rule"].(map[string]any)
		if rec["value"] == s.path("locked/f") && rec["action"] == "deny" && rule["origin"] == "managed" {
			found = true
		}
	}
	if !found {
		t.Errorf("no review-log record of the managed deny (origin managed)")
	}
	// A managed ask is not lifted by --yolo or the allowing layers:
	// headless, nobody may answer it, and it is denied.
	setManaged(t, `{"permission": {"write": {"${WORKSPACE}/locked/**": "ask"}}}`)
	r = s.runBin(managedBin, flags, "python3", "-c", prog)
	if r.code == 0 || s.exists("locked/f") {
		t.Fatalf("a managed ask was let through headless under --yolo: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "managed policy")
	// The managed file is out of the tree's reach, even as root.
	r = s.runBin(managedBin, flags, "python3", "-c", `open(`+"'"+managedPath+"'"+`, "w").write("{}")`)
	if data, _ := os.ReadFile(managedPath); r.code == 0 || string(data) == "{}" {
		t.Fatalf("the tree rewrote the managed policy: exit %d", r.code)
	}
}

// TestManagedForbidYoloE2E: --yolo, and an inner `permwrap --yolo`,
// are refused (exit 125) when the managed policy forbids yolo.
func TestManagedForbidYoloE2E(t *testing.T) {
	buildManaged(t)
	s := newSandbox(t, "")
	setManaged(t, "{\n  \"forbid\": [\"yolo\"]\n}\n")
	r := s.runBin(managedBin, []string{"--yolo"}, "true")
	if r.code != 125 {
		t.Fatalf("--yolo: exit %d, want 125; stderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, managedPath+":2:14: the managed policy forbids yolo mode")
	if r := s.runBin(managedBin, nil, "true"); r.code != 0 {
		t.Fatalf("without --yolo: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	// Nested: the inner permwrap reads the same file.
	r = s.runBin(managedBin, nil, managedBin, "--yolo", "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "forbids yolo mode") {
		t.Fatalf("inner --yolo: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	// An unsafe managed policy stops every run: fail closed.
	if err := os.Chmod(managedPath, 0o666); err != nil {
		t.Fatal(err)
	}
	r = s.runBin(managedBin, nil, "true")
	if r.code != 125 || !strings.Contains(r.stderr, managedPath) || !strings.Contains(r.stderr, "writable by group and others") {
		t.Fatalf("a world-writable managed policy: exit %d; stderr:\n%s", r.code, r.stderr)
	}
}
