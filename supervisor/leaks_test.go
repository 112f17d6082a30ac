package supervisor_test

// Issue 9 ("leaks", "the supervisor dies") and issue 10 (the Unix-socket
// SIGKILL), end to end through the permwrap binary.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/internal/testutil"
)

// realPython is python3's own executable: the first exec under permwrap
// must be the program itself, not a wrapper script (pyenv's shims are).
func realPython(t *testing.T) string {
	t.Helper()
	need(t, "python3")
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skipf("python3: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// randomToken is a fresh value no process can have by accident.
func randomToken(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// startControl starts a process outside permwrap whose argv holds token,
// so a scan of /proc/*/cmdline has something it must find: the proof that
// the scan can see another process's argv at all.
func startControl(t *testing.T, token string) {
	t.Helper()
	c := exec.Command("sh", "-c", "sleep 120", token)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Kill()
		_ = c.Wait()
	})
}

// cmdlineScan is a Python program that reads every /proc/*/cmdline (as any
// local user can) and reports which hold the secret or the control token.
const cmdlineScan = `
import json, os, sys
def scan(secret, control):
    found, seen = [], False
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                c = f.read()
        except OSError:
            continue
        if secret.encode() in c:
            found.append(c.replace(b"\0", b" ").decode(errors="replace"))
        if control.encode() in c:
            seen = True
    return found, seen
`

// TestSecretsNeverInArgv: the environment permwrap passes to the command
// (API keys included) must not be in the argv of any process permwrap
// creates, where every local user can read it. The moment that used to
// leak is made observable deterministically: the command's own execve
// asks, so an exec judge runs while the sandbox stage is still alive,
// blocked in that execve, and reads its /proc/PID/cmdline.
func TestSecretsNeverInArgv(t *testing.T) {
	python := realPython(t)
	secret := randomToken(t, "ghp_")
	control := randomToken(t, "control-")
	startControl(t, control)

	s := newSandbox(t, "")
	report := filepath.Join(s.dir, "judge-report.json")
	judge := filepath.Join(s.dir, "judge.py")
	os.WriteFile(judge, []byte(`#!/usr/bin/env python3
import json, os, sys
`+cmdlineScan+`
req = sys.stdin.read()
pid = json.loads(req)["process"]["pid"]
with open("/proc/%d/cmdline" % pid, "rb") as f:
    own = [x.decode() for x in f.read().split(b"\0") if x]
found, seen = scan(os.environ["LEAKS_SECRET"], os.environ["LEAKS_CONTROL"])
with open(sys.argv[1], "w") as f:
    json.dump({"request": req, "cmdline": own, "found": found, "control": seen}, f)
print(json.dumps({"verdict": "allow"}))
`), 0o755)
	inside := filepath.Join(s.workspace, "scan.py")
	os.WriteFile(inside, []byte(cmdlineScan+`
found, seen = scan(os.environ["LEAKS_SECRET"], os.environ["LEAKS_CONTROL"])
print(json.dumps({"found": found, "control": seen}))
`), 0o644)
	policy := fmt.Sprintf(`{
  "extends": "none",
  "permission": {"*": "allow", "bash": {"*": "allow", "* leakprobe": "ask"}},
  "authorizerChain": ["probe"],
  "authorizers": {"probe": {"command": [%q, %q, %q], "timeoutMs": 20000}},
  "modelDelegation": {"allowedSurfaces": ["bash"]}
}`, "python3", judge, report)
	os.WriteFile(filepath.Join(s.configDir, "policy.jsonc"), []byte(policy), 0o644)

	// The secret is in permwrap's environment, as an API key would be (the
	// command gets it in its environment, which only its own user can
	// read).
	t.Setenv("LEAKS_SECRET", secret)
	t.Setenv("LEAKS_CONTROL", control)
	r := s.run(python, inside, "leakprobe")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}

	// What the judge saw while the sandbox stage was alive.
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("the judge never ran: %v; stderr:\n%s", err, r.stderr)
	}
	var jr struct {
		Request string
		Cmdline []string
		Found   []string
		Control bool
	}
	if err := json.Unmarshal(b, &jr); err != nil {
		t.Fatal(err)
	}
	if !jr.Control {
		t.Fatal("the judge's scan did not see the control process's argv: it proves nothing")
	}
	if len(jr.Cmdline) < 2 || jr.Cmdline[1] != "__permwrap_init" {
		t.Fatalf("the judge did not catch the sandbox stage alive (its cmdline is %q); the scan proves nothing", jr.Cmdline)
	}
	if len(jr.Found) != 0 {
		t.Errorf("the secret is in the argv of %q", jr.Found)
	}
	if strings.Contains(jr.Request, secret) {
		t.Errorf("the request sent to the judge holds the secret:\n%s", jr.Request)
	}

	// What the tree itself saw while the command ran.
	var in struct {
		Found   []string
		Control bool
	}
	if err := json.Unmarshal([]byte(r.stdout), &in); err != nil {
		t.Fatalf("scan output %q: %v", r.stdout, err)
	}
	if !in.Control {
		t.Fatal("the scan inside the tree did not see the control process's argv")
	}
	if len(in.Found) != 0 {
		t.Errorf("seen from inside the tree, the secret is in the argv of %q", in.Found)
	}
	if log, err := os.ReadFile(s.logPath); err == nil && strings.Contains(string(log), secret) {
		t.Error("the review log holds the secret")
	}
}

// TestUnixBindNeverKillsTheCommand is issue 10's SIGKILL: the command
// used to be started with Pdeathsig from whatever thread ran the call, and
// the supervisor retires the thread it emulates a bind on; when that was
// the same thread, the kernel killed the command (about 1 run in 3 for a
// single bind, nearly every run for 200). The bare half of the mechanism
// is TestPdeathsigFollowsTheForkingThread.
func TestUnixBindNeverKillsTheCommand(t *testing.T) {
	kerneltest.Long(t)
	python := realPython(t)
	s := newSandbox(t, denyPolicy)
	bind200 := `
import os, socket
for i in range(200):
    s = socket.socket(socket.AF_UNIX)
    s.bind("s%d" % i)
    s.close()
    os.unlink("s%d" % i)
print("bound 200")
`
	for run := 0; run < 3; run++ {
		r := s.run(python, "-c", bind200)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "bound 200" {
			t.Fatalf("run %d: exit %d, out %q; stderr:\n%s", run, r.code, r.stdout, r.stderr)
		}
	}
	// Many short runs: the forking thread is a different one each time.
	for run := 0; run < 30; run++ {
		r := s.run(python, "-c", `import socket; socket.socket(socket.AF_UNIX).bind("one"); print("ok")`)
		os.Remove(s.path("one"))
		if r.code != 0 {
			t.Fatalf("single bind, run %d: exit %d; stderr:\n%s", run, r.code, r.stderr)
		}
	}
	// Programs that make sockets as a matter of course.
	pool := `
import multiprocessing as mp
ctx = mp.get_context("forkserver")   # binds a Unix socket for the server
with ctx.Pool(2) as p:
    print(sum(p.map(abs, range(-50, 50))))
`
	if r := s.run(python, "-c", pool); r.code != 0 || strings.TrimSpace(r.stdout) != "2500" {
		t.Errorf("multiprocessing pool: exit %d, out %q; stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := exec.LookPath("tmux"); err == nil {
		sock := filepath.Join(s.dir, "tmux-inner.sock")
		r := s.run("sh", "-c", `tmux -S "$0" -f /dev/null new-session -d 'sleep 30' && tmux -S "$0" list-sessions >/dev/null && tmux -S "$0" kill-server && echo tmux-ok`, sock)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "tmux-ok" {
			t.Errorf("tmux server: exit %d, out %q; stderr:\n%s", r.code, r.stdout, r.stderr)
		}
	}
}

// procState reads a process's state letter and start time; ok=false when
// the pid no longer exists.
func procState(pid int) (state byte, start string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, "", false
	}
	return f[0][0], f[19], true
}

// tracked is a process of a test tree, recognised by pid and start time
// (so a reused pid is not mistaken for it).
type tracked struct {
	what  string
	pid   int
	start string
}

func (p tracked) running() bool {
	st, start, ok := procState(p.pid)
	return ok && start == p.start && st != 'Z' && st != 'X'
}

// leftoverTree is a shell program that leaves behind what a supervisor
// must not let outlive it: a double-forked, setsid'd sleeper and a busy
// loop (neither makes a syscall permwrap watches), then waits.
const leftoverTree = `
exec >/dev/null 2>&1   # hold no pipe of the test's: a survivor must not hang it
(setsid sh -c 'echo $$ > "$1"; exec sleep 1000' sh "$0/sleeper.pid" &)
sh -c 'echo $$ > "$1"; while :; do :; done' sh "$0/busy.pid" &
touch "$0/ready"
exec sleep 1000
`

// waitTree waits for the leftover tree's pid files and returns its
// processes (killed at the end of the test, whatever happens).
func waitTree(t *testing.T, dir string) ([]tracked, error) {
	t.Helper()
	var out []tracked
	t.Cleanup(func() {
		for _, p := range out {
			if p.running() {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
		}
	})
	deadline := time.Now().Add(testutil.Scale(30 * time.Second))
	for _, name := range []string{"sleeper", "busy"} {
		for {
			b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
				if _, start, ok := procState(pid); ok {
					out = append(out, tracked{name, pid, start})
					break
				}
			}
			if time.Now().After(deadline) {
				return out, fmt.Errorf("the tree never wrote %s.pid", name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return out, nil
}

// waitGone waits up to bound for every process to be gone and reports
// those still running.
func waitGone(ps []tracked, bound time.Duration) []string {
	deadline := time.Now().Add(testutil.Scale(bound))
	for {
		var alive []string
		for _, p := range ps {
			if p.running() {
				alive = append(alive, fmt.Sprintf("%s (pid %d)", p.what, p.pid))
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSupervisorKilledTreeDies: after kill -9 of permwrap, no process of
// the tree keeps running — not the command (Pdeathsig did that before),
// nor what it double-forked, nor a busy loop that never makes a watched
// syscall again.
func TestSupervisorKilledTreeDies(t *testing.T) {
	const bound = 10 * time.Second // a bound on a kill, not a performance claim

	// Bare: the same tree under a plain parent survives the parent's
	// kill -9, so the tree really does escape an ordinary parent.
	t.Run("bare", func(t *testing.T) {
		dir := t.TempDir()
		parent := exec.Command("sh", "-c", leftoverTree, dir)
		if err := parent.Start(); err != nil {
			t.Fatal(err)
		}
		ps, err := waitTree(t, dir)
		_ = parent.Process.Kill()
		_ = parent.Wait()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		for _, p := range ps {
			if !p.running() {
				t.Errorf("bare: the %s died with its parent; the test's tree proves nothing", p.what)
			}
		}
	})

	// victim names the process to kill -9 (0 after reporting why not).
	kill := func(t *testing.T, victim func(cmd *exec.Cmd) int, wantExit bool) {
		s := newSandbox(t, denyPolicy)
		var ps []tracked
		var victimPid int
		r := s.runWith(func(cmd *exec.Cmd) {
			var err error
			if ps, err = waitTree(t, s.workspace); err != nil {
				t.Error(err)
				_ = cmd.Process.Kill()
				return
			}
			// The allowed twin: while permwrap runs, the tree runs.
			for _, p := range ps {
				if !p.running() {
					t.Errorf("the %s is not running under a live permwrap", p.what)
				}
			}
			if victimPid = victim(cmd); victimPid <= 0 {
				_ = cmd.Process.Kill()
				return
			}
			if err := syscall.Kill(victimPid, syscall.SIGKILL); err != nil {
				t.Errorf("kill -9 %d: %v", victimPid, err)
			}
		}, "sh", "-c", leftoverTree, s.workspace)
		if alive := waitGone(ps, bound); len(alive) > 0 {
			t.Errorf("still running %s after kill -9 of pid %d: %s", bound, victimPid, strings.Join(alive, ", "))
		}
		if wantExit && victimPid > 0 {
			if r.code != 125 || !strings.Contains(r.stderr, "watchdog") {
				t.Errorf("permwrap after its watchdog was killed: exit %d (want 125); stderr:\n%s", r.code, r.stderr)
			}
		}
	}
	t.Run("supervisor", func(t *testing.T) {
		kill(t, func(cmd *exec.Cmd) int { return cmd.Process.Pid }, false)
	})
	// The watchdog is what kills the tree when the supervisor dies; if it
	// is the one killed, the supervisor does the killing.
	t.Run("watchdog", func(t *testing.T) {
		kill(t, func(cmd *exec.Cmd) int {
			kids := strings.Fields(readChildren(cmd.Process.Pid))
			if len(kids) != 1 {
				t.Errorf("permwrap's children: %q, want exactly the watchdog", kids)
				return 0
			}
			pid, _ := strconv.Atoi(kids[0])
			b, _ := os.ReadFile("/proc/" + kids[0] + "/cmdline")
			if !strings.Contains(string(b), "watchdog") {
				t.Errorf("permwrap's child %d is %q, not the watchdog", pid, b)
				return 0
			}
			return pid
		}, true)
	})
}

// readChildren lists the children of pid (every thread's) as text.
func readChildren(pid int) string {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var b strings.Builder
	for _, t := range tasks {
		c, _ := os.ReadFile(t)
		b.Write(c)
		b.WriteByte(' ')
	}
	return b.String()
}

// queryJudge is a reviewer that trusts the policy: it asks the query
// channel about the command and allows exactly when the policy would. It
// waits for the attacker (attack-done) before asking, so the attack
// happens during its review. With PERMWRAP_QUERY_FD it uses the inherited
// channel; otherwise the socket path in PERMWRAP_QUERY_SOCKET (the old
// way).
const queryJudge = `
import json, os, socket, sys, time
report, ws = sys.argv[1], sys.argv[2]
req = json.load(sys.stdin)
open(os.path.join(ws, "review-started"), "w").close()
deadline = time.time() + 30
while not os.path.exists(os.path.join(ws, "attack-done")) and time.time() < deadline:
    time.sleep(0.02)
if "PERMWRAP_QUERY_FD" in os.environ:
    s, how = socket.socket(fileno=int(os.environ["PERMWRAP_QUERY_FD"])), "fd"
else:
    s, how = socket.socket(socket.AF_UNIX), "path"
    s.connect(os.environ["PERMWRAP_QUERY_SOCKET"])
f = s.makefile("rw")
f.write(json.dumps({"surface": "bash", "value": req["value"]}) + "\n")
f.flush()
answer = json.loads(f.readline())
with open(report, "w") as out:
    json.dump({"how": how, "answer": answer}, out)
open(os.path.join(ws, "judge-done"), "w").close()
print(json.dumps({"verdict": "allow" if answer.get("action") == "allow" else "deny",
                  "reason": "the policy says %s" % answer.get("action")}))
`

// queryAttacker runs in the tree during a review and tries every way to
// reach the reviewer's query channel: socket files where the old design
// put them ($TMPDIR/permwrap-query-*), named sockets in /proc/net/unix,
// the reviewer's own fds through /proc and pidfd_getfd. What it finds it
// queries, and it replaces socket files with a server that answers allow.
// It touches nothing but this test's own: its private $TMPDIR and the
// reviewer it is given (the machine may run other permwraps).
const queryAttacker = `
import ctypes, glob, json, os, select, socket, subprocess, sys, threading, time
ws, judge = sys.argv[1], sys.argv[2]   # (both unique to this test)
tmp = os.environ["TMPDIR"]            # private to this test
push = {}
if len(sys.argv) > 3:   # under permwrap: the tree's own push, which the reviewer reviews
    def run_push():
        try:
            push["rc"] = subprocess.run(["true", "push", "origin"]).returncode
        except OSError as e:
            push["rc"] = "exec failed: %s" % e
    pusher = threading.Thread(target=run_push)
    pusher.start()
deadline = time.time() + 30
while not os.path.exists(os.path.join(ws, "review-started")) and time.time() < deadline:
    time.sleep(0.02)
res = {"found": [], "reached": [], "replaced": [], "failed": [], "judgeSeen": False}
def query(c):
    # No settimeout: on a stolen fd it would set O_NONBLOCK on the
    # reviewer's own open file, and break the reviewer instead.
    c.sendall(b'{"surface":"bash","value":"true push origin"}\n')
    if not select.select([c], [], [], 5)[0]:
        return "(no answer)"
    return c.recv(4096).decode()
def connect(addr, label):
    try:
        c = socket.socket(socket.AF_UNIX)
        c.connect(addr)
        res["reached"].append("%s answered %s" % (label, query(c).strip()))
    except OSError as e:
        res["failed"].append("connect %s: %s" % (label, e))
def fake(srv):
    while True:
        c, _ = srv.accept()
        f = c.makefile("rw")
        for line in f:
            f.write('{"action":"allow"}\n')
            f.flush()
cands = set(glob.glob(os.path.join(tmp, "permwrap-query-*", "*")))
try:
    for line in open("/proc/net/unix").read().splitlines()[1:]:
        parts = line.split()
        # Only this test's own: other sockets on the machine are not ours
        # to connect to, let alone replace.
        if len(parts) >= 8 and (parts[7].startswith(tmp + "/") or parts[7].startswith("@") and ws in parts[7]):
            cands.add(parts[7])
except OSError as e:
    res["failed"].append("/proc/net/unix: %s" % e)
for p in sorted(cands):
    res["found"].append(p)
    addr = "\0" + p[1:] if p.startswith("@") else p
    connect(addr, p)
    if not p.startswith("@"):
        try:
            os.unlink(p)
            srv = socket.socket(socket.AF_UNIX)
            srv.bind(p)
            srv.listen(4)
            threading.Thread(target=fake, args=(srv,), daemon=True).start()
            res["replaced"].append(p)
        except OSError as e:
            res["failed"].append("replace %s: %s" % (p, e))
libc = ctypes.CDLL(None, use_errno=True)
for pdir in glob.glob("/proc/[0-9]*"):
    if pdir == "/proc/%d" % os.getpid():
        continue
    try:
        with open(pdir + "/cmdline", "rb") as f:
            if judge.encode() not in f.read():
                continue
    except OSError:
        continue
    res["judgeSeen"] = True
    pid = int(pdir[6:])
    try:
        fds = os.listdir(pdir + "/fd")
    except OSError as e:
        res["failed"].append("list %s/fd: %s" % (pdir, e))
        fds = ["3"]
    for fd in fds:
        p = "%s/fd/%s" % (pdir, fd)
        connect(p, p)
        try:
            os.close(os.open(p, os.O_RDWR))
            res["reached"].append("opened " + p)
        except OSError as e:
            res["failed"].append("open %s: %s" % (p, e))
        try:
            pidfd = os.pidfd_open(pid)
            got = libc.syscall(438, pidfd, int(fd), 0)  # pidfd_getfd
            if got >= 0:
                try:
                    c = socket.socket(fileno=got)
                    res["reached"].append("pidfd_getfd %s answered %s" % (p, query(c).strip()))
                except OSError as e:
                    res["failed"].append("pidfd_getfd %s: got fd %d, not a channel: %s" % (p, got, e))
            else:
                res["failed"].append("pidfd_getfd %s: %s" % (p, os.strerror(ctypes.get_errno())))
        except OSError as e:
            res["failed"].append("pidfd_open %d: %s" % (pid, e))
with open(os.path.join(ws, "attack.json"), "w") as f:
    json.dump(res, f)
open(os.path.join(ws, "attack-done"), "w").close()
deadline = time.time() + 30   # keep any fake server up until the judge has asked
while not os.path.exists(os.path.join(ws, "judge-done")) and time.time() < deadline:
    time.sleep(0.02)
if len(sys.argv) > 3:
    pusher.join()
    print(json.dumps(push))
`

type attackReport struct {
	Found, Reached, Replaced, Failed []string
	JudgeSeen                        bool
}

type judgeReport struct {
	How    string
	Answer struct{ Action string }
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
}

// TestQueryChannelAttack: a process in the tree tries to find, query or
// replace the reviewer's query channel while the reviewer is deciding on
// the tree's own `git push` (here `true push`). Bare, against the old
// design (a socket file in $TMPDIR), it replaces the socket and the
// reviewer, told "allow" by the fake, allows. Under permwrap there is
// nothing to find, the reviewer's fds are out of reach, and the reviewer
// gets the policy's real answer (the allowed twin).
func TestQueryChannelAttack(t *testing.T) {
	python := realPython(t)
	write := func(dir, name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// bareScene is a private $TMPDIR, a workspace for the markers, and
	// the two programs, outside any sandbox.
	bareScene := func(t *testing.T) (dir, tmp, ws, judge, attacker string) {
		dir = t.TempDir()
		tmp, ws = filepath.Join(dir, "tmp"), filepath.Join(dir, "ws")
		os.MkdirAll(tmp, 0o755)
		os.MkdirAll(ws, 0o755)
		return dir, tmp, ws, write(dir, "judge.py", queryJudge), write(dir, "attacker.py", queryAttacker)
	}

	t.Run("bare", func(t *testing.T) {
		dir, tmp, ws, judge, attacker := bareScene(t)
		// The old design: a socket in $TMPDIR answering from the policy
		// (which says ask).
		sockDir, err := os.MkdirTemp(tmp, "permwrap-query-")
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("unix", filepath.Join(sockDir, "query.sock"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					sc := bufio.NewScanner(c)
					for sc.Scan() {
						fmt.Fprintln(c, `{"action":"ask"}`)
					}
				}()
			}
		}()
		env := append(os.Environ(), "TMPDIR="+tmp)
		att := exec.Command(python, attacker, ws, judge)
		att.Env = env
		if err := att.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = att.Process.Kill(); _ = att.Wait() }()
		report := filepath.Join(dir, "judge.json")
		jc := exec.Command(python, judge, report, ws)
		jc.Env = append(env, "PERMWRAP_QUERY_SOCKET="+filepath.Join(sockDir, "query.sock"))
		jc.Stdin = strings.NewReader(`{"value":"true push origin"}`)
		out, err := jc.Output()
		if err != nil {
			t.Fatalf("judge: %v", err)
		}
		var ar attackReport
		readJSON(t, filepath.Join(ws, "attack.json"), &ar)
		var jr judgeReport
		readJSON(t, report, &jr)
		if len(ar.Replaced) == 0 || jr.Answer.Action != "allow" || !strings.Contains(string(out), `"allow"`) {
			t.Fatalf("bare: the attack on a socket in $TMPDIR did not work (attack %+v, judge %+v, verdict %s); it proves nothing", ar, jr, out)
		}
	})

	// Bare against the new design: outside a sandbox, a process of the
	// same user can take the reviewer's inherited fd with pidfd_getfd —
	// so it is Landlock's and the filter's refusal of that, below, that
	// keeps the channel private, and the attacker's code does work.
	t.Run("bare-inherited-fd", func(t *testing.T) {
		dir, tmp, ws, judge, attacker := bareScene(t)
		report := filepath.Join(dir, "judge.json")
		t.Setenv("TMPDIR", tmp)
		att := exec.Command(python, attacker, ws, judge)
		if err := att.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = att.Process.Kill(); _ = att.Wait() }()
		j := &authority.ExecAuthorizer{Name: "j", Command: []string{python, judge, report, ws}, Timeout: time.Minute}
		ask := authority.QuerierFunc(func(engine.Check) authority.QueryResult { return authority.QueryResult{Action: engine.Ask} })
		if _, _, err := j.Review(context.Background(), authority.NewRequest(engine.Check{Surface: engine.SurfaceBash, Value: "true push origin"}), ask); err != nil {
			t.Fatal(err)
		}
		var ar attackReport
		readJSON(t, filepath.Join(ws, "attack.json"), &ar)
		stole := false
		for _, r := range ar.Reached {
			stole = stole || strings.HasPrefix(r, "pidfd_getfd") && strings.Contains(r, `"action"`)
		}
		if !stole {
			kerneltest.Skip(t, fmt.Sprintf("bare, the attacker could not take the reviewer's fd (%+v); the sandboxed half still runs", ar))
		}
	})

	t.Run("permwrap", func(t *testing.T) {
		s := newSandbox(t, "")
		tmp := filepath.Join(s.dir, "tmp")
		os.MkdirAll(tmp, 0o755)
		judge := write(s.dir, "judge.py", queryJudge)
		attacker := write(s.workspace, "attacker.py", queryAttacker)
		report := filepath.Join(s.dir, "judge.json")
		policy := fmt.Sprintf(`{
  "extends": "none",
  "permission": {"*": "allow", "bash": {"*": "allow", "true push *": "ask"}},
  "authorizerChain": ["trusting"],
  "authorizers": {"trusting": {"command": [%q, %q, %q, %q], "timeoutMs": 60000}},
  "modelDelegation": {"allowedSurfaces": ["bash"]}
}`, python, judge, report, s.workspace)
		os.WriteFile(filepath.Join(s.configDir, "policy.jsonc"), []byte(policy), 0o644)
		t.Setenv("TMPDIR", tmp)
		r := s.run(python, attacker, s.workspace, judge, "push")
		if _, err := os.Stat(filepath.Join(s.workspace, "attack.json")); err != nil {
			t.Fatalf("the attacker wrote no report: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
		}

		var ar attackReport
		readJSON(t, filepath.Join(s.workspace, "attack.json"), &ar)
		if !ar.JudgeSeen {
			t.Fatalf("the attacker never saw the reviewer running: it proves nothing (%+v)", ar)
		}
		if len(ar.Found) > 0 || len(ar.Reached) > 0 || len(ar.Replaced) > 0 {
			t.Errorf("the attacker got somewhere: found %q, reached %q, replaced %q", ar.Found, ar.Reached, ar.Replaced)
		}
		var jr judgeReport
		readJSON(t, report, &jr)
		if jr.How != "fd" || jr.Answer.Action != "ask" {
			t.Errorf("the reviewer's own query: %+v, want the policy's answer (ask) over the inherited fd", jr)
		}
		var push struct{ RC any }
		if err := json.Unmarshal([]byte(r.stdout), &push); err != nil || push.RC == nil || push.RC == float64(0) {
			t.Errorf("true push: %q (want it refused: the reviewer denies what the policy asks about); stderr:\n%s", r.stdout, r.stderr)
		}
		t.Logf("what the attacker tried: %q", ar.Failed)
	})
}
