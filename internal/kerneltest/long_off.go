//go:build !long

package kerneltest

// LongTests says the package was built with -tags long: without it,
// Long skips the test.
const LongTests = false
