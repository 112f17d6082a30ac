package supervisor

import (
	"bufio"
	"bytes"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify/host"
	"github.com/permwrap/permwrap/supervisor/egress"
)

// netState is what the supervisor knows beyond the policy when it judges
// a destination: the egress proxy (its address, the names it resolved,
// who connected to it), the system's name servers, and the Unix sockets
// the tree itself bound.
type netState struct {
	proxy *egress.Proxy      // nil: not running
	peers *egress.ExactPeers // the proxy's view of who connected to it
	ns    nameservers
	own   ownSockets // the sockets the tree bound (netlocal.go)
	local localAddrs
	// holders: who serves a socket outside the tree, by its cookie.
	holders holderCache
	// unixFiles: which socket is bound to a socket file, by the file.
	unixFiles unixFileCache
	// procs is the sandboxed tree, to tell whether a socket's holders
	// are its processes; nil: none are.
	procs *tree
	sends sendLog
	// tree: the names the tree itself resolved (dns.go); nil: none are
	// learned.
	tree *treeNames
}

// names are the names resolved to a for this tree: by the proxy, by the
// tree through the system's name servers, and in /etc/hosts.
func (n *netState) names(a netip.Addr) []string {
	if n == nil {
		return nil
	}
	var out []string
	if n.proxy != nil {
		out = n.proxy.Cache().Names(a)
	}
	for _, name := range n.tree.names(a) {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// isProxy reports whether ap is the egress proxy's own address.
func (n *netState) isProxy(ap netip.AddrPort) bool {
	if n == nil || n.proxy == nil {
		return false
	}
	a := ap.Addr().Unmap().WithZone("")
	return netip.AddrPortFrom(a, ap.Port()) == n.proxy.Addr()
}

// nameservers are the addresses /etc/resolv.conf names, read again when
// the file changes (it is rewritten by DHCP clients, resolvconf,
// NetworkManager).
type nameservers struct {
	sysFile[map[netip.Addr]bool]
}

func (n *nameservers) is(a netip.Addr) bool {
	return n.get("/etc/resolv.conf", parseResolvConf)[a.Unmap().WithZone("")]
}

// nsRecheck bounds how often a system file is stat'ed.
const nsRecheck = time.Second

// sysFile is a small system file (/etc/resolv.conf, /etc/hosts) as
// parsed, read again when it changes: looked at at most once per
// nsRecheck, read when its inode, size or mtime moved. A missing or
// unreadable file parses as nil bytes. The value is replaced, never
// changed, so a caller may keep what get returned.
type sysFile[T any] struct {
	mu     sync.Mutex
	path   string // "" is the default get is given
	stamp  [4]int64
	val    T
	parsed bool
	check  time.Time
}

func (f *sysFile[T]) get(def string, parse func([]byte) T) T {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := time.Now(); !f.parsed || now.Sub(f.check) > nsRecheck {
		f.check = now
		f.reload(def, parse)
	}
	return f.val
}

func (f *sysFile[T]) reload(def string, parse func([]byte) T) {
	p := f.path
	if p == "" {
		p = def
	}
	var st unix.Stat_t
	if err := host.Stat(p, &st); err != nil {
		f.val, f.stamp, f.parsed = parse(nil), [4]int64{}, true
		return
	}
	stamp := [4]int64{int64(st.Ino), st.Size, st.Mtim.Sec, st.Mtim.Nsec}
	if f.parsed && stamp == f.stamp {
		return
	}
	b, err := os.ReadFile(p)
	if err != nil {
		f.val, f.parsed = parse(nil), true
		return
	}
	f.val, f.stamp, f.parsed = parse(b), stamp, true
}

// parseResolvConf reads the `nameserver ADDR` lines (a zone after % is
// dropped, as rules have none).
func parseResolvConf(b []byte) map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 || string(f[0]) != "nameserver" {
			continue
		}
		if a, err := netip.ParseAddr(string(f[1])); err == nil {
			out[a.Unmap().WithZone("")] = true
		}
	}
	return out
}

// sendLog keeps the review log from recording every allowed datagram: a
// program sending a stream of datagrams (DNS without connect, QUIC,
// syslog) to one destination would write a record per packet. An allowed
// send is recorded once per process, call and destination per
// sendLogTTL; refusals and asks are always recorded, and so is every
// allowed connect (a connection is one event).
type sendLog struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

const (
	sendLogTTL = time.Minute
	sendLogMax = 4096
)

// repeat reports whether an allowed send like v was recorded within the
// last sendLogTTL (and notes this one otherwise).
func (l *sendLog) repeat(v verdict) bool {
	if v.net == nil || v.access == "connect" {
		return false
	}
	key := strconv.Itoa(v.net.PID) + " " + v.access + " " + v.result.Check.Value + " " + v.net.Proto.String()
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.seen[key]; ok && now.Sub(t) < sendLogTTL {
		return true
	}
	if l.seen == nil || len(l.seen) >= sendLogMax {
		l.seen = map[string]time.Time{}
	}
	l.seen[key] = now
	return false
}
