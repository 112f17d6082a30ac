package supervisor_test

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// serveDNS answers A queries for names from a test resolver listening on
// the namespace's far address, port 53 (the address /etc/resolv.conf
// names for the run, see withResolver). Every other question gets
// NXDOMAIN.
func (f *netFixture) serveDNS(names map[string]netip.Addr) {
	f.t.Helper()
	var pc net.PacketConn
	f.inNamespace(func() (err error) {
		pc, err = net.ListenPacket("udp", f.far.String()+":53")
		return err
	})
	f.t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			reply := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true})
			reply.EnableCompression()
			a, ok := names[strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")]
			if !ok {
				reply = dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, RCode: dnsmessage.RCodeNameError})
			}
			reply.StartQuestions()
			reply.Question(q)
			reply.StartAnswers()
			if ok && q.Type == dnsmessage.TypeA {
				reply.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: a.As4()})
			}
			msg, err := reply.Finish()
			if err == nil {
				pc.WriteTo(msg, from)
			}
		}
	}()
}

// withResolver runs the sandbox's commands (bare and wrapped, permwrap
// included) with /etc/resolv.conf naming only the fixture's resolver and
// /etc/hosts without the test names, in a private mount namespace.
func withResolver(t *testing.T, s *sandbox, f *netFixture) {
	t.Helper()
	withNameserver(t, s, f.far)
}

// withNameserver runs the sandbox's commands with /etc/resolv.conf naming
// only ns.
func withNameserver(t *testing.T, s *sandbox, ns netip.Addr) {
	t.Helper()
	kerneltest.Tool(t, "unshare")
	conf := filepath.Join(s.dir, "resolv.conf")
	if err := os.WriteFile(conf, []byte("nameserver "+ns.String()+"\noptions timeout:2 attempts:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.prefix = []string{"unshare", "--mount", "--propagation", "private", "sh", "-c",
		`mount --bind "$0" /etc/resolv.conf && exec "$@"`, conf}
}

// A client that ignores the proxy variables resolves a name through the
// system's resolver and connects to the address it got: permwrap judges
// that connection by the name the tree resolved. Node 20's fetch reaches
// a host the policy allows by name, and is refused one it denies by name
// (at an address the policy says nothing of), with the name in the
// denial; Python's socket module and ssh are judged the same way; an
// address no name resolved to is judged as an address (and, once a name
// resolved to it, by that name whoever connects: the address is what the
// kernel sees).
func TestNetNamesTheTreeResolved(t *testing.T) {
	py := realPython(t)
	need(t, "node", "ssh")
	f := newNetFixture(t)
	allowed := f.listenTCP()
	port := allowed.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from "+r.Host) })}
	go srv.Serve(allowed)
	t.Cleanup(func() { srv.Close() })
	// denied.pwtest's address is this machine's end of the veth pair: no
	// rule names it, so only its name can deny it.
	hostSide, err := net.Listen("tcp", f.host.String()+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hostSide.Close() })
	hostSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello from "+r.Host) })}
	go hostSrv.Serve(hostSide)
	t.Cleanup(func() { hostSrv.Close() })
	hostPort := hostSide.Addr().(*net.TCPAddr).Port
	sshd := serveHello(t, f.listenTCP(), "SSH-2.0-pwtest")

	f.serveDNS(map[string]netip.Addr{"allowed.pwtest": f.far, "denied.pwtest": f.host})
	s := newSandbox(t, `{ "permission": { "net": {
	  "allowed.pwtest": "allow",
	  "denied.pwtest": { "action": "deny", "reason": "not this one" },
	  "`+f.host.String()+`": "allow" } } }`)
	withResolver(t, s, f)
	s.write("fetch.js", `(async () => {
  for (const u of process.argv.slice(2)) {
    try { const r = await fetch(u); console.log("fetch", u, r.status, await r.text()); }
    catch (e) { console.log("fetch-error", u, (e.cause && e.cause.code) || e.message); }
  }
})();`)
	s.write("connect.py", `import socket, sys
for host, port in zip(sys.argv[1::2], sys.argv[2::2]):
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
        print("python", host, "ok")
    except OSError as e:
        print("python", host, "errno", e.errno)
`)
	allowedURL := "http://allowed.pwtest:" + strconv.Itoa(port) + "/"
	deniedURL := "http://denied.pwtest:" + strconv.Itoa(hostPort) + "/"
	// The address first, before any name has resolved to it: afterwards
	// it carries the name denied.pwtest, whoever connects to it.
	script := fmt.Sprintf(`exec 2>&1
%[3]s connect.py %[6]s %[5]d
node fetch.js %[1]s %[2]s
%[3]s connect.py allowed.pwtest %[4]d denied.pwtest %[5]d
ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 -p %[7]d allowed.pwtest true; echo "ssh=$?"
`, allowedURL, deniedURL, py, port, hostPort, f.host, sshd.port)

	// Bare, every name resolves and every server answers.
	b := s.bare("bash", "-c", script)
	for _, want := range []string{
		"fetch " + allowedURL + " 200 hello from allowed.pwtest",
		"fetch " + deniedURL + " 200 hello from denied.pwtest",
		"python allowed.pwtest ok", "python denied.pwtest ok", "python " + f.host.String() + " ok",
	} {
		mustContain(t, "bare run", b.stdout, want)
	}
	sshBare := sshd.hits.Load()
	if sshBare != 1 {
		t.Fatalf("bare ssh did not reach its server (%d connections):\n%s", sshBare, b.stdout)
	}

	r := s.run("bash", "-c", script)
	for _, want := range []string{
		"fetch " + allowedURL + " 200 hello from allowed.pwtest",
		"fetch-error " + deniedURL + " EACCES",
		"python allowed.pwtest ok",
		"python denied.pwtest errno 13",
		// The address itself is allowed by a rule; with no name it is
		// judged as the address it is.
		"python " + f.host.String() + " ok",
	} {
		mustContain(t, "permwrap run", r.stdout, want)
	}
	if sshd.hits.Load() != sshBare+1 {
		t.Errorf("ssh to an allowed name did not reach its server under permwrap:\n%s\n%s", r.stdout, r.stderr)
	}
	// The test's server runs outside the tree: the line says who serves it.
	mustContain(t, "denial line", r.stdout, "permwrap: denied connect tcp "+f.host.String()+":"+strconv.Itoa(hostPort)+" (resolved from denied.pwtest), served outside the sandbox by ")
	mustContain(t, "denial line", r.stdout, "): not this one — rule net:denied.pwtest (deny")
	var sshByName bool
	for _, rec := range netRecords(s) {
		if rec["event"] == "permission_request.allowed" && rec["value"] == "allowed.pwtest:"+strconv.Itoa(sshd.port) {
			sshByName = true
		}
	}
	if !sshByName {
		t.Errorf("no record of ssh's connection allowed by the name allowed.pwtest")
	}
}

// The tree cannot give an address a name the policy allows: an answer
// counts only from a system name server, on port 53, in permwrap's own
// network namespace, before the tree serves port 53 itself. Each way of
// forging one works bare — the program resolves allowed.pwtest to an
// address no rule allows and connects — and under permwrap the forged
// name is the program's alone: the address is judged as an address.
func TestNetNamesTheTreeCannotForge(t *testing.T) {
	py := realPython(t)
	need(t, "unshare", "ip")
	f := newNetFixture(t)
	// The address the forged answers give: this machine's end of the
	// veth pair, which no rule names.
	target, err := net.Listen("tcp", f.host.String()+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Close() })
	go func() {
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := target.Addr().(*net.TCPAddr).Port
	// The system's name server is on loopback (as systemd-resolved's
	// 127.0.0.53 is), where nothing answers but what the tree starts.
	nameserver := netip.MustParseAddr("127.83.0.53")
	s := newSandbox(t, `{ "permission": { "net": { "allowed.pwtest": "allow" } } }`)
	withNameserver(t, s, nameserver)
	s.write("forge.py", `import socket, struct, sys, threading
mode, fake, nameserver = sys.argv[1], sys.argv[2], sys.argv[3]
def answer(q):
    i = 12
    while q[i] != 0:
        i += q[i] + 1
    return (q[:2] + b"\x81\x80" + struct.pack(">HHHH", 1, 1, 0, 0) + q[12:i + 5]
            + b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton(fake))
def serve(at):
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(at)
    def loop():
        while True:
            q, a = srv.recvfrom(512)
            srv.sendto(answer(q), a)
    threading.Thread(target=loop, daemon=True).start()
    return srv
def resolve():
    return socket.getaddrinfo("allowed.pwtest", 80, socket.AF_INET, socket.SOCK_STREAM)[0][4][0]
if mode == "own-server":
    # A DNS server of its own, asked directly.
    srv = serve(("127.0.0.1", 0))
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    c.settimeout(5)
    c.sendto(struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0) + b"\x07allowed\x06pwtest\x00" + struct.pack(">HH", 1, 1), srv.getsockname())
    ans, _ = c.recvfrom(512)
    addr = socket.inet_ntoa(ans[-4:])
elif mode == "serve-nameserver":
    # The name server's own address and port, taken by the tree.
    serve((nameserver, 53))
    addr = resolve()
elif mode == "nat":
    # In a network namespace of its own (run under unshare -rn), where
    # a NAT rule sends the name server's traffic to the tree's server
    # and its answers come back from the name server's address, port 53.
    serve(("127.0.0.1", 5353))
    addr = resolve()
print("resolved", addr)
`)
	s.write("connect.py", `import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10).close()
    print("connect ok")
except OSError as e:
    print("connect errno", e.errno)
`)
	nat := fmt.Sprintf(`ip link set lo up && nft add table ip t && nft 'add chain ip t out { type nat hook output priority -100; }' && nft add rule ip t out ip daddr %s udp dport 53 dnat to 127.0.0.1:5353 && %s forge.py nat %s %s`, nameserver, py, f.host, nameserver)
	cases := []struct {
		name, forge string
	}{
		{"own server", fmt.Sprintf("%s forge.py own-server %s %s", py, f.host, nameserver)},
		{"serve the name server's port", fmt.Sprintf("%s forge.py serve-nameserver %s %s", py, f.host, nameserver)},
		{"answer from a namespace of its own", "unshare -rn sh -c '" + strings.ReplaceAll(nat, "'", `'\''`) + "'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "answer from a namespace of its own" {
				need(t, "nft")
			}
			script := fmt.Sprintf("exec 2>&1\n%s\n%s connect.py %s %d\n", c.forge, py, f.host, port)
			b := s.bare("bash", "-c", script)
			// Bare, the forgery works: the name resolves to the address
			// and the connection is made.
			mustContain(t, "bare run", b.stdout, "resolved "+f.host.String())
			mustContain(t, "bare run", b.stdout, "connect ok")
			r := s.run("bash", "-c", script)
			mustContain(t, "permwrap run", r.stdout, "resolved "+f.host.String())
			mustContain(t, "permwrap run", r.stdout, "connect errno 13")
			mustContain(t, "denial line", r.stdout, "permwrap: denied connect tcp "+f.host.String()+":"+strconv.Itoa(port)+" (no name known)")
		})
	}
}
