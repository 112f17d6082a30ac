package supervisor_test

import (
	"os"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// TestUserNamespaceMaps: a process may set up its own user namespace
// under the default policy (`unshare -Ur`), nested ones included, and
// the kernel's checks on the map files are the process's own: permwrap
// opens /proc/self/uid_map for the target, and the file must not carry
// permwrap's credentials. Every case runs bare first and must end the
// same way under permwrap, with nothing said.
func TestUserNamespaceMaps(t *testing.T) {
	need(t, "unshare", "setpriv", "cat")
	s := newSandbox(t, "") // the embedded default policy
	if r := s.bare("unshare", "-Ur", "true"); r.code != 0 {
		kerneltest.Skipf(t, "user namespaces (unshare -Ur fails bare: %s)", strings.TrimSpace(r.stderr))
	}
	type tc struct {
		name string
		argv []string
		fail bool // the kernel refuses it bare
	}
	cases := []tc{
		{name: "own maps", argv: []string{"unshare", "-Ur", "cat", "/proc/self/uid_map", "/proc/self/gid_map", "/proc/self/setgroups"}},
		// The inner map's opener must be in the outer namespace's view:
		// opened by permwrap (in the initial namespace) the kernel
		// refuses the write (seq_user_ns is neither the map's namespace
		// nor its parent).
		{name: "nested", argv: []string{"unshare", "-Ur", "unshare", "-Ur", "cat", "/proc/self/uid_map"}},
		{name: "read inside", argv: []string{"unshare", "-U", "cat", "/proc/self/uid_map"}},
	}
	if os.Geteuid() == 0 {
		// A root process without CAP_SETFCAP may not map uid 0 to root
		// (the kernel's verify_root_map: it could plant file
		// capabilities valid outside). Opened with permwrap's (root's)
		// credentials, the map file would let it.
		cases = append(cases, tc{name: "root without CAP_SETFCAP", argv: []string{"setpriv", "--bounding-set", "-setfcap", "unshare", "-Ur", "true"}, fail: true})
	} else {
		// As an ordinary user, mapping anything but one's own id is the
		// kernel's to refuse, and permwrap must not lend it rights.
		cases = append(cases, tc{name: "map root as a user", argv: []string{"unshare", "--map-users=0:0:1", "--map-groups=0:0:1", "-U", "true"}, fail: true})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bare := s.bare(c.argv...)
			if c.fail != (bare.code != 0) {
				t.Fatalf("bare: exit %d, want failure %v: %s", bare.code, c.fail, bare.stderr)
			}
			got := s.run(c.argv...)
			if got.code != bare.code || got.stdout != bare.stdout {
				t.Fatalf("under permwrap: exit %d, stdout %q; bare: exit %d, stdout %q\nstderr: %s", got.code, got.stdout, bare.code, bare.stdout, got.stderr)
			}
			if strings.Contains(got.stderr, "permwrap:") {
				t.Fatalf("permwrap spoke:\n%s", got.stderr)
			}
		})
	}
}

// TestSysctlsOfTheTargetsNamespace: a /proc/sys file is looked up in the
// opener's namespaces, so a process in a network namespace of its own
// that writes net.* means its own namespace's sysctl. Opened by permwrap
// it would be the host's, written with permwrap's rights (as root, it
// was). permwrap refuses it with a reason, and the host's value stays.
func TestSysctlsOfTheTargetsNamespace(t *testing.T) {
	need(t, "unshare", "sh", "cat")
	const file = "/proc/sys/net/ipv4/ip_unprivileged_port_start"
	host := func() string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	before := host()
	t.Cleanup(func() {
		if host() != before {
			// Put the host back whatever failed.
			_ = os.WriteFile(file, []byte(before), 0)
		}
	})
	s := newSandbox(t, `{ "permission": { "write": { "/proc/sys/**": "allow" } } }`)
	script := "echo 2000 > " + file + " && cat " + file
	bare := s.bare("unshare", "-rn", "sh", "-c", script)
	if bare.code != 0 {
		kerneltest.Skipf(t, "network namespaces of one's own (bare: %s)", strings.TrimSpace(bare.stderr))
	}
	if strings.TrimSpace(bare.stdout) != "2000" || host() != before {
		t.Fatalf("bare: the namespace's own value %q, the host's %s (was %s)", bare.stdout, host(), before)
	}
	r := s.run("unshare", "-rn", "sh", "-c", script)
	if got := host(); got != before {
		t.Fatalf("the host's %s became %s (was %s): permwrap wrote the host's sysctl for a process in its own network namespace", file, got, before)
	}
	if r.code == 0 {
		t.Fatalf("the write succeeded under permwrap:\n%s", r.stdout)
	}
	mustContain(t, "stderr", r.stderr, "permwrap: refused open "+file+": the process is in a net namespace of its own")
	// In permwrap's own namespace, the file is the process's too.
	same := s.run("cat", file)
	if same.code != 0 || strings.TrimSpace(same.stdout) != before {
		t.Fatalf("reading %s in the host's namespace: exit %d, %q\n%s", file, same.code, same.stdout, same.stderr)
	}
}
