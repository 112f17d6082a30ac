package kerneltest

import "testing"

// Long marks t as a long test — a kernel race that loops until it wins,
// a real workload (git clones, builds, npm), a real agent, the Go
// standard library, anything over a few seconds — and skips it unless
// the package was built with -tags long. Plain `go test ./...` is then
// the fast path to run while working; ./scripts/test (what CI runs)
// passes -tags long and runs everything.
//
// It skips even when PERMWRAP_REQUIRE_KERNEL=1: leaving a long test out
// of the fast path is a choice, not a missing feature.
func Long(t testing.TB) {
	t.Helper()
	if !LongTests {
		t.Skip("long test: go test -tags long (./scripts/test sets it)")
	}
}
