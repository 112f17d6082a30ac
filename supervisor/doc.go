// Package supervisor launches a command under permwrap's sandbox and serves
// its seccomp notifications.
//
// Launch: permwrap re-executes its own binary in a hidden init mode (Go has
// no hook between fork and exec). The init stage applies the Landlock floor
// derived from the policy, installs the seccomp filter, hands the listener
// fd back to the supervisor over a socketpair (SCM_RIGHTS) and only then
// executes the command, whose execve is the first notification the
// supervisor judges.
//
// Serving: a pool of goroutines receives notifications. The syscall table
// (syscalls.go, one row per watched syscall, from which the BPF filter's
// rules are also derived) gives each its decoder, which reads every
// argument from the target's memory once and resolves its paths the way
// the kernel would (notify/pin, pinned by file descriptors) into a typed
// call (calls.go). The call is judged by the engine without any further
// I/O, and an allowed call is performed by the supervisor on exactly what
// was pinned, its result handed back; a denial is an errno. Asks go to the
// authority chain off the receiving goroutine so that one pending question
// never stalls the sandbox. docs/architecture.md walks through it.
package supervisor
