package supervisor_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// Services outside the tree (issue 28), under the default policy: a tmux
// server and a loopback service the person started cannot be driven from
// inside without an ask (headless: denied), while the same kind of
// server started by the tree itself needs none. Each outside attempt is
// first shown to work bare.

func TestOutsideTmuxServerAsks(t *testing.T) {
	tmux := kerneltest.Tool(t, "tmux")
	s := newSandbox(t, "")
	sock := filepath.Join(s.dir, "tmux-outside", "default")
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	// The person's tmux server, outside any tree.
	start := exec.Command(tmux, "-S", sock, "-f", "/dev/null", "new-session", "-d", "-s", "mine", "sleep 600")
	start.Env = append(os.Environ(), "HOME="+s.home)
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("starting the outside tmux server: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })

	marker := filepath.Join(s.home, "ran-by-outside-tmux")
	drive := []string{tmux, "-S", sock, "run-shell", "touch " + marker}
	if r := s.bare(drive...); r.code != 0 || !exists(marker) {
		t.Fatalf("bare, the outside tmux server does not run what it is sent (exit %d): %s", r.code, r.stderr)
	}
	os.Remove(marker)

	r := s.run(drive...)
	if exists(marker) {
		t.Fatalf("under permwrap, the outside tmux server ran a command for the tree (exit %d)\nstderr: %s", r.code, r.stderr)
	}
	if r.code == 0 {
		t.Errorf("tmux exited 0 though it could not reach its server; stderr: %s", r.stderr)
	}
	if !strings.Contains(r.stderr, "served outside the sandbox by") || !strings.Contains(r.stderr, "tmux") {
		t.Errorf("the denial does not name the serving program:\n%s", r.stderr)
	}

	// The twin: a tmux server the tree starts itself, driven from inside.
	own := filepath.Join(s.dir, "tmux-own", "default")
	if err := os.MkdirAll(filepath.Dir(own), 0o700); err != nil {
		t.Fatal(err)
	}
	twin := filepath.Join(s.workspace, "ran-by-own-tmux")
	script := strings.Join([]string{
		tmux + " -S " + own + " -f /dev/null new-session -d -s inner 'sleep 600'",
		tmux + " -S " + own + " run-shell 'touch " + twin + "'",
		tmux + " -S " + own + " kill-server",
	}, " && ")
	if r := s.run("sh", "-c", script); r.code != 0 || !exists(twin) {
		t.Fatalf("a tmux server the tree started could not be driven from inside (exit %d): %s", r.code, r.stderr)
	}
}

func TestOutsideLoopbackServiceAsks(t *testing.T) {
	py := kerneltest.Tool(t, "python3")
	s := newSandbox(t, "")
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("OUTSIDE-SERVICE\n"))
			c.Close()
		}
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	client := `import socket,sys
s=socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
print(s.recv(64).decode().strip())`
	for _, host := range []string{"127.0.0.1", "localhost", "0.0.0.0", "::ffff:127.0.0.1"} {
		if r := s.bare(py, "-c", client, host, port); !strings.Contains(r.stdout, "OUTSIDE-SERVICE") {
			t.Fatalf("bare, %s:%s does not reach the outside service: %s", host, port, r.stderr)
		}
		r := s.run(py, "-c", client, host, port)
		if strings.Contains(r.stdout, "OUTSIDE-SERVICE") {
			t.Errorf("under permwrap, %s:%s reached a service outside the sandbox without an ask", host, port)
		}
	}
	// The same, allowed by a rule naming the destination.
	s2 := newSandbox(t, `{"permission": {"net": {"127.0.0.1:`+port+`": "allow"}}}`)
	if r := s2.run(py, "-c", client, "127.0.0.1", port); !strings.Contains(r.stdout, "OUTSIDE-SERVICE") {
		t.Errorf("a rule allowing 127.0.0.1:%s did not let the connection through: %s", port, r.stderr)
	}
	// The twin: a server the tree starts itself on loopback.
	server := `import socket,os,sys
l=socket.socket(); l.bind(("127.0.0.1",0)); l.listen()
p=l.getsockname()[1]
if os.fork()==0:
    c,_=l.accept(); c.send(b"OWN-SERVICE\n"); c.close(); os._exit(0)
s=socket.create_connection(("localhost",p), timeout=5)
print(s.recv(64).decode().strip())`
	if r := s.run(py, "-c", server); !strings.Contains(r.stdout, "OWN-SERVICE") || r.code != 0 {
		t.Errorf("a server the tree started on loopback was not reached (exit %d): %s", r.code, r.stderr)
	}
	// The same with an MPTCP listener on the wildcard address (what Go's
	// net.Listen makes): the kernel's lookup names its TCP subflow.
	mptcp := strings.Replace(server, `l=socket.socket(); l.bind(("127.0.0.1",0))`, `l=socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); l.bind(("0.0.0.0",0))`, 1)
	if b := s.bare(py, "-c", mptcp); !strings.Contains(b.stdout, "OWN-SERVICE") {
		kerneltest.Skipf(t, "no MPTCP listener here: %s", b.stderr)
	}
	if r := s.run(py, "-c", mptcp); !strings.Contains(r.stdout, "OWN-SERVICE") || r.code != 0 {
		t.Errorf("an MPTCP server the tree started was not reached (exit %d): %s", r.code, r.stderr)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
