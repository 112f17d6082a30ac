// Package notify owns permwrap's seccomp user-notify boundary with the
// kernel: the BPF filter, built from the rules the caller gives it (which
// syscalls reach the supervisor, under which argument conditions) plus the
// architecture checks and the side doors it always shuts; loading that
// filter with the flags libseccomp 2.5.4 cannot set; the listener ioctls
// (receive, respond, add-fd, id-valid); reading the target's memory once;
// and the feature probes behind `permwrap doctor`. Resolution and the
// emulated operations live beside it in notify/pin.
//
// It knows nothing of policy, nor of why a syscall is watched: it reports
// what a target asked for and does what the supervisor answers. Raw
// syscalls, ioctls and unsafe live here and in notify/pin and nowhere else
// in permwrap; cgo (libseccomp) is confined to the filter builder. The
// package targets linux/amd64 only: the filter's architecture check is
// x86_64's.
package notify
