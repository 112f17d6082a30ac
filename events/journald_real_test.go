package events

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/testutil"
)

const journaldBin = "/lib/systemd/systemd-journald"

// TestRealJournald sends records to a real systemd-journald, started
// for the test in a journal namespace of its own (its sockets under
// /run/systemd/journal.NS, its files under /var/log/journal/ID.NS or /run/log/journal/ID.NS, removed after: the
// machine's journal is not touched), and reads them back with
// journalctl. Skipped where systemd-journald is not installed.
func TestRealJournald(t *testing.T) {
	if _, err := os.Stat(journaldBin); err != nil {
		t.Skipf("no %s: %v", journaldBin, err)
	}
	jctl, err := exec.LookPath("journalctl")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs journalctl and root (journald namespaces live under /run)")
	}
	ns := "permwrap-test-" + strconv.Itoa(os.Getpid())
	d := exec.Command(journaldBin, ns)
	d.Env = append(os.Environ(), "SYSTEMD_LOG_TARGET=console")
	var dout testutil.SyncBuffer
	d.Stdout, d.Stderr = &dout, &dout
	if err := d.Start(); err != nil {
		t.Skipf("starting systemd-journald: %v", err)
	}
	id, _ := os.ReadFile("/etc/machine-id")
	t.Cleanup(func() {
		d.Process.Kill()
		d.Wait()
		os.RemoveAll("/run/systemd/journal." + ns)
		for _, dir := range []string{"/run/log/journal", "/var/log/journal"} {
			os.RemoveAll(filepath.Join(dir, strings.TrimSpace(string(id))+"."+ns))
		}
	})
	sock := "/run/systemd/journal." + ns + "/socket"
	deadline := time.Now().Add(testutil.Scale(10 * time.Second))
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Skipf("systemd-journald made no socket at %s:\n%s", sock, dout.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	line := denialLine(t)
	disp := newDispatcher([]deliverer{newJournald(JournaldConfig{Socket: sock})}, 16, FlushBound)
	disp.Records(append(line, '\n'))
	if dropped := disp.Close(); len(dropped) != 0 {
		t.Fatalf("dropped %v", dropped)
	}
	// A large entry: the memfd path.
	j := newJournald(JournaldConfig{Socket: sock})
	big := strings.Repeat("y", 1<<20)
	if err := j.send(context.Background(), EncodeJournal([][2]string{{"MESSAGE", "permwrap: big"}, {"SYSLOG_IDENTIFIER", "permwrap"}, {"PERMWRAP_BIG", big}})); err != nil {
		t.Fatal(err)
	}
	j.close()

	var entries []map[string]any
	for {
		out, _ := exec.Command(jctl, "--namespace="+ns, "-t", "permwrap", "-o", "json", "--all", "--no-pager").Output()
		entries = entries[:0]
		for _, l := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
			var e map[string]any
			if json.Unmarshal(l, &e) == nil {
				entries = append(entries, e)
			}
		}
		if len(entries) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(entries) != 2 {
		t.Fatalf("journalctl found %d entries, want 2; journald said:\n%s", len(entries), dout.String())
	}
	e := entries[0]
	want := map[string]string{
		"PRIORITY": "4", "PERMWRAP_EVENT": "permission_request.denied", "PERMWRAP_SURFACE": "write",
		"PERMWRAP_VALUE": "/etc/x\nsecond line", "PERMWRAP_RECORD": string(line), "PERMWRAP_COMMAND": "GITHUB_TOKEN=*** git push",
	}
	for k, v := range want {
		if got := journalValue(e[k]); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if m := journalValue(e["MESSAGE"]); !strings.HasPrefix(m, "permwrap: denied write") {
		t.Errorf("MESSAGE %q", m)
	}
	if got := journalValue(entries[1]["PERMWRAP_BIG"]); got != big {
		t.Errorf("the big entry's field: %d bytes, want %d", len(got), len(big))
	}
}

// journalValue is a field of journalctl -o json: a string, or an array
// of bytes for a value that is not printable text.
func journalValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		b := make([]byte, len(x))
		for i, c := range x {
			f, _ := c.(float64)
			b[i] = byte(f)
		}
		return string(b)
	}
	return ""
}
