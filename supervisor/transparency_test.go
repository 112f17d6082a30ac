package supervisor_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/internal/testutil"
)

// Programs see the kernel's own behaviour under permwrap: each case runs
// the same program bare and wrapped (a policy that allows everything)
// and compares what it prints.

// goProgram builds a one-file Go program in the sandbox and returns its
// path.
func goProgram(t *testing.T, s *sandbox, name, src string) string {
	t.Helper()
	need(t, "go")
	s.write(name+"/main.go", src)
	s.write(name+"/go.mod", "module "+name+"\n\ngo 1.26\n")
	bin := filepath.Join(s.dir, name)
	testutil.GoBuild(t, s.path(name), bin, ".")
	return bin
}

// sameAsBare runs argv bare and under permwrap and requires the same
// output and status.
func sameAsBare(t *testing.T, s *sandbox, argv ...string) result {
	t.Helper()
	bare := s.bare(argv...)
	r := s.run(argv...)
	if r.stdout != bare.stdout || r.code != bare.code {
		t.Fatalf("%v differs under permwrap:\nbare (exit %d): %s%s\npermwrap (exit %d): %s%s",
			argv, bare.code, bare.stdout, bare.stderr, r.code, r.stdout, r.stderr)
	}
	return r
}

// A parent writes the uid and gid maps of a child it started in a new
// user namespace (Go's SysProcAttr.UidMappings, as the os/exec and
// syscall tests do).
func TestChildUserNamespaceMaps(t *testing.T) {
	s := newSandbox(t, allowAll)
	bin := goProgram(t, s, "usermaps", `package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	c := exec.Command("id", "-u")
	c.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := c.CombinedOutput()
	fmt.Printf("uid in the namespace: %q, error: %v\n", out, err)
}
`)
	r := sameAsBare(t, s, bin)
	if !strings.Contains(r.stdout, `uid in the namespace: "0\n", error: <nil>`) {
		t.Fatalf("the child was not mapped: %s", r.stdout)
	}
}

// A Unix socket's address is the path the program bound, as the kernel
// keeps it: getsockname, the client's getpeername, accept's and
// recvfrom's addresses and /proc/net/unix show it, absolute or relative,
// and a client connecting to the address the server reports reaches it
// from any directory.
func TestUnixSocketAddresses(t *testing.T) {
	need(t, "python3")
	s := newSandbox(t, allowAll)
	s.write("d/.keep", "")
	s.write("sockets.py", `import os, socket, sys, tempfile
base = tempfile.mkdtemp(dir=os.getcwd(), prefix="s")
out = []
def show(tag, v):
    out.append(tag + "=" + repr(v).replace(base, "BASE"))
# Absolute: the server reports its address, a client elsewhere connects to it.
srv = socket.socket(socket.AF_UNIX)
srv.bind(os.path.join(base, "abs.sock"))
srv.listen(1)
addr = srv.getsockname()
show("abs.getsockname", addr)
os.chdir("/")
cli = socket.socket(socket.AF_UNIX)
cli.connect(addr)
show("abs.getpeername", cli.getpeername())
conn, peer = srv.accept()
show("abs.accept.local", conn.getsockname())
# Relative, with a directory part, from the cwd.
os.chdir(base)
os.mkdir("sub")
rel = socket.socket(socket.AF_UNIX)
rel.bind("sub/rel.sock")
rel.listen(1)
show("rel.getsockname", rel.getsockname())
c2 = socket.socket(socket.AF_UNIX)
c2.connect("sub/rel.sock")
show("rel.getpeername", c2.getpeername())
# Datagrams: the receiver sees the sender's bound address.
a = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
a.bind(os.path.join(base, "a.sock"))
b = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
b.bind("b.sock")
b.sendto(b"x", os.path.join(base, "a.sock"))
show("dgram.recvfrom", a.recvfrom(10)[1])
# What /proc/net/unix lists for these sockets.
names = sorted(l.split()[-1] for l in open("/proc/net/unix") if l.rstrip().endswith(".sock"))
show("proc", [n for n in names if n.endswith(("abs.sock", "rel.sock", "a.sock", "b.sock"))])
# A path as long as sun_path allows.
os.chdir(base)
long = "L" * 100
l = socket.socket(socket.AF_UNIX)
l.bind(long)
show("long.getsockname", len(l.getsockname()))
print("\n".join(out))
`)
	r := sameAsBare(t, s, "python3", "sockets.py")
	for _, want := range []string{
		"abs.getsockname='BASE/abs.sock'",
		"abs.getpeername='BASE/abs.sock'",
		"abs.accept.local='BASE/abs.sock'",
		"rel.getsockname='sub/rel.sock'",
		"rel.getpeername='sub/rel.sock'",
		"dgram.recvfrom='b.sock'",
		"long.getsockname=100",
		"proc=['BASE/a.sock', 'BASE/abs.sock', 'BASE/abs.sock', 'b.sock', 'sub/rel.sock', 'sub/rel.sock']",
	} {
		mustContain(t, "the program's view", r.stdout, want)
	}
}

// Credentials over a Unix socket are the sender's: what a receiver with
// SO_PASSCRED sees for a message sent with sendmsg, and what a process
// sends with SCM_CREDENTIALS (its own, accepted; another's, refused
// unless it may, as the kernel decides for the sender). permwrap sends
// the message for the process, so it must be allowed to name the
// process's pid: that takes root (docs/security.md).
func TestUnixCredentials(t *testing.T) {
	need(t, "python3")
	s := newSandbox(t, allowAll)
	s.write("creds.py", `import os, socket, struct
def creds(msg):
    for level, typ, data in msg[1]:
        if level == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
            return struct.unpack("iII", data[:12])
    return None
for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
    a, b = socket.socketpair(socket.AF_UNIX, kind)
    a.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    b.sendmsg([b"x"])
    print(kind, "implicit", creds(a.recvmsg(10, 256)) == (os.getpid(), os.getuid(), os.getgid()))
    own = struct.pack("iII", os.getpid(), os.getuid(), os.getgid())
    b.sendmsg([b"y"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, own)])
    print(kind, "own", creds(a.recvmsg(10, 256)) == (os.getpid(), os.getuid(), os.getgid()))
    other = struct.pack("iII", os.getppid(), os.getuid(), os.getgid())
    try:
        b.sendmsg([b"z"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, other)])
        print(kind, "another's pid", creds(a.recvmsg(10, 256))[0] == os.getppid())
    except PermissionError:
        print(kind, "another's pid refused")
`)
	if !rootSupervisor() {
		// What docs/security.md says of a permwrap that is not root: the
		// process's own credentials cannot be sent for it, and the
		// refusal says why.
		r := s.run("python3", "creds.py")
		mustContain(t, "stderr", r.stderr, "only a permwrap running as root may send another process's credentials")
		return
	}
	r := sameAsBare(t, s, "python3", "creds.py")
	if strings.Contains(r.stdout, "False") {
		t.Fatalf("credentials not the sender's:\n%s", r.stdout)
	}
}

// rootSupervisor: permwrap, run by the tests as this user, runs as root.
func rootSupervisor() bool { return os.Geteuid() == 0 }

// A file saved through a temporary file beside it, as agents' edit tools
// and write-file-atomic do, is judged as a write of the file: under a
// rule that asks for the directory, an allowed file saves without a
// word, and a file the policy asks about is refused (headless) by its
// own name, never the temporary file's.
func TestSaveThroughTemporaryFile(t *testing.T) {
	need(t, "python3")
	s := newSandbox(t, `{ "extends": "none", "permission": { "*": "allow",
	  "write": { "*": "allow", "${WORKSPACE}/notes/**": "ask", "${WORKSPACE}/notes/open.txt": "allow" } } }`)
	s.write("notes/open.txt", "old\n")
	s.write("notes/closed.txt", "old\n")
	s.write("save.py", `import os, sys
for name in sys.argv[1:]:
    tmp = name + ".tmp.%d.43ba22cd161f" % os.getpid()
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"new\n")
        os.fchmod(fd, 0o644)
        os.close(fd)
        os.chmod(tmp, 0o644)
        os.rename(tmp, name)
        print(name, "saved")
    except OSError as e:
        print(name, "refused", e.errno)
`)
	r := s.run("python3", "save.py", "notes/open.txt", "notes/closed.txt")
	mustContain(t, "stdout", r.stdout, "notes/open.txt saved")
	mustContain(t, "stdout", r.stdout, "notes/closed.txt refused 13")
	if got := s.read("notes/open.txt"); got != "new\n" {
		t.Errorf("open.txt holds %q", got)
	}
	if got := s.read("notes/closed.txt"); got != "old\n" {
		t.Errorf("closed.txt holds %q", got)
	}
	mustContain(t, "the person's line", r.stderr, "permwrap: denied save "+s.path("notes/closed.txt"))
	if strings.Contains(r.stderr, ".tmp.") {
		t.Errorf("a notice names the temporary file:\n%s", r.stderr)
	}
	// The record of each save names the file; the rest of the allowed
	// one (chmod, rename) follows from its approval by the rule.
	var saves []string
	for _, rec := range s.logRecords() {
		if rec["access"] == "save" {
			saves = append(saves, fmt.Sprint(rec["event"], " ", rec["value"]))
		}
		v, _ := rec["value"].(string)
		by, _ := rec["decidedBy"].(map[string]any)
		if strings.Contains(v, ".tmp.") && (rec["event"] == "permission_request.rejected" || rec["event"] == "permission_request.denied") {
			t.Errorf("a refusal names the temporary file: %v", rec)
		}
		if strings.Contains(v, ".tmp.") && rec["event"] == "permission_request.approved" && by["kind"] != "rule" {
			t.Errorf("the rest of a save the rule allowed was approved by %v", by)
		}
	}
	want := []string{"permission_request.allowed " + s.path("notes/open.txt"), "permission_request.rejected " + s.path("notes/closed.txt")}
	for _, w := range want {
		if !slices.Contains(saves, w) {
			t.Errorf("no record %q among the saves' %q", w, saves)
		}
	}
}
