// Package supervisor launches a command under permwrap's sandbox and serves
// its seccomp notifications.
//
// Launch: permwrap re-executes its own binary in a hidden init mode (Go has
// no hook between fork and exec). The init stage applies the Landlock floor
// derived from the policy, installs the seccomp filter, tells the
// supervisor where its listener is (which the supervisor takes with
// pidfd_getfd) and only then executes the command, whose execve is the
// first notification the supervisor judges.
//
// Serving: a pool of goroutines receives notifications (supervisor/receive).
// The syscall table (syscalls.go, one row for every syscall permwrap knows,
// from which the BPF filter is also derived) gives each its decoder, which
// reads every argument from the target's memory once and resolves its
// paths the way the kernel would (notify/pin, pinned by file descriptors)
// into a typed call (calls.go; each family of calls in its own file:
// open.go, names.go, meta.go, connect.go, ...). decide (loop.go) takes the
// call's steps in order: judged by the engine without any I/O, the file's
// content looked at when a content rule needs it, the kernel's own answer,
// and an allowed call performed by the supervisor on exactly what was
// pinned, its result handed back; a denial is an errno. Asks go to the
// authority chain off the receiving goroutine so that one pending question
// never stalls the sandbox. docs/architecture.md walks through it.
package supervisor
