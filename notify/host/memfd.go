package host

import (
	"net"

	"golang.org/x/sys/unix"
)

// SendSealedMemfd writes b into a new memfd named name, seals it against
// any change, and passes it over conn, a connected datagram socket, with
// SCM_RIGHTS: how an entry too large for one datagram reaches journald
// (sd_journal_send does the same). It waits for room in the socket as a
// Write on conn would (its deadline applies).
func SendSealedMemfd(conn *net.UnixConn, name string, b []byte) error {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for off := 0; off < len(b); {
		n, err := unix.Write(fd, b[off:])
		if err != nil {
			return err
		}
		off += n
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		return err
	}
	// WriteMsgUnix refuses a connected datagram socket: sendmsg(2) on
	// its descriptor, waiting for room as Write does.
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	werr := rc.Write(func(s uintptr) bool {
		serr = unix.Sendmsg(int(s), nil, unix.UnixRights(fd), nil, 0)
		return serr != unix.EAGAIN
	})
	if werr != nil {
		return werr
	}
	return serr
}
