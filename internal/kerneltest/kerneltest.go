// Package kerneltest holds helpers for tests that need kernel features:
// they skip cleanly when a feature is missing, and fail instead when
// PERMWRAP_REQUIRE_KERNEL=1 (CI sets it), so a missing feature can never
// pass as a green run.
package kerneltest

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// Required reports whether kernel features are required (CI).
func Required() bool { return os.Getenv("PERMWRAP_REQUIRE_KERNEL") == "1" }

// Skip skips t with reason, or fails it when kernel tests are required.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if Required() {
		t.Fatalf("kernel feature required (PERMWRAP_REQUIRE_KERNEL=1) but missing: %s", reason)
	}
	t.Skip("kernel feature missing: " + reason)
}

// RequireUserNotif skips (or fails) unless seccomp user notification and
// Landlock are usable here.
func RequireUserNotif(t testing.TB) {
	t.Helper()
	ret := uint32(unix.SECCOMP_RET_USER_NOTIF)
	// SECCOMP_GET_ACTION_AVAIL = 2
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, 2, 0, uintptrOf(&ret)); e != 0 {
		Skip(t, "seccomp user notification: "+e.Error())
	}
	abi, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1) // LANDLOCK_CREATE_RULESET_VERSION
	if e != 0 || abi < 1 {
		Skip(t, "landlock")
	}
}
