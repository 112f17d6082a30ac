package supervisor_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// A symlink as the argument of a metadata call: the l-variants and
// AT_SYMLINK_NOFOLLOW act on the link, the others on its target. Run bare
// and under permwrap (which resolves the path with or without following
// the last link and performs the call on what it pinned): the results
// must be the same.
func TestWorkloadSymlinkMetadata(t *testing.T) {
	if os.Geteuid() != 0 {
		kerneltest.Skip(t, "root (chown, trusted.* xattrs)")
	}
	need(t, "python3", "touch", "chown", "stat")
	workload(t, "metadata through a symlink", `
echo hi > t; ln -s t l
touch -h -d @1000000000 l   # utimensat(AT_SYMLINK_NOFOLLOW): the link
touch -d @2000000000 l      # utimensat: the target
chown -h 4321:4321 l        # lchown (fchownat AT_SYMLINK_NOFOLLOW): the link
chown 1234:1234 l           # chown: the target
python3 - <<'P'
import os
os.setxattr("l", "trusted.link", b"L", follow_symlinks=False)  # lsetxattr
os.setxattr("l", "user.target", b"T")                           # setxattr
os.setxattr("l", "user.gone", b"G")
os.removexattr("l", "user.gone")                                # removexattr
os.setxattr("l", "trusted.gone", b"G", follow_symlinks=False)
os.removexattr("l", "trusted.gone", follow_symlinks=False)      # lremovexattr
print("link", sorted(os.listxattr("l", follow_symlinks=False)))
print("target", sorted(os.listxattr("t")))
P
stat -c '%n uid=%u gid=%g mtime=%Y' l t
`, nil)
}

// The newest *at calls permwrap does not emulate fail with ENOSYS, as on
// a kernel without them, so callers fall back to the calls it judges
// (not EACCES, which they would report as a failure).
func TestUnemulatedSyscallsAreENOSYS(t *testing.T) {
	need(t, "python3")
	s := newSandbox(t, permissive)
	s.write("f", "x")
	r := s.run("python3", "-c", `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for name, nr in (("setxattrat", 463), ("removexattrat", 466), ("file_setattr", 469)):
    ctypes.set_errno(0)
    ret = libc.syscall(nr, -100, b"f", 0, b"user.x", 0, 0)
    print(name, ret, os.strerror(ctypes.get_errno()))
`)
	for _, name := range []string{"setxattrat", "removexattrat", "file_setattr"} {
		mustContain(t, "stdout", r.stdout, name+" -1 Function not implemented")
	}
	if strings.Contains(r.stderr, "permwrap:") {
		t.Errorf("an unemulated call is not a denial; stderr:\n%s", r.stderr)
	}
}

// What permwrap cannot resolve is refused with a reason a person can read:
// here a /proc magic link into another process (this test's, outside the
// sandbox), which permwrap does not follow on the target's behalf.
func TestUndecidableIsRefusedAndSaid(t *testing.T) {
	s := newSandbox(t, denyPolicy) // a read rule: read-only opens are notified
	target := "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/0"
	r := s.run("cat", target)
	if r.code == 0 {
		t.Fatalf("reading another process's fd through /proc succeeded: %s", r.stdout)
	}
	mustContain(t, "stderr", r.stderr, "permwrap: denied openat "+target+": permwrap could not decide this request")
	mustContain(t, "stderr", r.stderr, "of another process")
	var logged bool
	for _, rec := range s.logRecords() {
		if rec["event"] == "permission_request.denied" && strings.Contains(strings.ToLower(strings.Join(anyStrings(rec), " ")), "could not decide") {
			logged = true
		}
	}
	if !logged {
		t.Errorf("no denied record saying why in the review log: %v", s.logRecords())
	}
}

func anyStrings(m map[string]any) []string {
	var out []string
	for _, v := range m {
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case map[string]any:
			out = append(out, anyStrings(v)...)
		}
	}
	return out
}
