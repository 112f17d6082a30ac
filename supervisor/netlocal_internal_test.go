package supervisor

import (
	"bufio"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/notify/pin"
)

// A receiving socket no bind of which was recorded is the tree's own
// when every process holding it is in the tree, and a service outside,
// named by its holder, when one is not.
func TestHoldersTellTheTreesSockets(t *testing.T) {
	py := kerneltest.Tool(t, "python3")
	// A child of this process listens: with this process as the tree's
	// watchdog, the child is in the tree.
	cmd := exec.Command(py, "-c", `import socket, sys
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
print(l.getsockname()[1], flush=True)
sys.stdin.read()`)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(strings.TrimSpace(line))
	r, ok, err := pin.InetReceiver(unix.IPPROTO_TCP, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)))
	if err != nil || !ok {
		kerneltest.Skipf(t, "sock_diag inet lookups: %v %v", ok, err)
	}
	var c holderCache
	if s := c.of(r, &tree{watchdog: unix.Getpid()}); !s.Tree {
		t.Errorf("a socket only the tree holds: %+v", s)
	}
	var outside holderCache
	s := outside.of(r, &tree{watchdog: 1 << 22})
	if s.Tree || s.PID != cmd.Process.Pid || !strings.Contains(s.Exe, "python") || !strings.Contains(s.Cmdline, "socket") {
		t.Errorf("a socket held outside the tree: %+v (the holder is %d)", s, cmd.Process.Pid)
	}
}
