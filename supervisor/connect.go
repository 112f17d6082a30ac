package supervisor

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// connect: where a connection goes, judged; performed on the target's own
// socket with the address read once (net.go has the addresses).

type connectCall struct {
	callDefaults
	tid, tgid int
	h         *pin.Handle
	si        pin.SockInfo
	nonblock  bool
	addr      []byte
	t         netTarget
	net       *netState
	// unheard: an ask about a Unix socket file no socket is bound to
	// is answered ECONNREFUSED (judge).
	unheard bool
	handedOff
}

func decodeConnect(d *decoder) (decoded, error) {
	h, si, tgid, err := d.socketOf(d.fdArg(0))
	if err != nil {
		return nil, err
	}
	addr, err := d.sockaddrArg(1, 2)
	if err == nil {
		var ds dest
		if ds, err = parseDest(addr, si, true); err == nil {
			var t netTarget
			if t, err = d.target(ds, h, si, tgid); err == nil {
				var nb bool
				if nb, err = h.Nonblocking(); err == nil {
					return &connectCall{tid: d.tid, tgid: tgid, h: h, si: si, nonblock: nb, addr: addr, t: t, net: d.net}, nil
				}
				closeAll(t.unix)
				err = &refusal{errno: pin.Errno(err), why: "reading the socket's flags", err: err}
			}
		}
	}
	h.Close()
	return nil, err
}

// judge is the destination's answer, except that an ask about a Unix
// socket file no socket is bound to is not put to anyone: nothing
// listens there, and nothing ever can (bind creates a new file, it never
// takes over an existing one), so the kernel would refuse the connection
// (ECONNREFUSED), and permwrap answers that without connecting. This is
// the stale socket a tmux or screen server leaves behind when it exits:
// a tmux client inside the tree tries the default socket first, and
// starts its own server (which is the tree's, see netlocal.go) only on
// ECONNREFUSED — an ask, or a denial headless, would stop it there.
// A file whose socket is in another network namespace looks unbound
// (sock_diag sees one namespace): it is refused rather than asked about,
// never connected.
func (c *connectCall) judge(p *engine.Policy) verdict {
	v := c.t.judge(p, "connect")
	if v.result.Action == engine.Ask && c.t.unheard {
		c.unheard = true
		v.result = allowBuiltin(c.t.intent, "no socket is bound to this file: the kernel refuses the connection")
	}
	return v
}

// perform connects the target's socket. A blocking connect waits for the
// peer (or SO_SNDTIMEO), so it runs off the receiving pool; a
// non-blocking one returns at once (EINPROGRESS: the target collects the
// outcome with poll and SO_ERROR, on the same socket) and runs inline.
// The answer is the kernel's.
//
// O_NONBLOCK is the open file's, read when the call was decoded: a
// second thread of the target that clears it meanwhile makes this
// connect wait on a receiver — for as long as its own would have waited
// (the TCP handshake's retries, SO_SNDTIMEO, a Unix listener's full
// backlog). That stalls only the tree's own calls, and no decision
// depends on it.
func (c *connectCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	c.done.Store(true)
	if c.nonblock {
		c.connect(s, id)
		return
	}
	go c.connect(s, id)
}

func (c *connectCall) connect(s *supervisor, id uint64) {
	defer c.release()
	if c.si.Type == unix.SOCK_DGRAM {
		// A datagram socket is bound by its connect, and a reply to it
		// reaches the tree's own socket (netlocal.go): recorded first.
		s.net.own.record(c.h)
	}
	var err error
	if c.unheard || c.t.closed {
		err = unix.ECONNREFUSED
	} else if c.t.unix != nil {
		err = c.h.ConnectUnix(c.t.unix)
	} else if c.t.reached != nil {
		err = c.h.Connect(c.t.reached)
	} else {
		err = c.h.Connect(c.addr)
	}
	if c.t.proxy && (err == nil || errors.Is(err, unix.EINPROGRESS)) {
		c.registerWithProxy()
	}
	s.answer(id, err)
}

// registerWithProxy tells the proxy which process holds the connection
// about to reach it (before the target learns it is connected, so before
// it can send a request).
func (c *connectCall) registerWithProxy() {
	if c.net == nil || c.net.peers == nil {
		return
	}
	sa, err := c.h.Local()
	if err != nil {
		return
	}
	ap, ok := pin.InetAddrPort(sa)
	if !ok {
		return
	}
	c.net.peers.Register(ap, c.tgid)
}

func (c *connectCall) release() {
	c.h.Close()
	closeAll(c.t.unix)
}

func (c *connectCall) close() {
	if c.take() {
		c.release()
	}
}

// listen: performed on the target's socket and recorded as the tree's
// own (netlocal.go); nothing is judged.
type listenCall struct {
	callDefaults
	h       *pin.Handle
	si      pin.SockInfo
	backlog int
}

func decodeListen(d *decoder) (decoded, error) {
	h, si, _, err := d.socketOf(d.fdArg(0))
	if err != nil {
		return nil, err
	}
	return &listenCall{h: h, si: si, backlog: int(int32(d.arg(1)))}, nil
}

func (c *listenCall) judge(*engine.Policy) verdict {
	return verdict{result: allowUnchecked(""), access: "listen", quiet: true}
}

func (c *listenCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	err := c.h.Listen(c.backlog)
	if err == nil {
		s.net.own.record(c.h)
		if c.si.Type == unix.SOCK_STREAM && c.si.Domain != unix.AF_UNIX {
			s.net.own.recordListener(c.h)
		}
	}
	s.answer(id, err)
}

func (c *listenCall) close() { c.h.Close() }
