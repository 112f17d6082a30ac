// Package receive owns who receives the next seccomp notification of a
// listener, and why: the receiving role (Role), which a worker keeps while
// it handles a call of the thread it served last, so a target that calls
// serially is served by one goroutine on one OS thread; the receiving loop
// (Loop), which hands the role on before a call another worker may be
// needed for and survives a failed receive; the pool of workers (Pool),
// whose monitor adds a worker when none could receive for a tick, so a
// call that hangs never leaves the sandbox without a receiver; and the
// blind wait (BlindWait), the poll the Go scheduler is not told of.
// docs/kernel.md, "The listener (`notify.Listener`)": "Receiving" and
// "The receiver: the pool and the receiving role".
//
// It decides nothing about a call: what a call is (whether it keeps the
// role, how it is answered) is the caller's, given as functions (the
// supervisor's syscall table and decision path; the round-trip benchmark
// tool's CONTINUE). It imports notify only.
package receive
