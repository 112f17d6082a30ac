// Package notify owns permwrap's seccomp user-notify boundary with the
// kernel: the BPF filter that decides which syscalls reach the supervisor
// and which side doors are shut in the kernel itself, loading that filter
// with the flags libseccomp 2.5.4 cannot set, the listener ioctls (receive,
// respond, add-fd, id-valid, sync wake-up), reading the target's memory
// once, resolving its fds and cwd, the emulation primitives, and the
// feature probes behind `permwrap doctor`.
//
// It knows nothing of policy: it reports what a target asked for and does
// what the supervisor answers. Raw syscalls, ioctls and unsafe live here
// and nowhere else in permwrap; cgo (libseccomp) is confined to the filter
// builder. The package targets linux/amd64 only: the filter's syscall
// numbers and its architecture check are x86_64's.
package notify
