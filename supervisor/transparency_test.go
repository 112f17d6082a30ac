package supervisor_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = s.path(name)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, out)
	}
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
