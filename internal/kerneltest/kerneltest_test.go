package kerneltest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSkipFailsWhenRequired runs TestHelperSkip in a child, with and
// without PERMWRAP_REQUIRE_KERNEL=1: a missing feature skips, and fails
// when required. Impossible skips either way.
func TestSkipFailsWhenRequired(t *testing.T) {
	for _, c := range []struct {
		helper, require string
		wantFail        bool
	}{
		{"TestHelperSkip", "", false},
		{"TestHelperSkip", "1", true},
		{"TestHelperTool", "", false},
		{"TestHelperTool", "1", true},
		{"TestHelperImpossible", "1", false},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^"+c.helper+"$", "-test.v")
		cmd.Env = append(os.Environ(), "KERNELTEST_HELPER=1", EnvRequire+"="+c.require)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != c.wantFail {
			t.Errorf("%s with %s=%q: failed=%v, want %v\n%s", c.helper, EnvRequire, c.require, failed, c.wantFail, out)
		}
		if !c.wantFail && !strings.Contains(string(out), "--- SKIP") {
			t.Errorf("%s with %s=%q did not skip:\n%s", c.helper, EnvRequire, c.require, out)
		}
	}
}

func helperOnly(t *testing.T) {
	if os.Getenv("KERNELTEST_HELPER") != "1" {
		t.Skip("run by TestSkipFailsWhenRequired")
	}
}

func TestHelperSkip(t *testing.T) {
	helperOnly(t)
	Skip(t, "a feature no kernel has")
}

func TestHelperTool(t *testing.T) {
	helperOnly(t)
	Tool(t, "permwrap-no-such-program")
}

func TestHelperImpossible(t *testing.T) {
	helperOnly(t)
	Impossible(t, "shown by a trial")
}

// TestI386Trial: the trial runs on any x86_64 machine and says what it saw.
func TestI386Trial(t *testing.T) {
	ok, why := I386(t)
	t.Logf("i386 syscalls work: %v (%s)", ok, why)
}

// Long skips only without -tags long, and never fails, even with
// PERMWRAP_REQUIRE_KERNEL=1.
func TestLong(t *testing.T) {
	t.Setenv(EnvRequire, "1")
	var ran bool
	t.Run("long", func(t *testing.T) {
		Long(t)
		ran = true
	})
	if ran != LongTests {
		t.Errorf("Long let the test run: %v, built with -tags long: %v", ran, LongTests)
	}
}
