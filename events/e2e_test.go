package events

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/internal/testutil"
	"github.com/permwrap/permwrap/notify"
)

var (
	buildOnce sync.Once
	binPath   string
	binDir    string
)

// permwrapBin builds bin/permwrap once for this package's tests.
func permwrapBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, _ = os.MkdirTemp("", "permwrap-events-bin-")
		_, self, _, _ := runtime.Caller(0)
		testutil.GoBuild(t, filepath.Dir(filepath.Dir(self)), filepath.Join(binDir, "permwrap"), "./cmd/permwrap")
		binPath = filepath.Join(binDir, "permwrap")
	})
	if binPath == "" {
		t.Fatal("permwrap was not built")
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// TestRunSendsEventsToOTLP: a real permwrap run with OTEL_LOGS_EXPORTER
// set sends the review log's records to a local OTLP/HTTP receiver, in
// both protocols: the same records (request ids, events), with the
// token on the command line masked as the review log masks it.
func TestRunSendsEventsToOTLP(t *testing.T) {
	f := notify.Probe()
	if f.UserNotif != notify.Yes {
		kerneltest.Skip(t, "seccomp user notification ("+f.UserNotif.String()+")")
	}
	if f.LandlockABI < 1 {
		kerneltest.Skip(t, "landlock")
	}
	bin := permwrapBin(t)
	for _, proto := range []string{ProtoProtobuf, ProtoJSON} {
		t.Run(strings.ReplaceAll(proto, "/", "-"), func(t *testing.T) {
			base := testutil.HomeBase(t, "PERMWRAP_E2E_DIR", "permwrap-events-", "/var/lib")
			home, ws, cfg := filepath.Join(base, "home"), filepath.Join(base, "home", "ws"), filepath.Join(base, "cfg")
			for _, d := range []string{ws, cfg} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			logPath := filepath.Join(base, "review.jsonl")
			rc := newReceiver(t)
			// A push (asked, nobody to answer: denied) whose command line
			// holds a token in a URL, and a write outside the workspace.
			script := "git push https://user:" + testSecret + "@example.invalid/r.git main; echo x > " + filepath.Join(base, "outside.txt") + "; true"
			cmd := exec.Command(bin, "--config-dir", cfg, "--log", logPath, "--workspace", ws, "--", "sh", "-c", script)
			cmd.Dir = ws
			cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "OTEL_LOGS_EXPORTER=otlp",
				"OTEL_EXPORTER_OTLP_ENDPOINT=" + rc.srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=" + proto,
				"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20e2e-token", "OTEL_SERVICE_NAME=permwrap-e2e"}
			start := time.Now()
			out, err := cmd.CombinedOutput()
			t.Logf("permwrap: %v in %v\n%s", err, time.Since(start), out)
			if strings.Contains(string(out), "e2e-token") {
				t.Error("the header's value was printed")
			}
			logged := testutil.ReadRecords(t, logPath)
			recs := rc.records()
			if len(recs) == 0 {
				t.Fatalf("the receiver got nothing; the review log has %d records", len(logged))
			}
			// Every logged record was sent, with its fields.
			sent := map[string]map[string]string{}
			for _, lr := range recs {
				a := attrs(lr)
				sent[a["permwrap.request_id"]+" "+a["permwrap.event"]] = a
			}
			var denied, token bool
			for _, r := range logged {
				id, _ := r["requestId"].(string)
				ev, _ := r["event"].(string)
				a, ok := sent[id+" "+ev]
				if !ok {
					t.Errorf("logged but not sent: %s %s", ev, id)
					continue
				}
				if s, _ := r["surface"].(string); a["permwrap.surface"] != s {
					t.Errorf("%s %s: surface %q, logged %q", ev, id, a["permwrap.surface"], s)
				}
				if v, _ := r["value"].(string); a["permwrap.value"] != v {
					t.Errorf("%s %s: value %q, logged %q", ev, id, a["permwrap.value"], v)
				}
				denied = denied || strings.Contains(ev, "denied") || strings.Contains(ev, "rejected")
				if strings.Contains(a["permwrap.value"], "https://user:***@example.invalid") && strings.Contains(a["permwrap.record"], "https://user:***@example.invalid") {
					token = true
				}
			}
			if len(recs) != len(logged) {
				t.Errorf("sent %d records, logged %d", len(recs), len(logged))
			}
			if !denied {
				t.Error("no denial among the records")
			}
			if !token {
				t.Error("no record holds the masked token (https://user:***@…)")
			}
			for _, b := range rc.raw {
				if strings.Contains(string(b), testSecret) {
					t.Error("the token reached the collector unmasked")
				}
			}
			rc.mu.Lock()
			if h := rc.headers[0].Get("Authorization"); h != "Bearer e2e-token" {
				t.Errorf("Authorization %q", h)
			}
			rc.mu.Unlock()
		})
	}
}

// TestRunWithDeadCollector: a real run whose collector refuses every
// connection ends (within the flush bound, checked generously), tells
// the person what was not sent, and writes events.dropped last in the
// review log, which holds every record.
func TestRunWithDeadCollector(t *testing.T) {
	f := notify.Probe()
	if f.UserNotif != notify.Yes {
		kerneltest.Skip(t, "seccomp user notification ("+f.UserNotif.String()+")")
	}
	bin := permwrapBin(t)
	base := testutil.HomeBase(t, "PERMWRAP_E2E_DIR", "permwrap-events-", "/var/lib")
	ws, cfg := filepath.Join(base, "ws"), filepath.Join(base, "cfg")
	os.MkdirAll(ws, 0o755)
	os.MkdirAll(cfg, 0o755)
	logPath := filepath.Join(base, "review.jsonl")
	cmd := exec.Command(bin, "--config-dir", cfg, "--log", logPath, "--workspace", ws, "--", "sh", "-c", "ls / >/dev/null; echo x > "+filepath.Join(base, "outside.txt")+"; true")
	cmd.Dir = ws
	cmd.Env = []string{"HOME=" + base, "PATH=/usr/bin:/bin", "OTEL_LOGS_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=" + refused(t)}
	start := time.Now()
	out, _ := cmd.CombinedOutput()
	took := time.Since(start)
	if limit := FlushBound + testutil.Scale(10*time.Second); took > limit {
		t.Errorf("the run took %v (bound %v)", took, limit)
	}
	if !strings.Contains(string(out), "record(s) were not sent (otlp ") {
		t.Errorf("the person was not told:\n%s", out)
	}
	logged := testutil.ReadRecords(t, logPath)
	if len(logged) < 2 {
		t.Fatalf("%d records", len(logged))
	}
	last := logged[len(logged)-1]
	sinks, _ := last["sinks"].(map[string]any)
	if last["event"] != "events.dropped" || sinks["otlp"] != float64(len(logged)-1) {
		t.Errorf("last record %v; %d records before it", last, len(logged)-1)
	}
}
