package supervisor

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/supervisor/terminal"
)

// TestReceiveTroubleSaidOnce: the person hears of a failing receive once
// per run, not once per retry.
func TestReceiveTroubleSaidOnce(t *testing.T) {
	var out fakeWriter
	s := &supervisor{notices: terminal.NewNoticer(&out)}
	for range 5 {
		s.receiveTrouble(unix.EMFILE)
	}
	if out.lines != 1 {
		t.Errorf("%d lines written, want 1", out.lines)
	}
}

type fakeWriter struct{ lines int }

func (w *fakeWriter) Write(p []byte) (int, error) {
	for _, c := range p {
		if c == '\n' {
			w.lines++
		}
	}
	return len(p), nil
}

// TestHoldForVerifiedStop: the role's holder keeps the role for an exec's
// verification stop (arch_prctl) once that exec is verified — the stop is
// then a bare CONTINUE — and hands it on while the exec still awaits
// verification, as it does for every exec itself.
func TestHoldForVerifiedStop(t *testing.T) {
	s := &supervisor{}
	s.execs.init(s)
	stop := &notify.Notif{Nr: unix.SYS_ARCH_PRCTL, Pid: 10}
	if !s.keepRole(stop) {
		t.Error("the stop of a process with no exec pending is handed on")
	}
	p := &pendingExec{tid: 10, tgid: 10}
	s.execs.pending[10] = p
	s.execs.count.Store(1)
	if s.keepRole(stop) {
		t.Error("the stop of an exec awaiting verification is held")
	}
	if !s.keepRole(&notify.Notif{Nr: unix.SYS_ARCH_PRCTL, Pid: 11}) {
		t.Error("another thread's stop is handed on because of thread 10's exec")
	}
	p.done.Store(true)
	if !s.keepRole(stop) {
		t.Error("the stop of a verified exec is handed on")
	}
	for _, nr := range []int32{unix.SYS_EXECVE, unix.SYS_EXECVEAT} {
		if s.keepRole(&notify.Notif{Nr: nr, Pid: 10}) {
			t.Errorf("syscall %d: an exec is held", nr)
		}
	}
	if !s.keepRole(&notify.Notif{Nr: unix.SYS_OPENAT, Pid: 10}) {
		t.Error("an open is handed on")
	}
}

// TestAsksEnd: asks keep being decided while finish waits for them (it
// waits for the workers for a bounded time only); none is started beside
// its worker once the wait has begun, each of them is resolved, and the
// wait returns. An ask counted after the wait began met it with the count
// at zero: a panic, and under -race a reported race.
func TestAsksEnd(t *testing.T) {
	for i := range 200 {
		var s supervisor
		var resolved atomic.Int32
		var workers sync.WaitGroup
		const each = 50
		for range 4 {
			workers.Go(func() {
				for range each {
					if !s.startAsk(func() { resolved.Add(1) }) {
						resolved.Add(1) // resolved by the worker itself
					}
				}
			})
		}
		time.Sleep(time.Duration(i%5) * 20 * time.Microsecond)
		s.waitAsks()
		if s.startAsk(func() {}) {
			t.Fatal("startAsk started an ask after waitAsks")
		}
		workers.Wait()
		s.asks.Wait()
		if n := resolved.Load(); n != 4*each {
			t.Fatalf("run %d: %d of %d asks resolved", i, n, 4*each)
		}
	}
}

// programName names a process by its comm unless the comm says how it
// was started: "exe" (through /proc/self/exe) or a descriptor's number.
func TestProgramName(t *testing.T) {
	cases := []struct {
		comm, exe string
		argv      []string
		want      string
	}{
		{"git", "/usr/bin/git", []string{"git", "push"}, "git"},
		{"exe", "/usr/local/bin/permwrap", []string{"/proc/self/exe", "init"}, "permwrap"},
		{"3", "/usr/bin/python3.11", []string{"python3"}, "python3.11"},
		{"", "/usr/bin/ls", nil, "ls"},
		{"exe", "/usr/local/bin/tool (deleted)", nil, "tool"},
		{"exe", "", []string{"/opt/x/runner", "-v"}, "runner"},
		{"exe", "", nil, "exe"},
		{"myscript.sh", "/usr/bin/bash", []string{"/bin/bash", "./myscript.sh"}, "myscript.sh"},
	}
	for _, c := range cases {
		if got := programName(c.comm, c.exe, c.argv); got != c.want {
			t.Errorf("programName(%q, %q, %q) = %q, want %q", c.comm, c.exe, c.argv, got, c.want)
		}
	}
}
