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
