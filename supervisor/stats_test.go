package supervisor_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// PERMWRAP_STATS=FILE: at the end of the run the supervisor writes, per
// kind of notified call, how many it handled and the CPU they took. A
// command that reads three files, creates one and runs two programs is
// counted with at least those calls under their kinds.
func TestStatsFile(t *testing.T) {
	s := newSandbox(t, "")
	for _, f := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(s.workspace, f), []byte(f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(s.dir, "stats.json")
	s.env = append(s.env, "PERMWRAP_STATS="+file)
	r := s.run("sh", "-c", "cat a b c >/dev/null && : > new && /bin/true")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("no statistics: %v", err)
	}
	var got struct {
		Calls uint64 `json:"calls"`
		CPUNs int64  `json:"cpu_ns"`
		Kinds map[string]struct {
			Count uint64 `json:"count"`
			CPUNs int64  `json:"cpu_ns"`
		} `json:"kinds"`
		ProcessCPUNs int64 `json:"process_cpu_ns"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	var sum uint64
	for _, k := range got.Kinds {
		sum += k.Count
	}
	if sum != got.Calls || got.CPUNs <= 0 || got.ProcessCPUNs < got.CPUNs {
		t.Errorf("totals do not add up: %s", b)
	}
	for kind, least := range map[string]uint64{"open-read": 3, "open-create": 1, "exec": 2} {
		if n := got.Kinds[kind].Count; n < least {
			t.Errorf("%s: %d calls, want at least %d; stats: %s", kind, n, least, b)
		}
	}
	// A run without the variable writes nothing.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	s.env = nil
	if r := s.run("true"); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("a run without PERMWRAP_STATS wrote %s (%v)", file, err)
	}
}
