package supervisor_test

import (
	"path/filepath"
	"slices"
	"testing"
)

// The review log under the default policy: a process's allowed reads
// are one summary record (program, pid, count, paths), not one record
// each; an ask nobody could answer has one outcome record; and the
// process that asked is named by its program — permwrap's own launch
// stage, started through /proc/self/exe, as "permwrap"-the-binary, not
// "exe".
func TestReviewLogSummariesAndProgramNames(t *testing.T) {
	s := newSandbox(t, "")
	if r := s.run("sh", "-c", "cat /etc/hostname >/dev/null; ls /usr/share >/dev/null"); r.code != 0 {
		t.Fatalf("reads: exit %d: %s", r.code, r.stderr)
	}
	r := s.run("sh", "-c", "echo x > /etc/permwrap-review-log-test")
	if r.code == 0 {
		t.Fatalf("a headless write to /etc ran: %s", r.stderr)
	}
	recs := s.logRecords()
	var cat map[string]any
	outcomes := map[string]int{}
	var asked map[string]any
	for _, rec := range recs {
		ev := rec["event"]
		if ev == "permission_request.allowed" && rec["surface"] == "read" {
			t.Errorf("an allowed read has a record of its own: %v", rec)
		}
		if ev == "permission_request.allowed_reads" && rec["program"] == "cat" {
			cat = rec
		}
		if ev == "permission_request.asked" && rec["value"] == "/etc/permwrap-review-log-test" {
			asked = rec
		}
		switch ev {
		case "permission_request.rejected", "permission_request.denied", "permission_request.timed_out", "permission_request.approved":
			outcomes[rec["requestId"].(string)]++
		}
	}
	if cat == nil {
		t.Fatalf("no read summary for cat in:\n%v", recs)
	}
	paths, _ := cat["paths"].([]any)
	if n, _ := cat["count"].(float64); n < 1 || !slices.Contains(paths, any("/etc/hostname")) || cat["exe"] == nil {
		t.Errorf("cat's summary %v: want a count and /etc/hostname among its paths", cat)
	}
	for id, n := range outcomes {
		if n != 1 {
			t.Errorf("request %s has %d outcome records", id, n)
		}
	}
	if asked == nil {
		t.Fatalf("no ask recorded for the write to /etc")
	}
	exe, _ := asked["exe"].(string)
	if asked["comm"] == "exe" || asked["comm"] != filepath.Base(exe) {
		t.Errorf("the asking process is named %v (exe %v), want its program's name", asked["comm"], exe)
	}
}
