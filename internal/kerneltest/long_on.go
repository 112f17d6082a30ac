//go:build long

package kerneltest

// LongTests says the package was built with -tags long: Long runs the
// test.
const LongTests = true
