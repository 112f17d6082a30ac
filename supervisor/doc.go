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
// Serving: a pool of goroutines receives notifications, decodes each
// syscall into path and exec intents (reading every pointer argument from
// the target's memory once), resolves paths the way the kernel would (with
// notify.Resolve, pinned by file descriptors), asks the engine, and answers
// in one place (answer.go): an allowed operation is performed by the
// supervisor on exactly what was checked and its result handed back; a
// denial is an errno. Asks go to the authority chain off the receiving
// goroutine so that one pending question never stalls the sandbox.
package supervisor
