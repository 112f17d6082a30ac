package supervisor

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify/pin"
)

// Destinations on this machine, and what serves them.
//
// A connection to a Unix socket, a loopback address or one of the host's
// own addresses reaches a process on this machine. When that process is
// one the tree started — a test server, a dev server, a tmux server
// started inside the session — the connection stays inside the sandbox.
// When it is not — the person's own tmux, a Redis or a Jupyter server, a
// session bus — the service acts for whoever connects, outside the
// sandbox: it is judged on `<outside:PROGRAM>` as well (engine.NetService),
// which the default policy asks about.
//
// The tree's own sockets are known by their kernel cookie, recorded when
// permwrap performs their bind, listen, or a datagram socket's connect or
// send (ownSockets.record), or found held by the tree's processes alone
// (holderCache.of). Which socket
// a connection would reach is asked of the kernel (NETLINK_SOCK_DIAG: the
// listener lookup a SYN or a datagram gets, the socket bound to a socket
// file, the socket holding an abstract name), and who holds it is read
// from /proc. Nothing that cannot be found is assumed to be the tree's.

// maxOwnSockets bounds the record of the tree's own sockets; past it the
// oldest are forgotten (a connection to one then asks as a service
// outside would).
const maxOwnSockets = 1 << 16

// ownSockets are the sockets the tree bound or listened on, by cookie
// (never reused while the system runs), oldest first.
type ownSockets struct {
	mu    sync.Mutex
	set   map[uint64]struct{}
	order []uint64
	next  int // the oldest entry in order, once it is full
}

// record notes h's socket as the tree's own.
func (o *ownSockets) record(h *pin.Handle) {
	c, err := h.Cookie()
	if err != nil || c == 0 {
		return
	}
	o.add(c)
}

func (o *ownSockets) add(c uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.set == nil {
		o.set = map[uint64]struct{}{}
	}
	if _, ok := o.set[c]; ok {
		return
	}
	if len(o.order) < maxOwnSockets {
		o.order = append(o.order, c)
	} else {
		delete(o.set, o.order[o.next])
		o.order[o.next] = c
		o.next = (o.next + 1) % maxOwnSockets
	}
	o.set[c] = struct{}{}
}

// recordListener records the socket a connection to h's listening
// address reaches, when it is h's own socket by another cookie: an MPTCP
// listener (what Go's net.Listen makes since Go 1.24) listens through a
// TCP subflow socket of its own, which shares the listener's inode and
// is what the kernel's lookup names. Both live now, so the inode says
// they are one listener.
func (o *ownSockets) recordListener(h *pin.Handle) {
	var st unix.Stat_t
	if err := unix.Fstat(int(h.File().Fd()), &st); err != nil {
		return
	}
	sa, err := h.Local()
	if err != nil {
		return
	}
	ap, ok := pin.InetAddrPort(sa)
	if !ok {
		return
	}
	a := loopbackFor(ap.Addr())
	r, found, err := pin.InetReceiver(unix.IPPROTO_TCP, netip.AddrPortFrom(a.Unmap(), ap.Port()))
	if err != nil || !found || uint64(r.Ino) != st.Ino {
		return
	}
	o.add(r.Cookie)
}

// owns reports whether the socket with that cookie is the tree's own.
func (o *ownSockets) owns(cookie uint64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.set[cookie]
	return ok
}

// localAddrs are the host's own addresses and the broadcast addresses
// of its networks, read again at most once per nsRecheck (DHCP, VPNs and
// containers change them).
type localAddrs struct {
	mu    sync.Mutex
	check time.Time
	set   map[netip.Addr]bool
}

func (l *localAddrs) has(a netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); l.set == nil || now.Sub(l.check) > nsRecheck {
		l.check = now
		l.set = readLocalAddrs()
	}
	return l.set[a]
}

// readLocalAddrs lists every address of every interface, with the
// broadcast address of each IPv4 network. An error leaves the set empty
// but for the limited broadcast address: loopback addresses are local
// without it.
func readLocalAddrs() map[netip.Addr]bool {
	set := map[netip.Addr]bool{netip.AddrFrom4([4]byte{255, 255, 255, 255}): true}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return set
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		p, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		p = p.Unmap()
		set[p] = true
		if ones, bits := n.Mask.Size(); p.Is4() && bits == 32 && ones < 31 {
			b := p.As4()
			for i := range b {
				b[i] |= ^n.Mask[len(n.Mask)-4+i]
			}
			set[netip.AddrFrom4(b)] = true
		}
	}
	return set
}

// isLocal reports whether a datagram or connection to a reaches this
// machine: loopback, an address of one of its interfaces, or a
// broadcast address (delivered to local listeners as well). Multicast is
// judged by its group address only (docs/network.md).
func (n *netState) isLocal(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsUnspecified() || n.local.has(a)
}

// unspecifiedDest is the address the kernel sends to for a connect or
// send to the unspecified address (0.0.0.0, ::, ::ffff:0.0.0.0), which
// Linux delivers to this host (measured, docs/network.md): for IPv4 (and
// IPv4-mapped), the socket's bound source address, or 127.0.0.1 when it
// has none; for IPv6 `::`, ::1, or 127.0.0.1 (mapped) on a socket bound
// to an IPv4-mapped address — except a UDP send, which uses the bound
// IPv4-mapped source too. The call is then performed with this address,
// not the unspecified one, so a bind made meanwhile cannot move it.
func unspecifiedDest(h *pin.Handle, si pin.SockInfo, a netip.Addr) (netip.Addr, error) {
	var bound netip.Addr
	if sa, err := h.Local(); err != nil {
		return a, err
	} else if ap, ok := pin.InetAddrPort(sa); ok {
		bound = ap.Addr()
	}
	v4loop := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	mapped := func(x netip.Addr) netip.Addr {
		if si.Domain == unix.AF_INET6 {
			return netip.AddrFrom16(x.As16())
		}
		return x
	}
	if a.Is4() || a.Is4In6() {
		if b := bound.Unmap(); b.Is4() && !b.IsUnspecified() {
			return mapped(b), nil
		}
		return mapped(v4loop), nil
	}
	if bound.Is4In6() && !bound.Unmap().IsUnspecified() {
		if si.Type == unix.SOCK_DGRAM {
			return bound, nil
		}
		return mapped(v4loop), nil
	}
	return netip.IPv6Loopback(), nil
}

// loopbackFor is a, or for the unspecified address the loopback address
// of its family, where a connection to it goes from a socket bound to
// no address (unspecifiedDest has the rest).
func loopbackFor(a netip.Addr) netip.Addr {
	switch {
	case !a.Unmap().IsUnspecified():
		return a
	case a.Is4() || a.Is4In6():
		return netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	return netip.IPv6Loopback()
}

// receiver is the socket a connection or datagram would reach on this
// machine.
type receiver struct {
	r     pin.Receiver
	found bool
}

// service says who serves a destination on this machine: the tree (its
// own socket receives), a process outside, or nobody (found false). A
// lookup the kernel cannot answer is a service outside the sandbox that
// permwrap cannot see: never the tree's.
func (n *netState) service(rc receiver, err error) (*engine.NetService, bool) {
	switch {
	case err != nil:
		return &engine.NetService{}, true
	case !rc.found:
		return nil, false
	case n.own.owns(rc.r.Cookie):
		return &engine.NetService{Tree: true}, true
	}
	s := n.holders.of(rc.r, n.procs)
	if s.Tree {
		n.own.add(rc.r.Cookie)
	}
	return s, true
}

// inetReceiver is the socket a connection (stream) or datagram to ap
// would reach.
func inetReceiver(si pin.SockInfo, ap netip.AddrPort) (receiver, error) {
	proto := unix.IPPROTO_TCP
	if si.Type == unix.SOCK_DGRAM {
		proto = unix.IPPROTO_UDP
	}
	r, ok, err := pin.InetReceiver(proto, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	return receiver{r, ok}, err
}

// maxHolderCache bounds the services remembered by cookie.
const maxHolderCache = 1024

// holderCache remembers who holds a receiving socket: a service's
// listening socket lives as long as the service, and finding its holder
// walks every process's descriptors.
type holderCache struct {
	mu sync.Mutex
	m  map[uint64]*engine.NetService
}

// of describes who holds r. A socket every holder of which is a process
// of the sandboxed tree (permwrap's own duplicates aside) is the tree's
// own, though no bind or listen of it was recorded: one the tree
// inherited or was passed, or a datagram socket whose first send is
// still being performed when its reply is judged. Otherwise the first
// holder outside the tree names the service (a listening socket shared
// by a pre-forking server is held by several of the same program).
// Processes permwrap cannot read (another user's) are not seen.
func (c *holderCache) of(r pin.Receiver, procs *tree) *engine.NetService {
	c.mu.Lock()
	s, ok := c.m[r.Cookie]
	c.mu.Unlock()
	if ok {
		return s
	}
	s = &engine.NetService{}
	pids, _, err := pin.Holders(r.Ino, 0)
	self := os.Getpid()
	outside, inside := 0, 0
	for _, pid := range pids {
		switch {
		case pid == self:
		case procs.contains(pid):
			inside++
		case outside == 0:
			outside = pid
		}
	}
	switch {
	case err == nil && inside > 0 && outside == 0:
		s.Tree = true
	case outside > 0:
		s.PID = outside
		if p, err := pin.Program(s.PID); err == nil {
			s.Exe = strings.TrimSuffix(p.Exe, " (deleted)")
			s.Cmdline = strings.Join(p.Args, " ")
			if p.Truncated {
				s.Cmdline += " …"
			}
		}
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxHolderCache {
		c.m = map[uint64]*engine.NetService{}
	}
	c.m[r.Cookie] = s
	c.mu.Unlock()
	return s
}

// sockaddrInet is ap as a sockaddr for a socket of si's family: the
// address a call is performed with when it is not the one given.
func sockaddrInet(ap netip.AddrPort, si pin.SockInfo) []byte {
	if si.Domain == unix.AF_INET6 {
		b := make([]byte, unix.SizeofSockaddrInet6)
		binary.LittleEndian.PutUint16(b, unix.AF_INET6)
		binary.BigEndian.PutUint16(b[2:], ap.Port())
		a := ap.Addr().As16()
		copy(b[8:24], a[:])
		return b
	}
	b := make([]byte, unix.SizeofSockaddrInet4)
	binary.LittleEndian.PutUint16(b, unix.AF_INET)
	binary.BigEndian.PutUint16(b[2:], ap.Port())
	a := ap.Addr().Unmap().As4()
	copy(b[4:8], a[:])
	return b
}

// netnsKind is where a socket lives, for the lookups.
type netnsKind uint8

const (
	netnsUnknown netnsKind = iota // cannot be told (no SO_NETNS_COOKIE)
	netnsHome                     // permwrap's own: its lookups see there
	netnsTree                     // one the tree made
)

// netnsOf says where h's socket lives. setns is refused in the sandbox
// (syscalls.go), so a socket in another network namespace than
// permwrap's is in one the tree created (unshare, clone): a new
// namespace holds nothing but what the tree puts in it, so a
// destination on "this machine" there is served by the tree.
func (n *netState) netnsOf(h *pin.Handle) netnsKind {
	if n.tree == nil || n.tree.home == 0 { // permwrap's own (dns.go), where its lookups see
		return netnsUnknown
	}
	c, err := h.NetnsCookie()
	switch {
	case err != nil || c == 0:
		return netnsUnknown
	case c == n.tree.home:
		return netnsHome
	}
	return netnsTree
}

// elsewhere is the service of a destination in a namespace permwrap
// does not look into: the tree's own, or unknown (never the tree's).
func elsewhere(k netnsKind) *engine.NetService {
	if k == netnsTree {
		return &engine.NetService{Tree: true}
	}
	return &engine.NetService{}
}

// inetService says who receives a connection or datagram to ap, a local
// address. A stream connection nothing listens for is closed: it is
// refused as the kernel refuses it (ECONNREFUSED, also for a
// non-blocking connect, which the kernel would report through
// SO_ERROR) unless the policy denies it; a datagram nothing is bound for
// reaches no one (nobody).
func (n *netState) inetService(h *pin.Handle, si pin.SockInfo, ap netip.AddrPort) (svc *engine.NetService, nobody, closed bool, err error) {
	if k := n.netnsOf(h); k != netnsHome {
		return elsewhere(k), false, false, nil
	}
	rc, lerr := inetReceiver(si, ap)
	svc, found := n.service(rc, lerr)
	switch {
	case found:
		return svc, false, false, nil
	case si.Type == unix.SOCK_DGRAM:
		return nil, true, false, nil
	}
	return nil, false, true, nil
}

// abstractService says who holds the abstract name. A name nobody holds
// is refused as the kernel refuses it.
func (n *netState) abstractService(h *pin.Handle, si pin.SockInfo, name string) (*engine.NetService, error) {
	if k := n.netnsOf(h); k != netnsHome {
		return elsewhere(k), nil // abstract names belong to a network namespace
	}
	r, ok, err := pin.AbstractReceiver(name, si.Type)
	svc, found := n.service(receiver{r, ok}, err)
	if !found {
		return nil, kernelErr(unix.ECONNREFUSED, "no socket holds this abstract name")
	}
	return svc, nil
}

// fileService says who is bound to the socket file r (any network
// namespace can reach a socket file; the lookup sees permwrap's own).
// unheard: no socket permwrap can see is bound to it — a stale file, or
// a server in another network namespace, which is judged as a service
// outside that permwrap cannot see.
func (n *netState) fileService(r *pin.Resolved) (svc *engine.NetService, unheard bool) {
	if r.Stat.Ino > 0xffffffff { // sock_diag reports 32-bit inode numbers
		return &engine.NetService{}, false
	}
	rc, err := n.unixFiles.receiver(r.ID())
	svc, found := n.service(rc, err)
	if !found {
		return &engine.NetService{}, true
	}
	return svc, false
}

// maxUnixFiles bounds the socket files remembered.
const maxUnixFiles = 1024

// unixFileCache remembers which socket is bound to a socket file: no
// other socket can ever be bound to that file (bind makes a new one), so
// the answer holds while that socket lives, which one small lookup by
// its cookie confirms; finding it the first time reads every Unix socket
// of the namespace.
type unixFileCache struct {
	mu sync.Mutex
	m  map[pin.FileID]pin.Receiver
}

func (c *unixFileCache) receiver(f pin.FileID) (receiver, error) {
	c.mu.Lock()
	r, ok := c.m[f]
	c.mu.Unlock()
	if ok {
		if still, err := pin.StillBound(pin.BoundUnix{Cookie: r.Cookie, Ino: r.Ino, File: f}); err == nil && still {
			return receiver{r, true}, nil
		}
	}
	r, found, err := pin.UnixReceiver(f)
	if err != nil || !found {
		c.mu.Lock()
		delete(c.m, f)
		c.mu.Unlock()
		return receiver{}, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxUnixFiles {
		c.m = map[pin.FileID]pin.Receiver{}
	}
	c.m[f] = r
	c.mu.Unlock()
	return receiver{r, true}, nil
}

// LookupService says who serves in's destination on this machine now,
// as a connection from permwrap's own network namespace would find it,
// for `permwrap explain net` (which runs outside any tree, so nothing is
// the tree's own). It returns nil for a destination not on this machine
// and a note for a person ("nothing listens there now").
func LookupService(in engine.NetIntent) (*engine.NetService, string) {
	var n netState
	var rc receiver
	var err error
	switch {
	case in.Proto == engine.ProtoUnix && len(in.Path) > 1 && in.Path[0] == '@':
		rc.r, rc.found, err = pin.AbstractReceiver(in.Path[1:], unix.SOCK_STREAM)
	case in.Proto == engine.ProtoUnix:
		var st unix.Stat_t
		if err := unix.Stat(in.Path, &st); err != nil {
			return nil, "the socket file cannot be looked at: " + err.Error()
		}
		rc, err = n.unixFiles.receiver(pin.FileID{Dev: st.Dev, Ino: st.Ino})
	case in.Addr.IsValid() && n.isLocal(in.Addr):
		si := pin.SockInfo{Domain: unix.AF_INET6, Type: unix.SOCK_STREAM}
		if in.Proto == engine.ProtoUDP {
			si.Type = unix.SOCK_DGRAM
		}
		rc, err = inetReceiver(si, netip.AddrPortFrom(loopbackFor(in.Addr), in.Port))
	default:
		return nil, ""
	}
	svc, found := n.service(rc, err)
	if !found {
		return nil, "nothing on this machine receives it now"
	}
	return svc, ""
}

// proxyService says who serves ap for the egress proxy, which connects
// for the tree (egress.Config.Service): nil when ap is not on this
// machine or nothing listens there (the proxy's dial then fails).
func (n *netState) proxyService(ap netip.AddrPort) *engine.NetService {
	if !n.isLocal(ap.Addr()) {
		return nil
	}
	a := loopbackFor(ap.Addr())
	rc, err := inetReceiver(pin.SockInfo{Domain: unix.AF_INET6, Type: unix.SOCK_STREAM}, netip.AddrPortFrom(a, ap.Port()))
	svc, found := n.service(rc, err)
	if !found {
		return nil
	}
	return svc
}
