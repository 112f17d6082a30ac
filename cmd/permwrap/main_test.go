package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/notify"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets scripts run `permwrap` as a command: the test binary
// re-executes itself and calls run, so what the scripts test is exactly
// what main does.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"permwrap": func() { os.Exit(realMain()) },
	})
}

// TestScripts runs every testdata/script/*.txtar. Each script gets a
// private HOME, config directory and TMPDIR so no user configuration
// leaks in; $WORK is the working directory. $DEFAULT_POLICY names the
// embedded default policy's source file.
func TestScripts(t *testing.T) {
	defaultPolicy, err := filepath.Abs("../../engine/default.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "../../testdata/script",
		// PERMWRAP_UPDATE_SCRIPTS=1 rewrites the files `cmp` compares
		// against (golden outputs); review the diff before committing.
		UpdateScripts: os.Getenv("PERMWRAP_UPDATE_SCRIPTS") == "1",
		Condition: func(cond string) (bool, error) {
			if cond == "kernel" {
				return kernelMissing() == "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(e *testscript.Env) error {
			for _, d := range []string{"home", "tmp"} {
				if err := os.MkdirAll(filepath.Join(e.WorkDir, d), 0o755); err != nil {
					return err
				}
			}
			e.Setenv("HOME", filepath.Join(e.WorkDir, "home"))
			e.Setenv("PERMWRAP_CONFIG_DIR", filepath.Join(e.WorkDir, "config"))
			e.Setenv("XDG_CONFIG_HOME", "")
			e.Setenv("TMPDIR", filepath.Join(e.WorkDir, "tmp"))
			e.Setenv("DEFAULT_POLICY", defaultPolicy)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// requirekernel fails the script when the kernel features a
			// run needs are missing and PERMWRAP_REQUIRE_KERNEL=1 (CI);
			// scripts follow it with `[!kernel] skip`, so a missing
			// feature never passes as a green run.
			"requirekernel": func(ts *testscript.TestScript, neg bool, args []string) {
				if missing := kernelMissing(); missing != "" && kerneltest.Required() {
					ts.Fatalf("kernel feature required (PERMWRAP_REQUIRE_KERNEL=1) but missing: %s", missing)
				}
			},
			// exits N CMD [ARG...] runs CMD like exec and requires exit status N.
			"exits": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: exits N CMD [ARG...]")
				}
				want, err := strconv.Atoi(args[0])
				if err != nil {
					ts.Fatalf("exits: %v", err)
				}
				got := 0
				if err := ts.Exec(args[1], args[2:]...); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						ts.Fatalf("exits: %v", err)
					}
					got = ee.ExitCode()
				}
				if got != want {
					ts.Fatalf("exit status %d, want %d", got, want)
				}
			},
		},
	})
}

// kernelMissing names the kernel feature a run needs that is missing
// here, or "".
func kernelMissing() string {
	f := notify.Probe()
	switch {
	case f.UserNotif != notify.Yes:
		return "seccomp user notification (" + f.UserNotif.String() + ")"
	case f.LandlockABI < 1:
		return "landlock"
	}
	return ""
}

// TestPolicyDefaultIsEmbeddedBytes checks `permwrap policy default`
// against the engine's embedded copy in-process.
func TestPolicyDefaultIsEmbeddedBytes(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"policy", "default"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !bytes.Equal(out.Bytes(), engine.DefaultPolicy()) {
		t.Fatal("permwrap policy default differs from the embedded policy")
	}
}
