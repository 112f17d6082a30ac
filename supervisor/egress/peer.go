package egress

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/permwrap/permwrap/internal/procfs"
)

// Peers names the process at the other end of a loopback connection to
// the proxy, so a request can be judged, asked about and logged with the
// process that made it — and refused when it comes from outside the tree.
type Peers interface {
	// Peer returns the pid of the process that holds the client end of
	// the TCP connection from client to proxy.
	Peer(client, proxy netip.AddrPort) (int, error)
}

// ErrNoPeer is returned when no process of the tree holds the connection:
// it comes from elsewhere, or its process has gone.
var ErrNoPeer = errors.New("no process of this session holds the connection")

// ProcPeers finds a connection's process through /proc: the socket's
// inode from /proc/net/tcp{,6} (matched on both ends of the connection),
// then the process of the tree with an fd on that inode.
//
// SO_PEERCRED does not exist for TCP, and the inode scan costs one
// readlink per open fd of each process of the tree (about 1 µs each), so
// the process found last is tried first: a client usually opens several
// connections. The supervisor can do better for the tree it supervises:
// it performs the tree's connect() itself (docs/network.md) and so knows
// the client port and pid before the proxy accepts; ProcPeers is what
// works without that.
type ProcPeers struct {
	// Root is the process whose descendants (and itself) may use the
	// proxy: permwrap's own pid, whose children are the tree (orphans are
	// re-parented to it as the subreaper). 0 accepts any process.
	Root int
	last atomic.Int64
}

// Peer implements Peers.
func (pp *ProcPeers) Peer(client, proxy netip.AddrPort) (int, error) {
	inode, err := socketInode(client, proxy)
	if err != nil {
		return 0, err
	}
	link := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	var pids []int
	if pp.Root > 0 {
		pids = treePids(pp.Root)
	} else {
		pids, _ = procfs.Pids()
	}
	if last := int(pp.last.Load()); last > 0 {
		if i := slices.Index(pids, last); i > 0 {
			pids[0], pids[i] = pids[i], pids[0]
		}
	}
	for _, pid := range pids {
		if holdsFd(pid, link) {
			pp.last.Store(int64(pid))
			return pid, nil
		}
	}
	return 0, ErrNoPeer
}

// socketInode finds the inode of the socket whose local end is client and
// remote end is proxy.
func socketInode(client, proxy netip.AddrPort) (uint64, error) {
	want := [2]netip.AddrPort{unmapAP(client), unmapAP(proxy)}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		inode, found, err := scanTCPTable(f, want)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, err
		}
		if found {
			return inode, nil
		}
	}
	return 0, fmt.Errorf("%w: %v → %v is not in /proc/net/tcp", ErrNoPeer, client, proxy)
}

func unmapAP(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
}

func scanTCPTable(name string, want [2]netip.AddrPort) (uint64, bool, error) {
	f, err := os.Open(name)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 512), 4096)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 10 {
			continue
		}
		local, ok1 := parseProcAddr(fields[1])
		remote, ok2 := parseProcAddr(fields[2])
		if !ok1 || !ok2 || local != want[0] || remote != want[1] {
			continue
		}
		inode, err := strconv.ParseUint(string(fields[9]), 10, 64)
		if err != nil || inode == 0 {
			continue // a socket being torn down
		}
		return inode, true, nil
	}
	return 0, false, sc.Err()
}

// parseProcAddr reads "0100007F:1F90" (IPv4) or 32 hex digits and a port
// (IPv6): each 32-bit word in host byte order (little-endian here), the
// port in network order.
func parseProcAddr(b []byte) (netip.AddrPort, bool) {
	i := bytes.IndexByte(b, ':')
	if i < 0 {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(string(b[i+1:]), 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	raw := make([]byte, hex.DecodedLen(i))
	if _, err := hex.Decode(raw, b[:i]); err != nil || len(raw)%4 != 0 {
		return netip.AddrPort{}, false
	}
	for w := 0; w < len(raw); w += 4 {
		raw[w], raw[w+1], raw[w+2], raw[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
	}
	a, ok := netip.AddrFromSlice(raw)
	if !ok {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), true
}

// holdsFd reports whether process pid has an fd whose link is link. The
// newest fds (the highest numbers) are read first: the socket of a
// connection just made is usually among them.
func holdsFd(pid int, link string) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	d, err := os.Open(dir)
	if err != nil {
		return false
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	fds := make([]int, 0, len(names))
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil {
			fds = append(fds, fd)
		}
	}
	slices.Sort(fds)
	for i := len(fds) - 1; i >= 0; i-- {
		if l, err := os.Readlink(dir + strconv.Itoa(fds[i])); err == nil && l == link {
			return true
		}
	}
	return false
}

// treePids lists root and its descendants, through each thread's
// children file; where that file does not exist (a kernel without
// CONFIG_PROC_CHILDREN) it falls back to parent links from every
// process's stat.
func treePids(root int) []int {
	if _, err := os.Stat("/proc/" + strconv.Itoa(root) + "/task/" + strconv.Itoa(root) + "/children"); err != nil {
		return treeByStat(root)
	}
	out := []int{root}
	seen := map[int]bool{root: true}
	for i := 0; i < len(out); i++ {
		for _, pid := range procfs.Children(out[i]) {
			if !seen[pid] {
				seen[pid] = true
				out = append(out, pid)
			}
		}
	}
	return out
}

func treeByStat(root int) []int {
	children := map[int][]int{}
	pids, _ := procfs.Pids()
	for _, pid := range pids {
		if s, err := procfs.ReadStat(pid); err == nil {
			children[s.PPID] = append(children[s.PPID], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}
