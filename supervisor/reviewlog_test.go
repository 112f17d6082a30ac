package supervisor_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
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

// The full disk, end to end: the review log on a 64 KB tmpfs,
// filled by a tree's allowed writes, and then a denial. permwrap says so
// once on stderr, enforces the denial, records it (it fits where the
// routine records did not), leaves no half record, and its last line
// counts what was not written.
func TestReviewLogDiskFull(t *testing.T) {
	s := newSandbox(t, "")
	if os.Geteuid() != 0 {
		kerneltest.Skip(t, "root, to mount a 64 KB tmpfs")
	}
	dir := filepath.Join(s.dir, "small")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	kerneltest.Need(t, "a tmpfs mount", unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"))
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	s.logPath = filepath.Join(dir, "review.jsonl")
	target := filepath.Join(s.dir, "target")
	if err := os.WriteFile(target, []byte("/etc/permwrap-disk-full-test"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The target path is read at run time, so the denial is the write's,
	// not the script's.
	r := s.run("sh", "-c", `for i in $(seq 1 300); do echo x > w$i; done; d=$(cat `+target+`); echo y > "$d" || echo refused`)
	if !strings.Contains(r.stdout, "refused") {
		t.Fatalf("the write to /etc was not refused: %q %q", r.stdout, r.stderr)
	}
	if n := strings.Count(r.stderr, "cannot write the review log"); n != 1 {
		t.Fatalf("stderr says the log cannot be written %d times, want once:\n%s", n, r.stderr)
	}
	if !strings.Contains(r.stderr, "no space left on device") {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("the log ends in half a record: …%q", b[max(0, len(b)-80):])
	}
	denied, dropped := false, 0
	for _, rec := range s.logRecords() {
		if rec["value"] == "/etc/permwrap-disk-full-test" && rec["action"] == "deny" {
			denied = true
		}
		if rec["event"] == "review_log.dropped" {
			dropped++
		}
	}
	if !denied {
		t.Fatal("the denial is not in the log")
	}
	// What was dropped is counted: in the log, or, when even the count
	// found no room, in permwrap's last line.
	if dropped == 0 && !strings.Contains(r.stderr, "routine record(s) were not written") {
		t.Fatalf("nothing says what was dropped; stderr:\n%s", r.stderr)
	}
}
