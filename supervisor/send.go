package supervisor

import (
	"encoding/binary"
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/host"
	"github.com/permwrap/permwrap/notify/pin"
)

// sendto, sendmsg, sendmmsg: where a datagram goes, judged; performed on
// the target's own socket with what was read once (net.go has the
// addresses).

// sendMsg is one message of a send: its destination, what was read of it
// and what it will be sent with.
type sendMsg struct {
	t    netTarget
	snd  pin.Send
	fds  []*os.File // SCM_RIGHTS duplicates, closed after the send
	mlen uint64     // sendmmsg: where its msg_len goes (0: not sendmmsg)
}

func (m *sendMsg) release() {
	for _, f := range m.fds {
		f.Close()
	}
	closeAll(m.t.unix)
}

// sendCall is sendto, sendmsg or sendmmsg.
type sendCall struct {
	callDefaults
	tid   int
	h     *pin.Handle
	si    pin.SockInfo
	name  string // the syscall
	msg   bool   // sendmsg/sendmmsg: sent with sendmsg(2)
	mmsg  bool   // sendmmsg: answers a count and writes each msg_len
	flags int
	msgs  []sendMsg
	// asked is the index of the message whose verdict answers the call
	// (the first), or -1 before judge.
	asked int
	// allowed records, per later message, whether the policy allowed it
	// without asking (set by judge): sendmmsg sends those that follow the
	// first, up to the first that is not.
	allowed []bool
	handedOff
}

func decodeSendto(d *decoder) (decoded, error) {
	flags := int(int32(d.arg(3)))
	h, si, tgid, err := d.socketOf(d.fdArg(0))
	if err != nil {
		return nil, err
	}
	c := &sendCall{tid: d.tid, h: h, si: si, name: "sendto", flags: flags, asked: -1}
	if err := c.decodeSendto(d, tgid); err != nil {
		c.release()
		return nil, err
	}
	return c, nil
}

func (c *sendCall) decodeSendto(d *decoder, tgid int) error {
	if err := c.checkFlags(); err != nil {
		return err
	}
	nameLen := int(int32(d.arg(5)))
	if nameLen < 0 || nameLen > maxSockaddr {
		return kernelErr(unix.EINVAL, "bad address length")
	}
	size := uint64(d.arg(2))
	if size > 0x7fffffff {
		size = 0x7fffffff // the kernel's INT_MAX cut
	}
	n, err := c.dataSize(size)
	if err != nil {
		return err
	}
	// The address and the data, read in one go.
	both, err := notify.ReadGather(d.tid, []notify.Iovec{{Base: d.arg(4), Len: uint64(nameLen)}, {Base: d.arg(1), Len: uint64(n)}}, nameLen+n)
	if err != nil {
		return memoryErr("the address and the data", err)
	}
	m := sendMsg{snd: pin.Send{Name: both[:nameLen:nameLen], HasName: d.arg(4) != 0, Data: both[nameLen:], Flags: c.flags}}
	if err := c.destination(d, &m, tgid); err != nil {
		return err
	}
	c.msgs = []sendMsg{m}
	return nil
}

func decodeSendmsg(d *decoder) (decoded, error) {
	flags := int(int32(d.arg(2)))
	h, si, tgid, err := d.socketOf(d.fdArg(0))
	if err != nil {
		return nil, err
	}
	c := &sendCall{tid: d.tid, h: h, si: si, name: "sendmsg", msg: true, flags: flags, asked: -1}
	if err := c.checkFlags(); err != nil {
		c.release()
		return nil, err
	}
	m, err := c.decodeMsghdr(d, d.arg(1), tgid)
	if err != nil {
		c.release()
		return nil, err
	}
	c.msgs = []sendMsg{m}
	return c, nil
}

// sizeofMmsghdr is struct mmsghdr: a msghdr and the unsigned msg_len the
// kernel fills in, padded to 64 bytes.
const (
	sizeofMsghdr  = 56
	sizeofMmsghdr = 64
)

func decodeSendmmsg(d *decoder) (decoded, error) {
	flags := int(int32(d.arg(3)))
	h, si, tgid, err := d.socketOf(d.fdArg(0))
	if err != nil {
		return nil, err
	}
	c := &sendCall{tid: d.tid, h: h, si: si, name: "sendmmsg", msg: true, mmsg: true, flags: flags, asked: -1}
	if err := c.checkFlags(); err != nil {
		c.release()
		return nil, err
	}
	vlen := min(uint32(d.arg(2)), uioMaxIov)
	vec := d.arg(1)
	for i := range uint64(vlen) {
		mark := len(d.pinned)
		m, err := c.decodeMsghdr(d, vec+i*sizeofMmsghdr, tgid)
		if err != nil {
			if i > 0 {
				// The kernel sends what came before a bad message; what
				// was resolved for this one is not needed.
				for _, r := range d.pinned[mark:] {
					r.Close()
				}
				d.pinned = d.pinned[:mark]
				break
			}
			c.release()
			return nil, err
		}
		m.mlen = vec + i*sizeofMmsghdr + sizeofMsghdr
		c.msgs = append(c.msgs, m)
	}
	return c, nil
}

// checkFlags refuses what cannot be performed on the target's behalf:
// MSG_ZEROCOPY on a socket with SO_ZEROCOPY (the kernel would send from
// the caller's pages and report completion on the socket's error queue
// for pages that are not the target's): ENOBUFS, which the zerocopy
// documentation tells callers to answer by sending with a copy.
func (c *sendCall) checkFlags() error {
	if c.flags&unix.MSG_ZEROCOPY != 0 {
		if host.ZeroCopy(c.h.File()) {
			return kernelErr(unix.ENOBUFS, "MSG_ZEROCOPY cannot be performed by permwrap")
		}
	}
	return nil
}

// dataSize is how much of a send of size bytes is copied: all of a
// datagram (bounded), at most a chunk of a stream.
func (c *sendCall) dataSize(size uint64) (int, error) {
	if c.si.Type == unix.SOCK_STREAM {
		return int(min(size, maxStreamChunk)), nil
	}
	if size > maxDatagram {
		return 0, kernelErr(unix.EMSGSIZE, "datagram too large")
	}
	return int(size), nil
}

// destination parses and resolves a message's destination when the
// kernel would use it.
func (c *sendCall) destination(d *decoder, m *sendMsg, tgid int) error {
	if !m.snd.HasName || !nameMatters(c.si, c.flags) {
		return nil // sent as given; the kernel ignores (or refuses) the name
	}
	if len(m.snd.Name) == 0 && c.msg {
		return nil // sendmsg: a zero-length name is no name
	}
	ds, err := parseDest(m.snd.Name, c.si, false)
	if err != nil {
		return err
	}
	if m.t, err = d.target(ds, c.h, c.si, tgid); err != nil {
		return err
	}
	m.snd.Unix = m.t.unix
	if m.t.reached != nil {
		if hasPktinfo(m.snd.Control) {
			// The source it names would become the destination.
			return &refusal{errno: unix.EPERM, why: "a datagram to the unspecified address with a source address (IP_PKTINFO) goes where permwrap cannot predict"}
		}
		m.snd.Name = m.t.reached
	}
	return nil
}

// hasPktinfo reports whether control messages set a source address
// (IP_PKTINFO, IPV6_PKTINFO).
func hasPktinfo(control []byte) bool {
	msgs, err := unix.ParseSocketControlMessage(control)
	if err != nil {
		return len(control) > 0
	}
	for _, cm := range msgs {
		if cm.Header.Level == unix.IPPROTO_IP && cm.Header.Type == unix.IP_PKTINFO ||
			cm.Header.Level == unix.IPPROTO_IPV6 && cm.Header.Type == unix.IPV6_PKTINFO {
			return true
		}
	}
	return false
}

// decodeMsghdr reads one struct msghdr at addr: the destination, the
// data (gathered from its iovecs), the control messages (file
// descriptors duplicated from the target, routing headers refused).
func (c *sendCall) decodeMsghdr(d *decoder, addr uint64, tgid int) (sendMsg, error) {
	var m sendMsg
	b, err := notify.ReadBytes(d.tid, addr, sizeofMsghdr)
	if err != nil {
		return m, memoryErr("the msghdr", err)
	}
	le := binary.LittleEndian
	namePtr, nameLen := le.Uint64(b[0:]), int32(le.Uint32(b[8:]))
	iovPtr, iovLen := le.Uint64(b[16:]), le.Uint64(b[24:])
	ctlPtr, ctlLen := le.Uint64(b[32:]), le.Uint64(b[40:])
	if nameLen < 0 {
		return m, kernelErr(unix.EINVAL, "negative msg_namelen")
	}
	if iovLen > uioMaxIov {
		return m, kernelErr(unix.EMSGSIZE, "too many iovecs")
	}
	m.snd.Flags = c.flags
	if namePtr != 0 && nameLen > 0 {
		n := min(int(nameLen), maxSockaddr)
		if m.snd.Name, err = notify.ReadBytes(d.tid, namePtr, n); err != nil {
			return m, memoryErr("the address", err)
		}
		m.snd.HasName = true
	}
	iov, err := notify.ReadIovecs(d.tid, iovPtr, int(iovLen))
	if err != nil {
		return m, memoryErr("the iovecs", err)
	}
	var total uint64
	for _, v := range iov {
		if v.Len > 0x7fffffff || total+v.Len > 0x7fffffff {
			return m, kernelErr(unix.EINVAL, "iovecs longer than INT_MAX")
		}
		total += v.Len
	}
	n, err := c.dataSize(total)
	if err != nil {
		return m, err
	}
	if m.snd.Data, err = notify.ReadGather(d.tid, iov, n); err != nil {
		return m, memoryErr("the data", err)
	}
	creds := false
	if ctlLen > 0 {
		if ctlLen > maxControl {
			return m, kernelErr(unix.ENOBUFS, "control messages too long")
		}
		raw, err := notify.ReadBytes(d.tid, ctlPtr, int(ctlLen))
		if err != nil {
			return m, memoryErr("the control messages", err)
		}
		if m.snd.Control, m.fds, err = c.control(raw, &creds); err != nil {
			m.release()
			return m, err
		}
	}
	if !creds && c.si.Domain == unix.AF_UNIX && pin.CanClaimUcred() {
		// A receiver with SO_PASSCRED gets the sender's credentials:
		// the target's, as if it had sent the message itself.
		if u, err := pin.SenderUcred(c.tid); err == nil {
			m.snd.Ucred = &u
		}
	}
	if err := c.destination(d, &m, tgid); err != nil {
		m.release()
		return m, err
	}
	return m, nil
}

// control rebuilds a message's control data for the supervisor to send:
// SCM_RIGHTS with the target's descriptors duplicated into the supervisor
// (a bad one is EBADF, as the kernel answers), routing headers refused,
// SCM_CREDENTIALS checked as the kernel checks them for the target
// (credentials), everything else as it was. creds says whether the
// message carries SCM_CREDENTIALS.
func (c *sendCall) control(raw []byte, creds *bool) ([]byte, []*os.File, error) {
	if len(raw) < unix.SizeofCmsghdr {
		return nil, nil, nil // shorter than a header: the kernel sees none
	}
	msgs, err := unix.ParseSocketControlMessage(raw)
	if err != nil {
		return nil, nil, kernelErr(unix.EINVAL, "malformed control message")
	}
	var out []byte
	var fds []*os.File
	fail := func(err error) ([]byte, []*os.File, error) {
		for _, f := range fds {
			f.Close()
		}
		return nil, nil, err
	}
	for _, cm := range msgs {
		switch {
		case cm.Header.Level == unix.SOL_SOCKET && cm.Header.Type == unix.SCM_RIGHTS:
			var mine []int
			for i := 0; i+4 <= len(cm.Data); i += 4 {
				fd := int(int32(binary.LittleEndian.Uint32(cm.Data[i:])))
				f, err := pin.GetFd(c.tid, fd)
				if err != nil {
					if errors.Is(err, unix.EBADF) {
						return fail(kernelErr(unix.EBADF, "bad fd in SCM_RIGHTS"))
					}
					return fail(&refusal{errno: pin.Errno(err), why: "taking a descriptor passed with SCM_RIGHTS", err: err})
				}
				fds = append(fds, f)
				mine = append(mine, int(f.Fd()))
			}
			out = append(out, unix.UnixRights(mine...)...)
		case cm.Header.Level == unix.SOL_SOCKET && cm.Header.Type == unix.SCM_CREDENTIALS:
			if err := c.credentials(cm.Data); err != nil {
				return fail(err)
			}
			*creds = true
			out = append(out, cmsg(cm.Header.Level, cm.Header.Type, cm.Data)...)
		default:
			if what, ok := routingCmsg(cm.Header.Level, cm.Header.Type); ok {
				return fail(&refusal{errno: unix.EPERM, why: what + " would send the datagram past its judged destination"})
			}
			out = append(out, cmsg(cm.Header.Level, cm.Header.Type, cm.Data)...)
		}
	}
	return out, fds, nil
}

// credentials checks SCM_CREDENTIALS the target sends. The kernel checks
// them against whoever sends: permwrap, which can send them only when it
// may name any process (root: pin.CanClaimUcred). So they are checked here
// as the kernel would check them for the target — its own pid, one of its
// ids, or its capabilities — and the kernel's EPERM is its answer when
// they are not its to send.
func (c *sendCall) credentials(data []byte) error {
	if len(data) < unix.SizeofUcred {
		return kernelErr(unix.EINVAL, "short SCM_CREDENTIALS")
	}
	u := pin.Ucred{Pid: int32(binary.LittleEndian.Uint32(data)), UID: binary.LittleEndian.Uint32(data[4:]), GID: binary.LittleEndian.Uint32(data[8:])}
	switch err := pin.CheckUcred(c.tid, u); {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EINVAL):
		return kernelErr(pin.Errno(err), "SCM_CREDENTIALS that are not the sender's")
	case errors.Is(err, pin.ErrForeignNamespace):
		return &refusal{errno: unix.EPERM, why: "SCM_CREDENTIALS from another user or pid namespace, which permwrap cannot translate", err: err}
	case err != nil:
		return &refusal{errno: pin.Errno(err), why: "reading the sender's credentials", err: err}
	}
	if !pin.CanClaimUcred() {
		return &refusal{errno: unix.EPERM, why: "SCM_CREDENTIALS: permwrap sends on the process's behalf, and only a permwrap running as root may send another process's credentials"}
	}
	return nil
}

// cmsg encodes one control message.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	binary.LittleEndian.PutUint64(b[0:], uint64(unix.CmsgLen(len(data))))
	binary.LittleEndian.PutUint32(b[8:], uint32(level))
	binary.LittleEndian.PutUint32(b[12:], uint32(typ))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

// judge: the first message's destination decides the call. For
// sendmmsg, the messages after it that the policy allows outright are
// sent with it, up to the first that is not: the call returns how many
// were sent, as when the kernel stops at a failing message, and the
// program's next call (which starts at that message) is judged on it.
func (c *sendCall) judge(p *engine.Policy) verdict {
	c.allowed = make([]bool, len(c.msgs))
	if len(c.msgs) == 0 {
		return verdict{result: allowUnchecked(""), access: c.name, quiet: true}
	}
	first := c.msgs[0].t.judge(p, c.name)
	c.asked = 0
	for i := 1; i < len(c.msgs); i++ {
		v := c.msgs[i].t.judge(p, c.name)
		if v.result.Action != engine.Allow {
			break
		}
		c.allowed[i] = true
		if first.quiet && !v.quiet {
			first = v // logged under the first destination judged
		}
	}
	return first
}

// perform sends the messages, in order: the first (the one judged) and,
// for sendmmsg, those after it the policy allowed outright, up to the
// first it did not. A send on a blocking socket is first tried without
// waiting (MSG_DONTWAIT, which changes nothing when there is room); only
// one that would wait is finished off the receiving pool, blocking as the
// target's own call would have.
func (c *sendCall) perform(s *supervisor, id uint64, _ *notify.Quiet) {
	c.done.Store(true)
	if c.si.Type == unix.SOCK_DGRAM && c.si.Domain != unix.AF_NETLINK {
		// A datagram socket is bound by its first send, and a reply to
		// it reaches the tree's own socket (netlocal.go): recorded before
		// the send, so a reply judged while it is being sent finds it.
		s.net.own.record(c.h)
	}
	if len(c.msgs) > 0 && c.msgs[0].t.closed {
		// A stream send that connects (MSG_FASTOPEN) where nothing
		// listens (netTarget.closed).
		c.finish(s, id, 0, unix.ECONNREFUSED)
		return
	}
	st := &sendState{valid: func() bool { return s.l.IDValid(id) == nil }}
	if n, err, wait := c.sendFrom(st, false); !wait {
		c.finish(s, id, n, err)
		return
	}
	go func() {
		n, err, _ := c.sendFrom(st, true)
		c.finish(s, id, n, err)
	}()
}

func (c *sendCall) finish(s *supervisor, id uint64, n int, err error) {
	defer c.release()
	if err != nil {
		s.respondErr(id, errnoOf(err))
		return
	}
	s.respondVal(id, int64(n))
}

// sendState is how far a send has got.
type sendState struct {
	next  int // the message being sent
	off   int // bytes of it already sent (a stream's partial send)
	sent  int // sendmmsg: messages sent
	valid func() bool
}

// sendFrom sends from where st stands. With mayBlock false it never
// waits: wait reports that it stopped where the send would have to (the
// caller goes on off the pool). It answers the byte count of sendto and
// sendmsg, or sendmmsg's count of messages, each message's msg_len
// written back into the target's memory while it still waits in the call
// (st.valid); an error after some messages were sent ends sendmmsg with
// the count, as the kernel does.
func (c *sendCall) sendFrom(st *sendState, mayBlock bool) (result int, err error, wait bool) {
	for st.next < len(c.msgs) {
		i := st.next
		if i > 0 && !c.allowed[i] {
			break
		}
		m := &c.msgs[i]
		n, err, wouldBlock := c.sendPart(m, st.off, mayBlock)
		st.off += n
		if wouldBlock {
			return 0, nil, true
		}
		if err != nil {
			if c.mmsg && st.sent > 0 {
				return st.sent, nil, false
			}
			return 0, err, false
		}
		if !c.mmsg {
			return st.off, nil, false
		}
		if !st.valid() || notify.WriteUint32(c.tid, m.mlen, uint32(st.off)) != nil {
			return st.sent + 1, nil, false
		}
		st.sent++
		st.next, st.off = i+1, 0
	}
	return st.sent, nil, false
}

// sendPart sends what is left of one message from off: the whole
// datagram, or the rest of a stream's data (control messages go with its
// first byte, as the kernel attaches them). Without mayBlock it never
// waits: a call that may wait is sent with MSG_DONTWAIT, and one that
// could not finish on a blocking socket reports wouldBlock (a TCP Fast
// Open send, whose connect must not be made non-blocking, always does).
// Whether the socket is blocking is asked only then: most sends never
// need to know.
func (c *sendCall) sendPart(m *sendMsg, off int, mayBlock bool) (n int, err error, wouldBlock bool) {
	snd := m.snd
	if off > 0 {
		snd = pin.Send{Data: m.snd.Data[off:], Flags: m.snd.Flags &^ unix.MSG_FASTOPEN}
	}
	tryOnly := !mayBlock && c.flags&unix.MSG_DONTWAIT == 0
	if tryOnly {
		if snd.Flags&unix.MSG_FASTOPEN != 0 {
			if nb, err := c.h.Nonblocking(); err != nil || !nb {
				return 0, nil, true
			}
			tryOnly = false // a non-blocking socket: sent as it is
		} else {
			snd.Flags |= unix.MSG_DONTWAIT
		}
	}
	if c.msg || off > 0 {
		n, err = c.h.Sendmsg(&snd)
	} else {
		n, err = c.h.Sendto(&snd)
	}
	if !tryOnly {
		return n, err, false
	}
	partial := err == nil && c.si.Type == unix.SOCK_STREAM && n < len(snd.Data)
	if !errors.Is(err, unix.EAGAIN) && !partial {
		return n, err, false
	}
	if nb, ferr := c.h.Nonblocking(); ferr == nil && nb {
		return n, err, false // the target's own socket would not have waited either
	}
	return n, nil, true
}

func (c *sendCall) release() {
	c.h.Close()
	for i := range c.msgs {
		c.msgs[i].release()
	}
}

func (c *sendCall) close() {
	if c.take() {
		c.release()
	}
}
