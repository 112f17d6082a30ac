// Package pin resolves a target thread's paths and performs operations on
// its behalf, as the kernel would for that thread: with its root, cwd and
// fds, with its filesystem credentials, on exactly what was resolved.
//
// Resolve walks a path the way the kernel's lookup does and pins the
// result with O_PATH file descriptors (Resolved), so nothing the target
// does afterwards can redirect it. The emulation primitives (Open, Unlink,
// Rename, Mkdir, Chmod, ...) act on those descriptors only, never on a
// path string again. Handle is a target's own open file duplicated into
// the supervisor, for the calls that name an fd (fchmod, fsetxattr, the
// attribute ioctls, bind). ReadImage and ReadRunning identify executables
// for exec verification.
//
// pin knows nothing of seccomp or of policy: the supervisor decides what
// to resolve and whether to perform it. Raw syscalls and unsafe live here
// (unsafe only in *_unsafe.go files) and in notify, nowhere else.
package pin
