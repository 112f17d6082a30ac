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
	kerneltest.Tool(t, "unshare")
	conf := filepath.Join(s.dir, "resolv.conf")
	if err := os.WriteFile(conf, []byte("nameserver "+f.far.String()+"\noptions timeout:2 attempts:2\n"), 0o644); err != nil {
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
	mustContain(t, "denial line", r.stdout, "permwrap: denied connect tcp "+f.host.String()+":"+strconv.Itoa(hostPort)+" (resolved from denied.pwtest): not this one — rule net:denied.pwtest (deny")
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
