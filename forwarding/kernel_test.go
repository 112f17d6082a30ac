package forwarding

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/kerneltest"
)

// The tree against real processes: ProcFS, child subreapers and the
// kernel's re-parenting. The scenario runs in a re-executed test binary
// (it makes itself a subreaper, which is process state a test should not
// leave behind), and the keeper is the test binary again.

const roleEnv = "FORWARDING_TEST_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "keeper" {
		keeperMain()
		return
	}
	os.Exit(m.Run())
}

// keeperMain is a node's keeper as cmd/permwrap will run it: a child
// subreaper that starts the command once told to (after its node is
// registered) and reaps everything re-parented to it until its stdin
// closes.
func keeperMain() {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "keeper: subreaper:", err)
		os.Exit(2)
	}
	in := bufio.NewReader(os.Stdin)
	script, err := in.ReadString('\n')
	if err != nil {
		os.Exit(2)
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "keeper: start:", err)
		os.Exit(2)
	}
	go func() {
		_, _ = io.Copy(io.Discard, in)
		os.Exit(0)
	}()
	for {
		var ws unix.WaitStatus
		if _, err := unix.Wait4(-1, &ws, 0, nil); errors.Is(err, unix.ECHILD) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func TestTreeWithRealProcesses(t *testing.T) {
	if os.Getenv(roleEnv) != "top" {
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d/children", os.Getpid())); err != nil {
			kerneltest.Skip(t, "/proc/PID/task/TID/children (CONFIG_PROC_CHILDREN)")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestTreeWithRealProcesses$", "-test.v")
		cmd.Env = append(os.Environ(), roleEnv+"=top")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("scenario failed: %v\n%s", err, out)
		}
		t.Logf("%s", out)
		return
	}
	realScenario(t)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func realScenario(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		kerneltest.Skip(t, "PR_SET_CHILD_SUBREAPER: "+err.Error())
	}
	var pids []int
	defer func() {
		for _, p := range pids {
			_ = unix.Kill(p, unix.SIGKILL)
		}
	}()
	procs := ProcFS{}
	reg := newReg(t, cfg(`{"permission": {"*": "allow"}}`))
	top := os.Getpid()
	tree := NewTree(procs, reg, top, TreeOptions{})
	dir := t.TempDir()

	// The root's own process.
	agent := exec.Command("sleep", "60")
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	pids = append(pids, agent.Process.Pid)

	// The inner permwrap's keeper.
	keeper := exec.Command(os.Args[0])
	keeper.Env = append(os.Environ(), roleEnv+"=keeper")
	keeper.Stderr = os.Stderr
	kin, err := keeper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := keeper.Start(); err != nil {
		t.Fatal(err)
	}
	kpid := keeper.Process.Pid
	pids = append(pids, kpid)
	kst, err := procs.Stat(kpid)
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := tree.Register(Peer{PID: kpid, Start: kst.Start}, Spec{Name: "inner", Argv: []string{"sh"},
		Config: cfg(`{"permission": {"*": "allow", "write": {"/inner-denied/**": "deny"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := tree.NodeOf(kpid); err != nil || m.Node() != reg.Root() {
		t.Fatalf("keeper itself: %v %v", m.Label(), err)
	}

	// The command double-forks two daemons and exits: the inner permwrap
	// is done, the daemons keep running (issue test 7).
	script := fmt.Sprintf(`for d in d1 d2; do sh -c 'echo $$ > "$1.tmp"; mv "$1.tmp" "$1"; exec sleep 60' x %s/$d & done; wait_for() { while [ ! -s "$1" ]; do sleep 0.05; done; }; wait_for %s/d1; wait_for %s/d2; exit 0`, dir, dir, dir)
	if _, err := io.WriteString(kin, strings.ReplaceAll(script, "\n", " ")+"\n"); err != nil {
		t.Fatal(err)
	}
	d1, d2 := 0, 0
	waitFor(t, "the daemons", func() bool {
		d1, d2 = readPid(filepath.Join(dir, "d1")), readPid(filepath.Join(dir, "d2"))
		return d1 > 0 && d2 > 0
	})
	pids = append(pids, d1, d2)
	// Their parent (the command) exits; they are re-parented to the keeper.
	waitFor(t, "re-parenting to the keeper", func() bool {
		s1, e1 := procs.Stat(d1)
		s2, e2 := procs.Stat(d2)
		return e1 == nil && e2 == nil && s1.PPID == kpid && s2.PPID == kpid
	})
	if m, err := tree.NodeOf(d1); err != nil || m.Node() != n {
		t.Fatalf("orphan of the inner command: %s %v", m.Label(), err)
	}
	if v := Decide(mustNodeOf(t, tree, d1).Layers(), write("/inner-denied/x")...); v.Result.Action != engine.Deny {
		t.Fatalf("the inner's rule must hold for its orphan: %s", v)
	}
	if m, err := tree.NodeOf(agent.Process.Pid); err != nil || m.Node() != reg.Root() {
		t.Fatalf("root's process: %s %v", m.Label(), err)
	}
	// The keeper has children: it cannot say its subtree is empty.
	if err := tree.KeeperDone(n); err == nil {
		t.Fatal("done accepted from a keeper with children")
	}

	// The keeper is killed from outside: d2, never looked up, is
	// re-parented to the top and can no longer be told apart from the
	// root's own orphans; d1 was seen and keeps its node.
	if err := keeper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = keeper.Wait()
	waitFor(t, "re-parenting to the top", func() bool {
		s, err := procs.Stat(d2)
		return err == nil && s.PPID == top
	})
	if m, err := tree.NodeOf(d1); err != nil || m.Node() != n {
		t.Fatalf("seen orphan after the keeper died: %s %v", m.Label(), err)
	}
	m, err := tree.NodeOf(d2)
	if err != nil || !m.Ambiguous() {
		t.Fatalf("unseen orphan after the keeper died: %s %v", m.Label(), err)
	}
	if v := Decide(m.Layers(), write("/inner-denied/x")...); v.Result.Action != engine.Deny {
		t.Fatalf("the broken node's rules must still hold for a possible orphan: %s", v)
	}
	tree.Sweep()
	if n.State() != StateAbandoned {
		t.Fatalf("node state %s", n.State())
	}

	// A pid that is gone is gone; a pid outside the tree is unknown.
	if _, err := tree.NodeOf(1); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("pid 1: %v", err)
	}
	_ = agent.Process.Kill()
	_ = agent.Wait()
	if _, err := tree.NodeOf(agent.Process.Pid); !errors.Is(err, ErrGone) && !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("exited process: %v", err)
	}
}

func mustNodeOf(t *testing.T, tree *Tree, pid int) Membership {
	t.Helper()
	m, err := tree.NodeOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The stat line's parser is internal/procfs's (TestParseStat there).
func TestProcFSStat(t *testing.T) {
	// This process, through /proc.
	st, err := ProcFS{}.Stat(os.Getpid())
	if err != nil || st.PPID != os.Getppid() || st.Start == 0 {
		t.Fatalf("self: %+v %v", st, err)
	}
	pin, err := ProcFS{}.Pin(st)
	if err != nil || !pin.Alive() {
		t.Fatalf("pin: %v", err)
	}
	if _, err := (ProcFS{}).Pin(ProcStat{PID: os.Getpid(), Start: st.Start + 1}); !errors.Is(err, ErrGone) {
		t.Fatalf("a pin on another instance: %v", err)
	}
}
