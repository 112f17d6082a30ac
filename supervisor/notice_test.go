package supervisor_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/internal/testutil"
)

const refuseRm = `{ "permission": { "*": "allow",
  "bash": { "*": "allow", "rm -rf nothing*": { "action": "deny", "reason": "nothing to delete here" } } } }`

const refusedLine = "permwrap: denied exec of bash: nothing to delete here — rule bash:rm -rf nothing* (deny, "

// The script each spawner runs: refused whole by its second command, so
// `ran` must never appear.
const refusedScript = "touch ran; rm -rf nothing"

// An agent's tool spawns `bash -c SCRIPT` with pipes of its own and
// reports what the child wrote. When permwrap refuses the script, the
// spawn succeeds, the child's stderr carries the reason, the child is
// killed before it runs anything, and the spawner — which would have
// dropped the child's pipes (Python, Go) or received their data after it
// had declared the spawn failed (Node: pi crashed on it) — reads the
// reason like any other tool output.
func TestRefusedSpawnToldOnTheChildsStream(t *testing.T) {
	need(t, "python3", "node", "go")
	s := newSandbox(t, refuseRm)

	// Node, with the strictness of pi's output accumulator: data after
	// the spawn was reported failed (or after the child closed) throws.
	s.write("spawn.js", `const { spawn } = require('child_process');
let finished = false, err = '';
const c = spawn('/bin/bash', ['-c', process.argv[2]], { stdio: ['ignore', 'pipe', 'pipe'] });
const add = (d) => { if (finished) throw new Error('Cannot append to a finished output accumulator'); err += d; };
c.stdout.on('data', add); c.stderr.on('data', add);
c.on('error', (e) => { finished = true; console.log('error: ' + e.message); });
c.on('close', (code, sig) => { finished = true; console.log('closed: ' + code + ' ' + sig); console.log('output: ' + err); });
`)
	r := s.run("node", "spawn.js", refusedScript)
	if r.code != 0 {
		t.Fatalf("the Node spawner died (exit %d):\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "node's stdout", r.stdout, "closed: null SIGKILL")
	mustContain(t, "node's stdout", r.stdout, "output: "+refusedLine)
	if strings.Contains(r.stdout, "error:") {
		t.Errorf("the spawn was reported failed:\n%s", r.stdout)
	}

	s.write("spawner.py", `import subprocess, sys
r = subprocess.run(["/bin/bash", "-c", sys.argv[1]], capture_output=True, text=True)
print("returncode:", r.returncode)
print("stderr:", r.stderr)
`)
	r = s.run("python3", "spawner.py", refusedScript)
	mustContain(t, "python's stdout", r.stdout, "returncode: -9")
	mustContain(t, "python's stdout", r.stdout, "stderr: "+refusedLine)

	s.write("spawngo/main.go", `package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
)

func main() {
	var stderr bytes.Buffer
	c := exec.Command("/bin/bash", "-c", os.Args[1])
	c.Stderr = &stderr
	fmt.Println("go:", c.Run())
	fmt.Println("stderr:", stderr.String())
}
`)
	bin := filepath.Join(s.dir, "spawngo")
	testutil.GoBuild(t, s.path("spawngo"), bin, "main.go")
	r = s.run(bin, refusedScript)
	mustContain(t, "go's stdout", r.stdout, "go: signal: killed")
	mustContain(t, "go's stdout", r.stdout, "stderr: "+refusedLine)

	if s.exists("ran") {
		t.Error("a command of the refused script ran")
	}
	// Bare, the same spawners run the script (the control).
	if b := s.bare("python3", "spawner.py", refusedScript); !strings.Contains(b.stdout, "returncode: 0") || !s.exists("ran") {
		t.Fatalf("bare, the script did not run: %s %s", b.stdout, b.stderr)
	}
}

// A program the policy refuses to run is never loaded: its spawn fails
// with EACCES, nothing is written into the stream made for it, and the
// reason goes to the spawner's own stderr when that is a different
// stream.
func TestRefusedImageNeverStarts(t *testing.T) {
	need(t, "python3")
	s := newSandbox(t, `{ "permission": { "*": "allow",
  "exec": { "*": "allow", "${WORKSPACE}/tools/**": { "action": "deny", "reason": "not these tools" } } } }`)
	if err := os.MkdirAll(s.path("tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.write("tools/hello", "#!/bin/sh\necho hello\n")
	if err := os.Chmod(s.path("tools/hello"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.write("spawner.py", `import subprocess, sys
try:
    r = subprocess.run([sys.argv[1]], capture_output=True, text=True)
    print("ran:", r.returncode, repr(r.stdout), repr(r.stderr))
except PermissionError as e:
    print("refused:", e.errno)
`)
	r := s.run("bash", "-c", "python3 spawner.py "+s.path("tools/hello")+" 2>py.err")
	mustContain(t, "python's stdout", r.stdout, "refused: 13")
	mustContain(t, "python's own stderr", s.read("py.err"), "permwrap: denied exec of hello: not these tools — rule exec:")
}

// When the refused child and its parent share a stderr (a shell's
// child), the exec fails with EACCES as the kernel would fail it, the
// line is written once, and the parent reports the failure itself.
func TestRefusedExecReasonOnce(t *testing.T) {
	s := newSandbox(t, refuseRm)
	// From a script file, which the analysis of the outer command line
	// does not read: the inner exec is the one refused.
	s.write("inner.sh", "bash -c 'rm -rf nothing'\necho status=$?\n")
	r := s.run("bash", "-c", "(bash inner.sh; true) 2>both.err")
	if n := strings.Count(s.read("both.err"), refusedLine); n != 1 {
		t.Fatalf("the line is there %d times, want 1:\n%s", n, s.read("both.err"))
	}
	mustContain(t, "stdout", r.stdout, "status=126")
	mustContain(t, "the shell's own report", s.read("both.err"), "Permission denied")
}

// A wrapped program sees what it sees bare: the same descriptors and the
// same environment, but for the proxy variables, which the policy can
// turn off ("proxy": "off"); `_` names the command, as a shell sets it.
func TestNothingExtraVisible(t *testing.T) {
	need(t, "python3")
	const probe = `import os, json
print(json.dumps({"fds": sorted(os.listdir("/proc/self/fd")), "env": dict(os.environ)}))`
	look := func(r result) (fds []string, env map[string]string) {
		t.Helper()
		var v struct {
			Fds []string
			Env map[string]string
		}
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatalf("probe output %q: %v (stderr %s)", r.stdout, err, r.stderr)
		}
		return v.Fds, v.Env
	}
	// A shell sets `_` to the path of what it runs: set it as the shell
	// that started permwrap would have, and as it would have bare.
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		policy string
		extra  []string // variables only the wrapped run has
	}{
		{"default", `{}`, []string{"ALL_PROXY", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "NODE_USE_ENV_PROXY", "all_proxy", "http_proxy", "https_proxy", "no_proxy"}},
		{"proxy off", `{"proxy": "off"}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSandbox(t, c.policy)
			s.env = []string{"_=" + py}
			bareFds, bareEnv := look(s.bare("python3", "-c", probe))
			s.env = []string{"_=" + permwrapBin}
			fds, env := look(s.run("python3", "-c", probe))
			if !slices.Equal(fds, bareFds) {
				t.Errorf("descriptors: %v under permwrap, %v bare", fds, bareFds)
			}
			for _, k := range c.extra {
				if _, ok := env[k]; !ok {
					t.Errorf("%s is missing under permwrap", k)
				}
				delete(env, k)
			}
			// What the harness itself sets for permwrap's run only.
			for _, k := range []string{"PERMWRAP_CONFIG_DIR", "XDG_STATE_HOME"} {
				delete(env, k)
			}
			for k, v := range env {
				if bv, ok := bareEnv[k]; !ok || bv != v {
					t.Errorf("%s=%q under permwrap, %q bare", k, v, bv)
				}
			}
			for k := range bareEnv {
				if _, ok := env[k]; !ok {
					t.Errorf("%s is missing under permwrap", k)
				}
			}
		})
	}
}
