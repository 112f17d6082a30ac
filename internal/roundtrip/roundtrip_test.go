package roundtrip

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/internal/testutil"
	"github.com/permwrap/permwrap/notify"
)

// TestKeepsRole: the round trip, which verifies no exec, keeps the
// receiving role for the exec's verification stop (a bare CONTINUE) and
// hands it on for an exec itself, as the supervisor's table says.
func TestKeepsRole(t *testing.T) {
	if keepsRole(&notify.Notif{Nr: unix.SYS_EXECVE}) || !keepsRole(&notify.Notif{Nr: unix.SYS_ARCH_PRCTL}) {
		t.Error("the round trip hands on its stop, or holds an exec")
	}
	if !keepsRole(&notify.Notif{Nr: unix.SYS_OPENAT}) {
		t.Error("the round trip hands on an open")
	}
}

// TestRoundTripEmulateRunsWorkloads: the round trip that emulates opens
// (scripts/bench's rtemu column) must give the command what the kernel
// would: a file read by an absolute and a relative name and through a
// directory fd, one created and truncated, ENOENT for a missing one. One
// that broke them would time a different workload.
func TestRoundTripEmulateRunsWorkloads(t *testing.T) {
	kerneltest.Long(t)
	f := notify.Probe()
	if f.UserNotif != notify.Yes {
		kerneltest.Skip(t, "seccomp user notification ("+f.UserNotif.String()+")")
	}
	if f.LandlockABI < 1 {
		kerneltest.Skip(t, "landlock")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	dir := t.TempDir()
	rt := filepath.Join(dir, "roundtrip")
	testutil.GoBuild(t, filepath.Join("..", ".."), rt, "./internal/cmd/roundtrip")
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
	cmd := exec.Command(rt, "-emulate", "--", "sh", "-c", script)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "PERMWRAP_CONFIG_DIR="+filepath.Join(dir, "config"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("roundtrip -emulate: %v\n%s", err, out)
	}
	got := string(out)
	if !strings.HasPrefix(got, "hello\nhello\nhello\ntwo\n") || !strings.Contains(got, "No such file or directory") {
		t.Fatalf("roundtrip -emulate gave\n%s", got)
	}
}
