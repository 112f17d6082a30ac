package supervisor_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/testutil"
)

// denyPolicy allows everything except a few paths in the workspace.
const denyPolicy = `{
  "extends": "none",
  "permission": {
    "*": "allow",
    "read":  { "*": "allow", "${WORKSPACE}/secret/**": "deny" },
    "write": { "*": "allow", "DENIED": { "action": "deny", "reason": "test says no" }, "${WORKSPACE}/secret/**": "deny", "${WORKSPACE}/ro/**": "deny" },
    "exec":  { "*": "allow", "${WORKSPACE}/noexec/**": "deny" },
    "bash":  { "*": "allow" }
  }
}`

// Issue 3's example, `bash -c 'echo x > ok; echo y > DENIED'`. Since the
// shell-script analysis (issue 5), a script whose units include a denied
// redirect is refused before any of it runs: nothing is written, bash's
// exec fails (126) and the notice names the unit and the rule.
func TestDoneWhenExample(t *testing.T) {
	s := newSandbox(t, denyPolicy)
	ok := filepath.Join(s.dir, "ok")
	r := s.run("bash", "-c", "echo x > "+ok+"; echo y > DENIED")
	if r.code != 126 {
		t.Errorf("exit status = %d, want 126 (the script is refused whole); stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(ok); err == nil {
		t.Error("the script's first command ran: a refused script must run nothing")
	}
	if s.exists("DENIED") {
		t.Error("denied file was created")
	}
	mustContain(t, "stderr", r.stderr, "redirect: write DENIED")
	mustContain(t, "stderr", r.stderr, "test says no")
	mustContain(t, "stderr", r.stderr, "rule write:DENIED")
}

// The same script from a file is not judged as a whole (permwrap does not
// read script files): each syscall is. The first write happens, the second
// fails with EACCES and a notice, and permwrap exits with bash's status.
func TestPerSyscallEnforcement(t *testing.T) {
	s := newSandbox(t, denyPolicy)
	ok := filepath.Join(s.dir, "ok")
	s.write("script.sh", "echo x > "+ok+"; echo y > DENIED\n")
	r := s.run("bash", "script.sh")
	if r.code != 1 {
		t.Errorf("exit status = %d, want bash's 1; stderr:\n%s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(ok); err != nil || string(b) != "x\n" {
		t.Errorf("allowed write: %q, %v", b, err)
	}
	if s.exists("DENIED") {
		t.Error("denied file was created")
	}
	mustContain(t, "stderr", r.stderr, "Permission denied") // bash's own message (EACCES)
	mustContain(t, "stderr", r.stderr, "permwrap: denied write "+s.path("DENIED"))
	mustContain(t, "stderr", r.stderr, "test says no")
	// Every record of the review log parses and the denial is there.
	var denied bool
	for _, rec := range s.logRecords() {
		if rec["requestId"] == nil || rec["decidedBy"] == nil {
			t.Errorf("record without requestId/decidedBy: %v", rec)
		}
		if rec["event"] == "permission_request.denied" && strings.HasSuffix(fmt.Sprint(rec["value"]), "/DENIED") {
			denied = true
		}
	}
	if !denied {
		t.Error("no permission_request.denied record for DENIED")
	}
}

// Under "listings": "judged" a listing of a denied directory is a denied
// read of it.
func TestListDeniedDirJudged(t *testing.T) {
	s := newSandbox(t, strings.Replace(denyPolicy, `"extends": "none",`, `"extends": "none", "listings": "judged",`, 1))
	s.write("secret/key", "TOPSECRET")
	r := s.run("bash", "-c", "ls secret")
	if r.code == 0 || strings.Contains(r.stdout, "key") {
		t.Errorf("ls secret: exit %d, stdout %q (want a denied listing)", r.code, r.stdout)
	}
	r = s.run("bash", "-c", "ls free 2>/dev/null; ls .")
	if r.code != 0 {
		t.Errorf("ls .: exit %d, stderr %s", r.code, r.stderr)
	}
}

func TestFileOperations(t *testing.T) {
	s := newSandbox(t, denyPolicy)
	s.write("secret/key", "TOPSECRET")
	s.write("ro/file", "keep")
	s.write("free/a", "A")
	os.MkdirAll(s.path("noexec"), 0o755)
	exe, _ := exec.LookPath("true")
	data, _ := os.ReadFile(exe)
	os.WriteFile(s.path("noexec/true"), data, 0o755)
	os.WriteFile(s.path("free/true"), data, 0o755)

	cases := []struct {
		name   string
		script string
		ok     bool // whether the command should succeed
		check  func(t *testing.T)
	}{
		{"read allowed", "cat free/a", true, nil},
		{"read denied", "cat secret/key", false, nil},
		{"read denied via ..", "cat free/../secret/key", false, nil},
		{"read denied via //", "cat .//secret//key", false, nil},
		{"read denied via absolute", "cat " + s.path("secret/key"), false, nil},
		// Listings are free by default ("listings": "free"): the names, not
		// what is in the files (TestListDeniedDirJudged: the other way).
		{"list denied dir: names only", "ls secret && ! cat secret/key", true, nil},
		{"create allowed", "echo hi > free/new && test -f free/new", true, nil},
		{"create denied", "echo hi > ro/new", false, func(t *testing.T) {
			if s.exists("ro/new") {
				t.Error("ro/new created")
			}
		}},
		{"truncate denied", ": > ro/file", false, func(t *testing.T) {
			if s.read("ro/file") != "keep" {
				t.Error("ro/file truncated")
			}
		}},
		{"append denied", "echo more >> ro/file", false, nil},
		{"unlink denied", "rm -f ro/file", false, func(t *testing.T) {
			if !s.exists("ro/file") {
				t.Error("ro/file removed")
			}
		}},
		{"unlink allowed", "cp free/a free/b && rm free/b && ! test -e free/b", true, nil},
		{"mkdir denied", "mkdir ro/d", false, nil},
		{"mkdir allowed", "mkdir -p free/d/e && test -d free/d/e", true, nil},
		{"rmdir allowed", "mkdir free/r && rmdir free/r", true, nil},
		{"rename out of denied", "mv ro/file free/stolen", false, func(t *testing.T) {
			if !s.exists("ro/file") {
				t.Error("ro/file moved")
			}
		}},
		{"rename into denied", "mv free/a ro/a", false, nil},
		{"rename allowed", "cp free/a free/m1 && mv free/m1 free/m2 && test -f free/m2", true, nil},
		{"symlink in denied", "ln -s /etc/hostname ro/link", false, nil},
		{"symlink allowed", "ln -sf /etc/hostname free/link && cat free/link", true, nil},
		{"read through symlink to denied", "ln -sf ../secret/key free/sk && cat free/sk", false, nil},
		{"write through symlink to denied", "ln -sf ../ro/file free/rk && echo x > free/rk", false, func(t *testing.T) {
			if s.read("ro/file") != "keep" {
				t.Error("ro/file written through symlink")
			}
		}},
		{"hardlink of denied", "ln ro/file free/hl", false, nil},
		{"chmod denied", "chmod 777 ro/file", false, nil},
		{"chmod allowed", "chmod 600 free/a", true, nil},
		{"touch denied", "touch ro/file", false, nil},
		{"exec allowed", "./free/true", true, nil},
		{"exec denied", "./noexec/true", false, nil},
		{"cd relative read denied", "cd secret && cat key", false, nil},
		{"pipeline with redirect", "cat free/a | tr A Z > free/piped && grep -q Z free/piped", true, nil},
		{"pipeline into denied", "cat free/a | tr A Z > DENIED", false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.run("bash", "-c", c.script)
			if (r.code == 0) != c.ok {
				t.Errorf("bash -c %q: exit %d (want success=%v)\nstdout: %s\nstderr: %s", c.script, r.code, c.ok, r.stdout, r.stderr)
			}
			if !c.ok && strings.Contains(r.stdout, "TOPSECRET") {
				t.Errorf("secret leaked: %s", r.stdout)
			}
			if c.check != nil {
				c.check(t)
			}
		})
	}
}

func TestDirfdRelative(t *testing.T) {
	s := newSandbox(t, denyPolicy)
	s.write("secret/key", "TOPSECRET")
	s.write("free/a", "A")
	prog := `
import os, sys
try:
    d = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
    fd = os.open(sys.argv[2], os.O_RDONLY, dir_fd=d)
    print(os.read(fd, 100).decode())
except PermissionError:
    print("EACCES")
`
	r := s.run("python3", "-c", prog, "free", "a")
	if strings.TrimSpace(r.stdout) != "A" {
		t.Errorf("dirfd-relative allowed read: %q %s", r.stdout, r.stderr)
	}
	r = s.run("python3", "-c", prog, ".", "secret/key")
	if strings.TrimSpace(r.stdout) != "EACCES" {
		t.Errorf("dirfd-relative denied read: %q %s", r.stdout, r.stderr)
	}
	// A listing of the denied directory is free ("listings": "free"), but
	// reading its key through that dirfd is a read of the secret.
	r = s.run("python3", "-c", prog, "secret", "key")
	if strings.TrimSpace(r.stdout) != "EACCES" {
		t.Errorf("read through a listing's dirfd of the secret dir: %q %s", r.stdout, r.stderr)
	}
	// An O_PATH dirfd of the denied directory is allowed (it grants no
	// access), but reading through it is still a read of the secret.
	opath := `
import os, sys
d = os.open("secret", os.O_PATH | os.O_DIRECTORY)
try:
    fd = os.open("key", os.O_RDONLY, dir_fd=d)
    print(os.read(fd, 100).decode())
except PermissionError:
    print("EACCES")
`
	r = s.run("python3", "-c", opath)
	if strings.TrimSpace(r.stdout) != "EACCES" {
		t.Errorf("read through an O_PATH dirfd: %q %s", r.stdout, r.stderr)
	}
}

func TestExitStatusAndSignals(t *testing.T) {
	s := newSandbox(t, denyPolicy)
	if r := s.run("sh", "-c", "exit 42"); r.code != 42 {
		t.Errorf("exit 42 → %d (%s)", r.code, r.stderr)
	}
	if r := s.run("sh", "-c", "kill -TERM $$"); r.code != 128+15 {
		t.Errorf("killed by TERM → %d, want 143 (%s)", r.code, r.stderr)
	}
	if r := s.run("no-such-command-xyz"); r.code != 127 {
		t.Errorf("missing command → %d, want 127 (%s)", r.code, r.stderr)
	}
	os.WriteFile(s.path("notexec"), []byte("x"), 0o644)
	if r := s.run("./notexec"); r.code != 126 {
		t.Errorf("non-executable → %d, want 126 (%s)", r.code, r.stderr)
	}

	// A signal sent to permwrap reaches the command, and permwrap exits
	// with the command's status.
	marker := s.path("got-int")
	r := s.runWith(func(cmd *exec.Cmd) {
		go func() {
			// Give the trap time to be installed.
			for i := 0; i < 100; i++ {
				time.Sleep(50 * time.Millisecond)
				if _, err := os.Stat(s.path("ready")); err == nil {
					break
				}
			}
			cmd.Process.Signal(syscall.SIGINT)
		}()
	}, "bash", "-c", "trap 'echo int > "+marker+"; exit 7' INT; touch ready; for i in $(seq 200); do sleep 0.05; done; exit 3")
	if r.code != 7 {
		t.Errorf("SIGINT forwarding: exit %d, want 7; stderr %s", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the command's INT trap did not run")
	}
}

func TestOrphansDoNotOutlive(t *testing.T) {
	s := newSandbox(t, denyPolicy)
	pidFile := s.path("orphan.pid")
	r := s.run("bash", "-c", "(sleep 300 & echo $! > "+pidFile+") ; exit 0")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	if pid <= 0 {
		t.Fatalf("bad pid %q", b)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("orphan %d still running after permwrap exited", pid)
	}
}

func TestManyChildrenAndThreads(t *testing.T) {
	s := newSandbox(t, denyPolicy)
	r := s.run("bash", "-c", `for i in $(seq 200); do (echo $i > free_$i) & done; wait; ls free_* | wc -l`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "200" {
		t.Errorf("200 children: exit %d, out %q, err %s", r.code, r.stdout, r.stderr)
	}
	prog := `
import threading, os
def work(i):
    for j in range(50):
        with open("t_%d_%d" % (i, j), "w") as f: f.write("x")
        with open("t_%d_%d" % (i, j)) as f: f.read()
    try:
        open("DENIED", "w")
        print("LEAK")
    except PermissionError:
        pass
ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print(len([n for n in os.listdir(".") if n.startswith("t_")]))
`
	r = s.run("python3", "-c", prog)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "400" {
		t.Errorf("threads: exit %d, out %q, err %s", r.code, r.stdout, r.stderr)
	}
}

// Writing a script, closing it and running it at once is an everyday
// pattern: the supervisor's own copy of the written file must be closed
// before the program learns its open succeeded, or the exec fails with
// ETXTBSY (text file busy). testdata/progs/write_then_exec.c creates the
// file executable in one open and runs it straight after close, with
// nothing watched in between, 2000 times (before the fix: a few failures
// per 2000).
func TestWriteThenExec(t *testing.T) {
	need(t, "cc")
	s := newSandbox(t, permissive)
	bin := filepath.Join(s.dir, "write_then_exec")
	src, _ := filepath.Abs("../testdata/progs/write_then_exec.c")
	if out, err := exec.Command("cc", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	r := s.run(bin)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "fails 0" {
		t.Errorf("write-then-exec: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// TestExecRecordNamesTheCaller: the review log's record of an allowed exec
// names, as the process that asked, the image that asked (bash), not the
// one it asked for. The record is made after the exec is continued, when
// /proc may already show the new image: read then, 24 of 300 records of
// `/bin/true` run from bash named /usr/bin/true as their caller.
func TestExecRecordNamesTheCaller(t *testing.T) {
	s := newSandbox(t, "")
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bash, _ = filepath.EvalSymlinks(bash)
	truePath, _ := filepath.EvalSymlinks("/bin/true")
	r := s.run(bash, "-c", "for i in $(seq 200); do /bin/true; done")
	if r.code != 0 {
		t.Fatalf("exit status %d; stderr:\n%s", r.code, r.stderr)
	}
	n, wrong := 0, map[string]int{}
	for _, rec := range s.logRecords() {
		if rec["access"] != "exec" || rec["value"] != truePath {
			continue
		}
		n++
		if exe := fmt.Sprint(rec["exe"]); exe != bash {
			wrong[exe]++
		}
	}
	if n != 200 {
		t.Errorf("%d exec records of %s, want 200", n, truePath)
	}
	if len(wrong) > 0 {
		t.Errorf("exec records of %s naming another caller than %s: %v", truePath, bash, wrong)
	}
}

// TestIgnoredSignalsReachTheCommand: a signal the person started
// permwrap with ignored (nohup's SIGHUP, a background job's SIGINT and
// SIGQUIT, a parent's SIGPIPE or SIGTERM) is ignored in the command too,
// as it is without permwrap, under one permwrap and under two, and a
// SIGHUP sent to permwrap then ends nothing. Go's runtime replaces an
// inherited SIG_IGN with its own handler for all but SIGHUP and SIGINT,
// and a Go program's children get SIG_DFL for those: permwrap's stages
// put SIG_IGN back (notify/host.KeepIgnoredSignals).
func TestIgnoredSignalsReachTheCommand(t *testing.T) {
	s := newSandbox(t, `{"extends": "none", "permission": {"*": "allow"}}`)
	sigIgn := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
				return strings.TrimSpace(v)
			}
		}
		return "(none in " + strconv.Quote(out) + ")"
	}
	show := []string{"grep", "SigIgn", "/proc/self/status"}
	for _, sigs := range []string{"HUP", "INT QUIT", "TERM", "PIPE", "HUP INT QUIT TERM PIPE USR1 TSTP", ""} {
		s.prefix = []string{"sh", "-c", "trap '' " + sigs + " 2>/dev/null; exec \"$@\"", "sh"}
		if sigs == "" {
			s.prefix = nil
		}
		bare := s.bare(show...)
		if want := sigIgn(bare.stdout); sigs != "" && want == "0000000000000000" {
			t.Fatalf("%s: the bare run ignores nothing (%q): the test cannot tell", sigs, bare.stdout)
		}
		for _, inner := range [][]string{nil, attackInner(t, s)} {
			s.innerArgs = inner
			r := s.run(show...)
			if got, want := sigIgn(r.stdout), sigIgn(bare.stdout); got != want || r.code != 0 {
				t.Errorf("ignored %q, nested %v: the command's SigIgn %s, bare %s (exit %d, %s)", sigs, inner != nil, got, want, r.code, r.stderr)
			}
		}
	}
	s.innerArgs = nil

	// nohup: permwrap and the command outlive a hang-up.
	s.prefix = []string{"sh", "-c", "trap '' HUP; exec \"$@\"", "sh"}
	r := s.runWith(func(cmd *exec.Cmd) {
		go func() {
			for deadline := time.Now().Add(testutil.Scale(10 * time.Second)); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(s.path("ready")); err == nil {
					break
				}
			}
			_ = cmd.Process.Signal(syscall.SIGHUP)
		}()
	}, "sh", "-c", "touch ready; sleep 1; echo survived")
	if r.code != 0 || !strings.Contains(r.stdout, "survived") {
		t.Errorf("SIGHUP to a permwrap started with it ignored: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}
}
