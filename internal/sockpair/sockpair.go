// Package sockpair makes a connected pair of Unix stream sockets, one end
// for this process and one to hand to a child as an inherited fd. It is
// the one kernel call the authority package needs (for a reviewer's
// private query channel), kept here so authority itself stays free of
// syscalls.
package sockpair

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// New returns a connected pair: local is this process's end, as a
// net.Conn; remote is the other end as a file meant for a child's
// ExtraFiles. Both are close-on-exec here: only a child it is passed to
// explicitly gets remote, and nothing gets local. The caller closes
// remote once the child is started.
func New() (local net.Conn, remote *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	lf := os.NewFile(uintptr(fds[0]), "query-local")
	remote = os.NewFile(uintptr(fds[1]), "query-remote")
	local, err = net.FileConn(lf) // dups the fd
	lf.Close()
	if err != nil {
		remote.Close()
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return local, remote, nil
}
