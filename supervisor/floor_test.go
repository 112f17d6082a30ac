package supervisor_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// TestFloorEmulateRunsWorkloads: the benchmark floor that emulates opens
// (scripts/bench's flooremu column) must give the command what the
// kernel would: a file read by an absolute and a relative name and
// through a directory fd, one created and truncated, ENOENT for a missing
// one. A floor that broke them would time a different workload.
func TestFloorEmulateRunsWorkloads(t *testing.T) {
	kerneltest.Long(t)
	requireSupervision(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	dir := t.TempDir()
	floor := filepath.Join(dir, "floor")
	build := exec.Command("go", "build", "-o", floor, "./internal/cmd/floor")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the floor: %v\n%s", err, out)
	}
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "sub", "in.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `cat ` + filepath.Join(ws, "sub", "in.txt") + ` && cat sub/in.txt &&
python3 -c 'import os; d = os.open("sub", os.O_RDONLY | os.O_DIRECTORY); print(os.read(os.open("in.txt", os.O_RDONLY, dir_fd=d), 64).decode(), end="")' &&
echo one > out.txt && echo two > out.txt && cat out.txt &&
{ cat missing.txt 2>&1; true; }`
	cmd := exec.Command(floor, "-emulate", "--", "sh", "-c", script)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "PERMWRAP_CONFIG_DIR="+filepath.Join(dir, "config"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("floor -emulate: %v\n%s", err, out)
	}
	got := string(out)
	if !strings.HasPrefix(got, "hello\nhello\nhello\ntwo\n") || !strings.Contains(got, "No such file or directory") {
		t.Fatalf("floor -emulate gave\n%s", got)
	}
}
