package supervisor

import (
	"os/exec"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify/pin"
)

// TestExecGlance: the poller's one-stat look says "look again later"
// only while the process still shows the executable it ran before, the
// judged image is another file, and the exec was continued less than
// glanceFor ago; in every other case it sends the poller to the full
// read (settle), which alone verifies or kills.
func TestExecGlance(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	proc, err := pin.OpenProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Close()
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(cmd.Process.Pid)+"/exe", &st); err != nil {
		t.Fatal(err)
	}
	sleepID := pin.FileID{Dev: st.Dev, Ino: st.Ino}
	other := pin.FileID{Dev: st.Dev, Ino: st.Ino + 1}
	var v execVerifier
	for _, c := range []struct {
		name      string
		pre, want pin.FileID
		ago       time.Duration
		glance    bool
	}{
		{"still the old executable", sleepID, other, 0, true},
		{"continued too long ago", sleepID, other, 2 * glanceFor, false},
		{"judged image is the old executable", sleepID, sleepID, 0, false},
		{"another executable shows", other, sleepID, 0, false},
	} {
		p := &pendingExec{proc: proc, pre: pin.Running{Exe: c.pre}, wantExe: c.want, startedAt: time.Now().Add(-c.ago)}
		if got := v.glance(p); got != c.glance {
			t.Errorf("%s: glance %v, want %v", c.name, got, c.glance)
		}
	}
	// Gone: /proc/PID/exe cannot be read, so the poller looks closer.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	p := &pendingExec{proc: proc, pre: pin.Running{Exe: sleepID}, wantExe: other, startedAt: time.Now()}
	if v.glance(p) {
		t.Error("glance says look again later for an exited process")
	}
}
