package supervisor_test

// The second daily battery (issue 29's "Done when") and the false asks
// of the default policy it found, each with the real program:
//
//   - TestDefaultFalseAsks: headless, as an ordinary user with a home
//     outside /tmp: less's history, a public key, the go command's
//     ~/.config, mkdir -p of existing directories (in audit mode too)
//     ask nothing; a private key, under its own name or a .pub one,
//     is still refused.
//   - TestBackgroundProcessesEndWithTheCommand: what README says about
//     nohup and setsid.
//   - TestSecondBattery (-tags long): a routine day in a real terminal
//     (tmux) whose every prompt the test answers "Allow once" and
//     counts, with a push to a local remote, command rules about
//     options, git worktree add; then the review log (what it shows, its
//     size per hour), and --audit followed by policy suggest.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
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

// newDailyHome is the battery's home without its fixtures: a home for an
// ordinary user (nobody, when the test runs as root) outside /tmp, the
// workspace ~/src/project, permwrap where that user can run it. The go
// command's telemetry is left as it comes (on, locally), as a person has
// it.
func newDailyHome(t *testing.T) *battery {
	t.Helper()
	requireSupervision(t)
	base := batteryBase(t)
	b := &battery{
		t:      t,
		base:   base,
		bin:    filepath.Join(base, "bin", "permwrap"),
		home:   filepath.Join(base, "home", "dev"),
		fix:    filepath.Join(base, "fixtures"),
		bareWS: filepath.Join(base, "home", "dev", "src", "bare"),
		ws:     filepath.Join(base, "home", "dev", "src", "project"),
	}
	b.logPath = filepath.Join(b.home, ".local", "state", "permwrap", "review.jsonl")
	for _, d := range []string{filepath.Dir(b.bin), b.home, b.fix, b.ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyExec(t, permwrapBin, b.bin)
	// run passes --policy b.netPolicy: here a scope that adds nothing.
	b.netPolicy = filepath.Join(b.fix, "nothing.jsonc")
	if err := os.WriteFile(b.netPolicy, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.env = []string{
		"HOME=" + b.home,
		"USER=dev", "LOGNAME=dev", "SHELL=/bin/bash",
		"PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8", "TERM=dumb",
		"GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.com",
		"GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.com",
		"GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local",
		"npm_config_update_notifier=false",
	}
	if os.Geteuid() == 0 {
		b.cred = &syscall.Credential{Uid: batteryUID, Gid: batteryUID, Groups: []uint32{}}
	}
	b.chownHome()
	return b
}

// chownHome gives the home and the fixtures to the battery's user.
func (b *battery) chownHome() {
	if b.cred == nil {
		return
	}
	for _, root := range []string{filepath.Join(b.base, "home"), b.fix} {
		if err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, batteryUID, batteryUID)
		}); err != nil {
			b.t.Fatal(err)
		}
	}
}

// logSize is the review log's size now (0 when there is none yet).
func (b *battery) logSize() int64 {
	st, err := os.Stat(b.logPath)
	if err != nil {
		return 0
	}
	return st.Size()
}

// logFrom returns the review log's records from byte off on (all of
// them when the log is shorter: it was rotated).
func (b *battery) logFrom(off int64) []map[string]any {
	b.t.Helper()
	data, err := os.ReadFile(b.logPath)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		b.t.Fatal(err)
	}
	if off > int64(len(data)) {
		off = 0
	}
	return testutil.ParseRecords(b.t, "review log "+b.logPath, data[off:])
}

// Record events, by what they say.
var (
	eventAsked    = "permission_request.asked"
	eventOutcomes = map[string]bool{"permission_request.approved": true, "permission_request.rejected": true, "permission_request.timed_out": true}
	eventRefused  = map[string]bool{"permission_request.denied": true, "permission_request.rejected": true, "permission_request.timed_out": true}
	eventWould    = map[string]bool{"permission_request.would_ask": true, "permission_request.would_deny": true}
)

// describe is one log record in a line: what, by whom, on which rule.
func describe(r map[string]any) string {
	rule, _ := r["rule"].(map[string]any)
	by, _ := json.Marshal(r["decidedBy"])
	return fmt.Sprintf("%v %v %v %v (exe %v; rule %v:%v %v; decidedBy %s)", r["event"], r["surface"], r["access"], r["value"], r["exe"], rule["surface"], rule["pattern"], rule["action"], by)
}

func TestDefaultFalseAsks(t *testing.T) {
	need(t, "bash", "less", "script", "ssh-keygen", "go", "cat", "mkdir")
	b := newDailyHome(t)
	b.runOK(false, b.ws, "bash", "-c", `set -e
seq 1 200 > notes.txt
mkdir -m 700 "$HOME/.ssh"
ssh-keygen -q -t ed25519 -N '' -C dev@example.com -f "$HOME/.ssh/id_ed25519"
cp "$HOME/.ssh/id_ed25519" "$HOME/.ssh/backup.pub"`)
	if _, err := os.Lstat(filepath.Join(b.home, ".config")); err == nil {
		t.Fatal("~/.config exists before the go command runs")
	}
	pub, err := os.ReadFile(filepath.Join(b.home, ".ssh", "id_ed25519.pub"))
	if err != nil || !bytes.HasPrefix(pub, []byte("ssh-ed25519 ")) {
		t.Fatalf("ssh-keygen's public key: %q %v", pub, err)
	}
	for _, s := range []struct{ name, script, want string }{
		// less, in a terminal of its own, saves its history through
		// ~/.lesshsQ.
		{"less writes its history", `printf q | TERM=xterm script -qec 'less notes.txt' /dev/null >/dev/null && test -s "$HOME/.lesshst" && echo history`, "history\n"},
		{"cat a public key", `cat "$HOME/.ssh/id_ed25519.pub"`, string(pub)},
		// The go command makes ~/.config on its way to its telemetry
		// counters (~/.config/go/telemetry/**, allowed).
		{"go makes ~/.config for its telemetry", `go env GOTELEMETRY >/dev/null && go version >/dev/null && test -d "$HOME/.config/go/telemetry" && echo telemetry`, "telemetry\n"},
		{"mkdir -p of existing directories", `mkdir -p "$HOME/.ssh" "$HOME/.config" /usr/share/doc "$HOME/src/project/new/dir" && echo made`, "made\n"},
	} {
		off := b.logSize()
		r := b.run(true, b.ws, nil, "bash", "-c", s.script)
		if r.code != 0 || r.stdout != s.want || strings.Contains(r.stderr, "permwrap:") {
			t.Errorf("%s: exit %d, stdout %q (want %q)\nstderr:\n%s", s.name, r.code, r.stdout, s.want, r.stderr)
		}
		for _, rec := range b.logFrom(off) {
			if ev, _ := rec["event"].(string); ev == eventAsked || eventRefused[ev] {
				t.Errorf("%s: %s", s.name, describe(rec))
			}
		}
	}
	if st, err := os.Stat(filepath.Join(b.home, ".lesshsQ")); err == nil {
		t.Errorf("less's temporary history file was left behind: %v", st.Name())
	}

	// Private keys are still refused (headless: an ask is a denial),
	// under their own name or a .pub one.
	for _, rel := range []string{".ssh/backup.pub", ".ssh/id_ed25519"} {
		p := filepath.Join(b.home, rel)
		off := b.logSize()
		r := b.run(true, b.ws, nil, "cat", p)
		if r.code == 0 || strings.Contains(r.stdout, "PRIVATE KEY") || !strings.Contains(r.stderr, "permwrap: denied") {
			t.Errorf("cat ~/%s: exit %d, stdout %q, stderr:\n%s", rel, r.code, r.stdout, r.stderr)
		}
		refused := false
		for _, rec := range b.logFrom(off) {
			if ev, _ := rec["event"].(string); eventRefused[ev] && rec["value"] == p {
				refused = true
			}
		}
		if !refused {
			t.Errorf("cat ~/%s: no denial of %s in the review log", rel, p)
		}
	}

	// Audit mode answers a mkdir of an existing directory as the kernel
	// does, as without --audit: no would_ask (policy suggest would turn
	// it into a rule for ~ or /usr); a directory it really would ask
	// about is still logged as would_ask.
	fresh := filepath.Join(b.home, ".config", "some-tool")
	existing := []string{filepath.Join(b.home, ".ssh"), "/usr/share/doc"}
	off := b.logSize()
	r := b.runFlags([]string{"--audit"}, b.ws, nil, "mkdir", "-p", existing[0], existing[1], fresh)
	if r.code != 0 {
		t.Errorf("permwrap --audit -- mkdir -p: exit %d\n%s", r.code, r.stderr)
	}
	var answered, wouldFresh int
	for _, rec := range b.logFrom(off) {
		if rec["access"] != "mkdir" {
			continue
		}
		ev, _ := rec["event"].(string)
		switch {
		case rec["value"] == fresh && ev == "permission_request.would_ask":
			wouldFresh++
		case eventWould[ev] || ev == eventAsked || eventRefused[ev]:
			t.Errorf("--audit, mkdir -p of an existing directory: %s", describe(rec))
		case ev == "permission_request.answered":
			answered++
		}
	}
	if answered == 0 || wouldFresh != 1 {
		t.Errorf("--audit mkdir -p: %d answered without asking (want some: %v exist), %d would_ask of %s (want 1)", answered, existing, wouldFresh, fresh)
	}
}

// Background processes (nohup, setsid, a double fork) do not outlive
// the command permwrap runs: the sandbox holds only while permwrap
// serves, so when the command exits permwrap ends what it left
// running (README, "Background processes").
func TestBackgroundProcessesEndWithTheCommand(t *testing.T) {
	need(t, "bash", "nohup", "setsid", "sleep")
	s := newSandbox(t, `{ "extends": "none", "permission": { "*": "allow" } }`)
	marker := fmt.Sprintf("permwrap-bg-%d", time.Now().UnixNano())
	goOn := s.path("go-on")
	script := `nohup bash -c 'exec -a ` + marker + `-nohup sleep 300' >/dev/null 2>&1 &
setsid bash -c 'exec -a ` + marker + `-setsid sleep 300' >/dev/null 2>&1 </dev/null &
( ( exec -a ` + marker + `-daemon sleep 300 ) >/dev/null 2>&1 </dev/null & ) 
while [ ! -e go-on ]; do sleep 0.1; done
echo started`
	var seen []string
	r := s.runWith(func(*exec.Cmd) {
		deadline := time.Now().Add(testutil.Scale(20 * time.Second))
		for seen = bgProcesses(marker); len(seen) < 3 && time.Now().Before(deadline); seen = bgProcesses(marker) {
			time.Sleep(50 * time.Millisecond)
		}
		if err := os.WriteFile(goOn, nil, 0o644); err != nil {
			t.Error(err)
		}
	}, "bash", "-c", script)
	if r.code != 0 || r.stdout != "started\n" {
		t.Fatalf("exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	if len(seen) != 3 {
		t.Fatalf("the background processes never all ran: %v", seen)
	}
	deadline := time.Now().Add(testutil.Scale(10 * time.Second))
	for left := bgProcesses(marker); len(left) > 0; left = bgProcesses(marker) {
		if time.Now().After(deadline) {
			t.Fatalf("still running after permwrap exited: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// bgProcesses lists the processes whose argv[0] begins with marker
// (zombies are not running).
func bgProcesses(marker string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.HasPrefix(cmd, []byte(marker)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, e.Name()+":"+string(bytes.SplitN(cmd, []byte{0}, 2)[0]))
	}
	return out
}
