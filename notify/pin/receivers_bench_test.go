package pin

import (
	"net/netip"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// The lookups the supervisor makes on a connect or a send to a local
// address, beside two plain syscalls as a baseline in the same run:
//
//	go test -run XXX -bench 'Receiver|Holders|Baseline' -count 5 ./notify/pin/
//
// Unix lookups are a dump of every Unix socket of the namespace, so
// their cost grows with that number (logged); Holders grows with the
// number of fds of all processes (logged).

func BenchmarkBaselineGetpid(b *testing.B) {
	for b.Loop() {
		unix.Getpid()
	}
}

func BenchmarkBaselineGetsockname(b *testing.B) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	for b.Loop() {
		unix.Getsockname(fd)
	}
}

// benchListener is a loopback TCP listener and its address.
func benchListener(b *testing.B, typ int) (int, netip.AddrPort) {
	fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		b.Fatal(err)
	}
	if typ == unix.SOCK_STREAM {
		unix.Listen(fd, 8)
	}
	sa, _ := unix.Getsockname(fd)
	a, _ := InetAddrPort(sa)
	return fd, a
}

func BenchmarkInetReceiverTCP(b *testing.B) {
	_, dst := benchListener(b, unix.SOCK_STREAM)
	for b.Loop() {
		if _, ok, err := InetReceiver(unix.IPPROTO_TCP, dst); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkInetReceiverTCPNone(b *testing.B) {
	for b.Loop() {
		if _, ok, err := InetReceiver(unix.IPPROTO_TCP, netip.MustParseAddrPort("127.0.0.1:1")); ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkInetReceiverUDP(b *testing.B) {
	_, dst := benchListener(b, unix.SOCK_DGRAM)
	for b.Loop() {
		if _, ok, err := InetReceiver(unix.IPPROTO_UDP, dst); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

// unixSockets counts the namespace's Unix sockets (the dump's length).
func unixSockets(b *testing.B) int {
	n := 0
	if err := unixDump(0, anyState, func(Receiver) bool { n++; return true }); err != nil {
		b.Skip(err)
	}
	return n
}

// morePairs adds n connected socket pairs (a desktop's Unix sockets
// are mostly such connections) for the rest of b.
func morePairs(b *testing.B, n int) {
	for range n {
		p, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	}
}

func BenchmarkAbstractReceiver(b *testing.B) {
	b.Run("pairs=0", benchAbstract)
	b.Run("pairs=1000", func(b *testing.B) { morePairs(b, 1000); benchAbstract(b) })
}

func benchAbstract(b *testing.B) {
	name := "permwrap-bench-" + b.TempDir()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: "@" + name}); err != nil {
		b.Fatal(err)
	}
	unix.Listen(fd, 1)
	b.Logf("%d Unix sockets in the namespace", unixSockets(b))
	for b.Loop() {
		if _, ok, err := AbstractReceiver(name, unix.SOCK_STREAM); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkUnixReceiver(b *testing.B) {
	b.Run("pairs=0", benchUnix)
	b.Run("pairs=1000", func(b *testing.B) { morePairs(b, 1000); benchUnix(b) })
}

func benchUnix(b *testing.B) {
	path := b.TempDir() + "/s.sock"
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		b.Fatal(err)
	}
	unix.Listen(fd, 1)
	var st unix.Stat_t
	unix.Stat(path, &st)
	f := FileID{Dev: st.Dev, Ino: st.Ino}
	for b.Loop() {
		if _, ok, err := UnixReceiver(f); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkHolders(b *testing.B) {
	fd, _ := benchListener(b, unix.SOCK_STREAM)
	var st unix.Stat_t
	unix.Fstat(fd, &st)
	fds := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if d, err := os.ReadDir("/proc/" + e.Name() + "/fd"); err == nil {
			fds += len(d)
		}
	}
	b.Logf("%d processes, %d fds", len(ents), fds)
	for b.Loop() {
		if pids, _, err := Holders(uint32(st.Ino), 0); len(pids) != 1 || err != nil {
			b.Fatal(pids, err)
		}
	}
}

// BenchmarkUnixDumpAll: a dump of every state, for comparison with
// UnixReceiver's dump of the states that can receive.
func BenchmarkUnixDumpAll(b *testing.B) {
	b.Run("pairs=1000", func(b *testing.B) {
		morePairs(b, 1000)
		for b.Loop() {
			if err := unixDump(udiagShowVFS, anyState, func(Receiver) bool { return true }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
