package forwarding

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
)

// Peer credentials on a knock's connection.
//
// The connection is one end of a socketpair the supervisor made when a
// process of the tree knocked, and the other end went to that process
// only; the kernel named it in the notification. The descriptor could
// still be handed on (SCM_RIGHTS), so every byte read is checked to come
// from the process that knocked: with SO_PASSCRED set on our end before
// the other end is handed out, the kernel attaches the sender's
// credentials to what it sends, and a stream read never merges data of
// two senders. (A sender with CAP_SYS_ADMIN can state another pid; the
// check is one layer, the knock's binding to the kernel-named pid is the
// other.)

// enablePassCred sets SO_PASSCRED on c.
func enablePassCred(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PASSCRED, 1)
	}); err != nil {
		return err
	}
	return serr
}

// ErrWrongSender is data on the connection from a process other than the
// one that knocked.
var ErrWrongSender = errors.New("forwarding: message not sent by the process that knocked")

// credReader reads from a unix stream socket and checks the sender of
// every chunk. Descriptors sent along are closed and refused.
type credReader struct {
	c   *net.UnixConn
	pid int
	oob []byte
}

func newCredReader(c *net.UnixConn, pid int) *credReader {
	return &credReader{c: c, pid: pid, oob: make([]byte, syscall.CmsgSpace(syscall.SizeofUcred)+syscall.CmsgSpace(4*8))}
}

func (r *credReader) Read(p []byte) (int, error) {
	n, oobn, flags, _, err := r.c.ReadMsgUnix(p, r.oob)
	// At the end of the stream the kernel still attaches (empty)
	// credentials; only data needs a sender.
	if n > 0 || flags&syscall.MSG_CTRUNC != 0 {
		if oobn == 0 {
			return 0, fmt.Errorf("%w: no credentials attached", ErrWrongSender)
		}
		if cerr := r.check(r.oob[:oobn], flags); cerr != nil {
			return 0, cerr
		}
	} else if oobn > 0 {
		// No data but control messages: descriptors sent alone are
		// refused (and closed) all the same.
		if cerr := r.check(r.oob[:oobn], flags); cerr != nil && !errors.Is(cerr, ErrWrongSender) {
			return 0, cerr
		}
	}
	if n == 0 && err == nil {
		err = io.EOF
	}
	return n, err
}

func (r *credReader) check(oob []byte, flags int) error {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("forwarding: control message: %w", err)
	}
	var cred *syscall.Ucred
	var rights bool
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_RIGHTS:
			rights = true
			if fds, err := syscall.ParseUnixRights(m); err == nil {
				for _, fd := range fds {
					syscall.Close(fd)
				}
			}
		case m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_CREDENTIALS:
			c, err := syscall.ParseUnixCredentials(m)
			if err != nil {
				return fmt.Errorf("forwarding: credentials: %w", err)
			}
			cred = c
		}
	}
	if rights || flags&syscall.MSG_CTRUNC != 0 {
		return errors.New("forwarding: descriptors sent on the nesting connection")
	}
	if cred == nil {
		return fmt.Errorf("%w: no credentials attached", ErrWrongSender)
	}
	if int(cred.Pid) != r.pid {
		return fmt.Errorf("%w: sent by pid %d, knocked by %d", ErrWrongSender, cred.Pid, r.pid)
	}
	return nil
}
