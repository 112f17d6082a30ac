package pin

import "github.com/permwrap/permwrap/internal/procfs"

// Holders lists the processes that hold an fd to the socket ino (a
// Receiver's Ino), at most limit of them (limit <= 0: all), from
// /proc/*/fd: one readlink an fd of every process, so a cost of its own
// (see BenchmarkHolders), for when the supervisor must show or match
// the serving program, not for every connect. unreadable counts the
// processes whose fds could not be read (another user's): a nil list
// with unreadable > 0 is "not among those we could see". A socket may
// be held by several processes (inherited, passed), or by none (its fd
// closed while a connection was being accepted, or held only in a
// message in flight). The supervisor is among the holders while it
// holds a Handle of the socket.
func Holders(ino uint32, limit int) (pids []int, unreadable int, err error) {
	return procfs.SocketHolders(procfs.Root, ino, limit)
}

// Program is a person's view of process pid: its executable and command
// line, bounded (procfs.ReadProgram).
func Program(pid int) (procfs.Program, error) {
	return procfs.ReadProgram(procfs.Root, pid)
}
