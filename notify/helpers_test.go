package notify

// Test helpers for kernel tests: a re-exec'd child that installs the filter
// and hands its listener to the parent test, which plays supervisor.
// Other packages may copy this file; within notify, register child roles
// with registerChildRole from an init function.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

const (
	envChildRole   = "PERMWRAP_NOTIFY_TEST_CHILD"
	envChildOpts   = "PERMWRAP_NOTIFY_TEST_OPTS" // comma list: skipro, nowaitkill
	childHandoffFd = 3
	exitChildSetup = 97 // the child could not build or install the filter
)

var (
	childRolesMu sync.Mutex
	childRoles   = map[string]func() int{}
)

// registerChildRole makes fn runnable as a filtered child under name. fn
// runs after the filter is installed and its listener handed over; it
// reports on stdout (write is not watched) and returns the exit code.
func registerChildRole(name string, fn func() int) {
	childRolesMu.Lock()
	defer childRolesMu.Unlock()
	if _, dup := childRoles[name]; dup {
		panic("duplicate child role " + name)
	}
	childRoles[name] = fn
}

func TestMain(m *testing.M) {
	if role := os.Getenv(envChildRole); role != "" {
		os.Exit(childMain(role))
	}
	os.Exit(m.Run())
}

func childMain(role string) int {
	childRolesMu.Lock()
	fn := childRoles[role]
	childRolesMu.Unlock()
	if fn == nil {
		fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
		return exitChildSetup
	}
	var o FilterOptions
	noWaitKill, skipRO := false, false
	for _, opt := range strings.Split(os.Getenv(envChildOpts), ",") {
		switch opt {
		case "skipro":
			skipRO = true
		case "nowaitkill":
			noWaitKill = true
		}
	}
	o.Rules = testRules(skipRO)
	p, err := BuildFilter(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "BuildFilter:", err)
		return exitChildSetup
	}
	var fd int
	var used InstallFlags
	if noWaitKill {
		fd, err = installWithoutWaitKillable(p)
	} else {
		fd, used, err = Install(p)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "Install:", err)
		return exitChildSetup
	}
	// Only unwatched syscalls from here until the parent serves.
	flag := []byte{0}
	if used.WaitKillable {
		flag[0] = 1
	}
	if err := unix.Sendmsg(childHandoffFd, flag, unix.UnixRights(fd), nil, 0); err != nil {
		fmt.Fprintln(os.Stderr, "sendmsg:", err)
		return exitChildSetup
	}
	unix.Close(fd)
	unix.Close(childHandoffFd)
	return fn()
}

// installWithoutWaitKillable is Install minus WAIT_KILLABLE_RECV, for tests
// that show what the flag changes.
func installWithoutWaitKillable(p *Program) (int, error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, err
	}
	return sysSeccompSetFilter(installFlagsBase, p.Insns)
}

// filteredChild is a running child under the filter and the listener the
// parent test serves.
type filteredChild struct {
	L      *Listener
	Used   InstallFlags
	Cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
	waited bool
	err    error
}

// startFilteredChild re-executes the test binary as role with the filter
// built from opts ("skipro", "nowaitkill"). extraEnv is passed to
// the child. The child is killed at the end of the test.
func startFilteredChild(t testing.TB, role string, opts string, extraEnv ...string) *filteredChild {
	t.Helper()
	return startFilteredChildStdin(t, nil, role, opts, extraEnv...)
}

// startChildOpeningAfterStdin starts the "open-after-stdin" child: it makes
// its watched open once a byte is written to w (closed at the end of the
// test).
func startChildOpeningAfterStdin(t testing.TB) (c *filteredChild, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	c = startFilteredChildStdin(t, r, "open-after-stdin", "")
	r.Close()
	return c, w
}

// startFilteredChildStdin is startFilteredChild with the child's stdin.
func startFilteredChildStdin(t testing.TB, stdin *os.File, role string, opts string, extraEnv ...string) *filteredChild {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	parentEnd := fds[0]
	childEnd := os.NewFile(uintptr(fds[1]), "handoff")
	defer unix.Close(parentEnd)

	c := &filteredChild{}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChildRole+"="+role, envChildOpts+"="+opts)
	// The race runtime sleeps 1s at exit by default; the children are many.
	cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=0")
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.ExtraFiles = []*os.File{childEnd}
	cmd.Stdout = &c.stdout
	cmd.Stderr = &c.stderr
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL}
	c.Cmd = cmd
	if err := cmd.Start(); err != nil {
		childEnd.Close()
		t.Fatalf("starting child: %v", err)
	}
	childEnd.Close()
	t.Cleanup(func() {
		if !c.waited {
			cmd.Process.Kill()
			c.Wait()
		}
	})

	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(parentEnd, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		c.Wait()
		if c.Cmd.ProcessState != nil && c.Cmd.ProcessState.ExitCode() == exitChildSetup {
			kerneltest.Skipf(t, "child could not install the filter: %s", strings.TrimSpace(c.stderr.String()))
		}
		t.Fatalf("receiving listener: n=%d err=%v; child stderr: %s", n, err, c.stderr.String())
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		t.Fatalf("parsing control message: %v (%d messages)", err, len(msgs))
	}
	rights, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(rights) != 1 {
		t.Fatalf("parsing SCM_RIGHTS: %v (%d fds)", err, len(rights))
	}
	c.L = NewListener(rights[0])
	c.Used = InstallFlags{WaitKillable: buf[0] == 1}
	t.Cleanup(func() { c.L.Close() })
	return c
}

// Wait waits for the child and returns its stdout. The wait is bounded so
// a hung child fails the test instead of stalling the suite.
func (c *filteredChild) Wait() (string, error) {
	if c.waited {
		return c.stdout.String(), c.err
	}
	done := make(chan error, 1)
	go func() { done <- c.Cmd.Wait() }()
	select {
	case c.err = <-done:
	case <-time.After(60 * time.Second):
		c.Cmd.Process.Kill()
		c.err = fmt.Errorf("child did not exit within 60s: %w", <-done)
	}
	c.waited = true
	return c.stdout.String(), c.err
}

// output waits for the child (Wait) and returns its stdout; a child that
// failed or hung fails the test, with what it wrote to stderr.
func (c *filteredChild) output(t testing.TB) string {
	t.Helper()
	out, err := c.Wait()
	if err != nil {
		t.Fatalf("child: %v, stderr: %s", err, c.stderr.String())
	}
	return out
}

// receiveOrFail receives one notification, failing the test on error.
func receiveOrFail(t testing.TB, l *Listener) Notif {
	t.Helper()
	var n Notif
	for {
		err := l.Receive(&n)
		if err == ErrGone {
			continue
		}
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		return n
	}
}

// serveContinueAll answers every notification with CONTINUE until the
// filter has no users left, and returns how many it served.
func serveContinueAll(t testing.TB, l *Listener) int {
	t.Helper()
	served := 0
	for {
		var n Notif
		err := l.Receive(&n)
		switch {
		case err == ErrGone:
			continue
		case err != nil:
			if err != io.EOF {
				t.Errorf("Receive: %v", err)
			}
			return served
		}
		served++
		if err := l.Continue(n.ID); err != nil && err != ErrGone {
			t.Errorf("Continue %v: %v", &n, err)
		}
	}
}
