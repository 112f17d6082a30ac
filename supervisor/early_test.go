package supervisor_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The root permwrap starts its stages (the watchdog and the init stage)
// while it loads the policy (supervisor.StartEarly). A policy that does
// not load ends them before the command runs: the init stage gets no
// spec and goes without a word, only the policy's error is said, and no
// process of the run is left once permwrap has exited.
func TestEarlyStagesEndWhenThePolicyFails(t *testing.T) {
	s := newSandbox(t, "{ \"files\": { bad")
	marker := "PERMWRAP_TEST_EARLY=" + strconv.FormatInt(time.Now().UnixNano(), 10)
	s.env = append(s.env, marker)
	ran := s.path("ran")
	r := s.run("touch", ran)
	if r.code != 125 {
		t.Errorf("exit %d, want 125; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "policy.jsonc:1:") {
		t.Errorf("stderr does not name the policy's error:\n%s", r.stderr)
	}
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if !strings.Contains(l, "policy.jsonc") {
			t.Errorf("stderr says more than the policy's error: %q", l)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran")
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(marker+"\x00")) {
			cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
			t.Errorf("a process of the run is left: %s %q", filepath.Dir(p), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

// A nested permwrap starts its keeper while it loads its policy
// (forwarding.StartKeeper). A policy that does not load ends the keeper
// before it registers anything: the inner permwrap says the policy's
// error, exits 125, and the command does not run.
func TestEarlyKeeperEndsWhenTheInnerPolicyFails(t *testing.T) {
	s := newSandbox(t, openPolicy(""))
	in := s.newInner("broken", "{ \"files\": { bad")
	ran := s.path("ran")
	r := s.run(in.wrap("touch", ran)...)
	if r.code != 125 {
		t.Errorf("exit %d, want 125; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "policy.jsonc:1:") {
		t.Errorf("stderr does not name the inner policy's error:\n%s", r.stderr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran")
	}
}
