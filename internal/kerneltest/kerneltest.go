// Package kerneltest holds the helpers every package's tests use when
// they need something of the machine: a kernel feature, a pseudo-terminal,
// a program (cc, tmux, git, make, python3). They skip cleanly when it is
// missing, and fail instead when PERMWRAP_REQUIRE_KERNEL=1 (CI sets it),
// so a missing feature can never pass as a green run.
//
// Features are decided by trying them, not by reading the kernel's
// configuration. The package imports nothing of permwrap's but the trial
// of i386 syscalls, so notify's own tests can use it too.
package kerneltest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/permwrap/permwrap/notify/abiprobe"
)

// EnvRequire is the variable that turns skips into failures.
const EnvRequire = "PERMWRAP_REQUIRE_KERNEL"

// Required reports whether missing features fail (CI).
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// Skip skips t because something it needs is missing here, or fails it
// when PERMWRAP_REQUIRE_KERNEL=1.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if Required() {
		t.Fatalf("required (%s=1) but missing: %s", EnvRequire, reason)
	}
	t.Skipf("missing: %s (set %s=1 to fail instead)", reason, EnvRequire)
}

// Skipf is Skip with a format.
func Skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	Skip(t, fmt.Sprintf(format, args...))
}

// Need skips (or fails) t unless err is nil; feature names what was
// tried.
func Need(t testing.TB, feature string, err error) {
	t.Helper()
	if err != nil {
		Skipf(t, "%s: %v", feature, err)
	}
}

// Tool returns the path of a program t needs, skipping (or failing) when
// it is not installed. ./scripts/test installs every one the suite uses.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Skipf(t, "the program %s (./scripts/test installs it): %v", name, err)
	}
	return p
}

// Impossible skips t, even when PERMWRAP_REQUIRE_KERNEL=1, because the
// kernel itself rules out what the test would show: the attack cannot
// happen here, so there is nothing for permwrap to stop and no feature
// permwrap lacks. Only for a reason a trial established (I386), never for
// something permwrap needs.
func Impossible(t testing.TB, reason string) {
	t.Helper()
	t.Skipf("impossible on this kernel (a trial showed it): %s", reason)
}

// I386 reports whether a 64-bit process can make i386 syscalls here, by
// trying one in a child process. A kernel that refuses them gives ok
// false and the reason; a trial that could not be made fails t, whatever
// PERMWRAP_REQUIRE_KERNEL says: the probe must not break silently.
func I386(t testing.TB) (ok bool, why string) {
	t.Helper()
	r, err := abiprobe.I386()
	if err != nil {
		t.Fatalf("trying an i386 syscall: %v", err)
	}
	if r.Filtered {
		t.Fatalf("trying an i386 syscall: %s: the tests must not run under a seccomp filter that kills them", r.Why)
	}
	return r.Works, r.Why
}
