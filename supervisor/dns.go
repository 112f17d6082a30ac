package supervisor

import (
	"bufio"
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify/pin"
	"github.com/permwrap/permwrap/supervisor/egress"
)

// The names the tree resolved. A program that ignores the proxy variables
// (Node before 22.21, ssh, git over SSH, anything with a resolver of its
// own) resolves a name and connects to the address it got: judged by the
// address alone, an address of a host the policy allows by name is not
// allowed. So permwrap learns which names the tree resolved to which
// addresses, as a DNS proxy backing name rules would (Cilium's), without
// being in the path: every recvfrom that asks for the sender's address is
// notified, and for a UDP socket the supervisor looks at the datagram the
// call is about to receive (a peek: the queue is left as it was) and,
// when it is a DNS answer from one of the system's name servers, records
// the name asked for and the addresses it resolved to, then continues the
// call, which the kernel carries out unchanged. Only sockets in permwrap's
// own network namespace count: in a namespace of its own, the tree is
// root and can answer as any address. glibc, musl, c-ares (Node's
// dns.resolve), Python and most resolvers read answers with recvfrom,
// after poll; a resolver that reads with read(2) or recvmsg (Go's own) is
// not seen (docs/network.md).
//
// Only answers from the name servers /etc/resolv.conf names count, and
// only the name the program asked for and the addresses at the end of its
// CNAME chain: an address is never given a name on the program's word,
// nor on the word of a server the program chose. Once the tree has bound
// a socket to port 53 (it could then answer its own queries), no answer
// is trusted again in this run. /etc/hosts counts too, as glibc reads it
// before any server.

// treeNames are the names learned for the tree: from DNS answers and
// /etc/hosts.
type treeNames struct {
	cache *egress.DNSCache
	// home is permwrap's network namespace, where the system's name
	// servers are (SO_NETNS_COOKIE); 0 when it cannot be told, and then
	// nothing is learned.
	home uint64
	// serving: the tree bound a socket to port 53; answers are no longer
	// trusted.
	serving atomic.Bool
	hosts   hostsFile
}

func newTreeNames() *treeNames {
	home, _ := pin.OwnNetnsCookie()
	return &treeNames{cache: egress.NewDNSCache(0, 0), home: home}
}

// maxCNAMEHops bounds the CNAME chain followed (resolvers give up near
// there too).
const maxCNAMEHops = 16

// maxDNSAnswer is how much of a datagram is looked at: a UDP answer is at
// most 4096 bytes with the EDNS sizes resolvers offer, 512 without.
const maxDNSAnswer = 4096

var dnsBufs = sync.Pool{New: func() any { return new([maxDNSAnswer]byte) }}

// learn records what a DNS answer says: the name asked for and the
// addresses of the end of its CNAME chain. Anything that is not a
// well-formed answer is ignored.
func (t *treeNames) learn(b []byte) {
	if t == nil || t.serving.Load() {
		return
	}
	var p dnsmessage.Parser
	h, err := p.Start(b)
	if err != nil || !h.Response || h.RCode != dnsmessage.RCodeSuccess {
		return
	}
	q, err := p.Question()
	if err != nil || (q.Type != dnsmessage.TypeA && q.Type != dnsmessage.TypeAAAA) || q.Class != dnsmessage.ClassINET {
		return
	}
	if err := p.SkipAllQuestions(); err != nil {
		return
	}
	asked := q.Name.String()
	// Every record first (a chain's records may come in any order), then
	// the chain from the name asked for.
	cname := map[string]string{}
	byOwner := map[string][]netip.Addr{}
	for {
		ah, err := p.AnswerHeader()
		if err != nil {
			break
		}
		owner := strings.ToLower(ah.Name.String())
		switch {
		case ah.Class != dnsmessage.ClassINET:
			err = p.SkipAnswer()
		case ah.Type == dnsmessage.TypeCNAME:
			var r dnsmessage.CNAMEResource
			if r, err = p.CNAMEResource(); err == nil {
				cname[owner] = strings.ToLower(r.CNAME.String())
			}
		case ah.Type == dnsmessage.TypeA:
			var r dnsmessage.AResource
			if r, err = p.AResource(); err == nil {
				byOwner[owner] = append(byOwner[owner], netip.AddrFrom4(r.A))
			}
		case ah.Type == dnsmessage.TypeAAAA:
			var r dnsmessage.AAAAResource
			if r, err = p.AAAAResource(); err == nil {
				byOwner[owner] = append(byOwner[owner], netip.AddrFrom16(r.AAAA))
			}
		default:
			err = p.SkipAnswer()
		}
		if err != nil {
			return
		}
	}
	name := strings.ToLower(asked)
	for hops := 0; hops < maxCNAMEHops; hops++ {
		next, ok := cname[name]
		if !ok {
			break
		}
		name = next
	}
	addrs := byOwner[name]
	if len(addrs) == 0 {
		return
	}
	n, err := engine.NormalizeHostName(strings.TrimSuffix(asked, "."))
	if err != nil {
		return
	}
	t.cache.Merge(n, addrs)
}

// names are the names the tree resolved to a: through DNS, and in
// /etc/hosts.
func (t *treeNames) names(a netip.Addr) []string {
	if t == nil {
		return nil
	}
	out := t.cache.Names(a)
	for _, n := range t.hosts.names(a) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// hostsFile is /etc/hosts, read again when it changes.
type hostsFile struct {
	sysFile[map[netip.Addr][]string]
}

func (h *hostsFile) names(a netip.Addr) []string {
	return h.get("/etc/hosts", parseHosts)[a.Unmap().WithZone("")]
}

// maxHostsNames bounds the names one address gets from /etc/hosts.
const maxHostsNames = 16

// parseHosts reads `ADDR NAME [ALIAS...]` lines (comments after #).
func parseHosts(b []byte) map[netip.Addr][]string {
	out := map[netip.Addr][]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Bytes()
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := bytes.Fields(line)
		if len(f) < 2 {
			continue
		}
		a, err := netip.ParseAddr(string(f[0]))
		if err != nil {
			continue
		}
		a = a.Unmap().WithZone("")
		for _, n := range f[1:] {
			name, err := engine.NormalizeHostName(string(n))
			if err == nil && len(out[a]) < maxHostsNames && !slices.Contains(out[a], name) {
				out[a] = append(out[a], name)
			}
		}
	}
	return out
}

// decodeRecvfrom looks at the datagram a UDP socket's recvfrom is about
// to receive and learns from it when it is an answer of a system name
// server (port 53); the call is continued either way: its outcome is the
// kernel's, and no argument was read from the target's memory. A socket
// that is not a UDP one, or that could not be taken, is left alone.
func decodeRecvfrom(d *decoder) (decoded, error) {
	if d.net == nil || d.net.tree == nil || d.net.tree.serving.Load() {
		return continued{}, nil
	}
	h, si, _, err := d.socketOf(d.fdArg(0))
	if err != nil {
		return continued{}, nil
	}
	defer h.Close()
	if si.Type != unix.SOCK_DGRAM || (si.Domain != unix.AF_INET && si.Domain != unix.AF_INET6) {
		return continued{}, nil
	}
	buf := dnsBufs.Get().(*[maxDNSAnswer]byte)
	defer dnsBufs.Put(buf)
	n, from, ok, err := h.Peek(buf[:])
	if err != nil || !ok || from.Port() != 53 || !d.net.ns.is(from.Addr()) {
		return continued{}, nil
	}
	// Only in permwrap's own network namespace is the name server's
	// address the system's: in one of the tree's own, the tree is root
	// and answers as any address it likes (a NAT rule, a bound port).
	if home, err := h.NetnsCookie(); err != nil || home == 0 || home != d.net.tree.home {
		return continued{}, nil
	}
	d.net.tree.learn(buf[:n])
	return continued{}, nil
}

// inetPort is the port of an AF_INET or AF_INET6 sockaddr, 0 for any
// other.
func inetPort(addr []byte) int {
	if len(addr) < 4 {
		return 0
	}
	switch int(addr[0]) | int(addr[1])<<8 {
	case unix.AF_INET, unix.AF_INET6:
		return int(addr[2])<<8 | int(addr[3])
	}
	return 0
}
