package supervisor_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const refuseRm = `{ "permission": { "*": "allow",
  "bash": { "*": "allow", "rm -rf nothing*": { "action": "deny", "reason": "nothing to delete here" } } } }`

const refusedLine = "permwrap: denied exec of bash: nothing to delete here — rule bash:rm -rf nothing* (deny, "

// Python's subprocess and Go's os/exec report a refused exec as an error
// and close the child's pipes unread: the reason goes to the spawner's
// own stderr, which is what an agent reads when the spawner is its tool.
func TestRefusedExecReasonReachesTheSpawner(t *testing.T) {
	needTool(t, "python3")
	s := newSandbox(t, refuseRm)
	s.write("spawner.py", `import subprocess
try:
    subprocess.run(["/bin/bash", "-c", "rm -rf nothing"], capture_output=True)
    print("ran")
except PermissionError as e:
    print("refused:", e.errno)
`)
	r := s.run("bash", "-c", "python3 spawner.py 2>py.err")
	mustContain(t, "python's stdout", r.stdout, "refused: 13")
	mustContain(t, "python's own stderr", s.read("py.err"), refusedLine)

	s.write("spawngo/main.go", `package main

import (
	"bytes"
	"fmt"
	"os/exec"
)

func main() {
	var stderr bytes.Buffer
	c := exec.Command("/bin/bash", "-c", "rm -rf nothing")
	c.Stderr = &stderr
	fmt.Println("go:", c.Run())
}
`)
	bin := filepath.Join(s.dir, "spawngo")
	build := exec.Command("go", "build", "-o", bin, "main.go")
	build.Dir = s.path("spawngo")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	r = s.run("bash", "-c", bin+" 2>go.err")
	mustContain(t, "go's stdout", r.stdout, "permission denied")
	mustContain(t, "go's own stderr", s.read("go.err"), refusedLine)
}

// When the refused child and its parent share a stderr, the line is
// written once.
func TestRefusedExecReasonOnce(t *testing.T) {
	s := newSandbox(t, refuseRm)
	// From a script file, which the analysis of the outer command line
	// does not read: the inner exec is the one refused.
	s.write("inner.sh", "bash -c 'rm -rf nothing'\n")
	s.run("bash", "-c", "(bash inner.sh; true) 2>both.err")
	if n := strings.Count(s.read("both.err"), refusedLine); n != 1 {
		t.Fatalf("the line is there %d times, want 1:\n%s", n, s.read("both.err"))
	}
}
