// Package kerneltest holds helpers for tests that need kernel features:
// they skip cleanly when a feature is missing, and fail instead when
// PERMWRAP_REQUIRE_KERNEL=1 (CI sets it), so a missing feature can never
// pass as a green run.
package kerneltest

import (
	"os"
	"testing"

	"github.com/permwrap/permwrap/notify"
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
// Landlock are usable here, as notify.Probe sees them.
func RequireUserNotif(t testing.TB) {
	t.Helper()
	f := notify.Probe()
	if f.UserNotif != notify.Yes {
		Skip(t, "seccomp user notification ("+f.UserNotif.String()+")")
	}
	if f.LandlockABI < 1 {
		Skip(t, "landlock")
	}
}
