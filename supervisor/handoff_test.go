package supervisor

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/testutil"
	"github.com/permwrap/permwrap/notify/host"
)

// A listener the supervisor cannot take (here: the fd named is not a
// seccomp listener; in a container whose seccomp profile refuses
// pidfd_getfd, the call fails) ends the run with status 125 and the
// reason, and the stage waiting for the answer is told by the socket's
// end. Before, takeListener waited for the watchdog with the socket
// open, and the stage waited for an answer: both for ever.
func TestTakeListenerFailureEndsTheStage(t *testing.T) {
	pair, err := host.SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	parentEnd := os.NewFile(uintptr(pair[0]), "handoff")
	childEnd := os.NewFile(uintptr(pair[1]), "handoff-child")
	defer parentEnd.Close()
	// The stage's side: it has handed over and waits for the answer
	// (awaitTaken), exiting when the socket ends.
	stage := exec.Command("sh", "-c", "cat <&3 >/dev/null; exit 7")
	stage.ExtraFiles = []*os.File{childEnd}
	if err := stage.Start(); err != nil {
		t.Fatal(err)
	}
	// An fd of this process that is not a seccomp listener.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := childEnd.Write(handoffData(false, os.Getpid(), int(r.Fd()))); err != nil {
		t.Fatal(err)
	}
	childEnd.Close()

	l := &launch{watchdog: stage.Process.Pid}
	l.ch.parentEnd = parentEnd
	type result struct {
		status int
		ok     bool
		err    error
	}
	done := make(chan result, 1)
	go func() {
		status, ok, err := l.takeListener()
		done <- result{status, ok, err}
	}()
	select {
	case res := <-done:
		if res.ok || res.status != ExitInternal || res.err == nil || !strings.Contains(res.err.Error(), "not a seccomp listener") {
			t.Fatalf("takeListener = %d, %v, %v; want %d, false, the reason", res.status, res.ok, res.err, ExitInternal)
		}
	case <-time.After(testutil.Scale(20 * time.Second)):
		_ = stage.Process.Kill()
		t.Fatal("takeListener still waiting: the stage was not told the listener was not taken")
	}
}

// A stage that failed and said why passes its own status on, with no
// second message.
func TestTakeListenerStageFailed(t *testing.T) {
	pair, err := host.SeqpacketPair()
	if err != nil {
		t.Fatal(err)
	}
	parentEnd := os.NewFile(uintptr(pair[0]), "handoff")
	childEnd := os.NewFile(uintptr(pair[1]), "handoff-child")
	defer parentEnd.Close()
	stage := exec.Command("sh", "-c", "exit 3")
	if err := stage.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := childEnd.Write([]byte{handoffFailed}); err != nil {
		t.Fatal(err)
	}
	childEnd.Close()
	l := &launch{watchdog: stage.Process.Pid}
	l.ch.parentEnd = parentEnd
	status, ok, err := l.takeListener()
	if ok || status != 3 || err != nil {
		t.Fatalf("takeListener = %d, %v, %v; want 3, false, nil", status, ok, err)
	}
}
