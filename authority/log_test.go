package authority

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/testutil"
)

func writeRequest(i int) Request {
	r := NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: fmt.Sprintf("/home/u/p/file-%d", i)})
	r.Process = Process{PID: 1000 + i, Comm: "bash", Exe: "/usr/bin/bash"}
	r.Access = "write"
	r.Rule = engine.Rule{Surface: engine.SurfaceWrite, Pattern: "/home/u/p/**", Action: engine.Ask, Origin: engine.OriginGlobal, Pos: engine.Position{File: "policy.jsonc", Line: 3, Column: 7}}
	return r
}

func TestLogConcurrentWritersAndHalfLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "permwrap", "review.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	// A previous run crashed mid-record.
	if err := os.WriteFile(path, []byte(`{"time":"2026-01-01T00:00:00Z","event":"permission_request.denied","requestId":"x"}`+"\n"+`{"time":"2026-01-01T00:00:00Z","event":"permission_req`), 0o600); err != nil {
		t.Fatal(err)
	}
	// Two Logs on one file, like two permwrap processes, 4 writers each.
	var logs []*Log
	for range 2 {
		l, err := OpenLog(path, LogOptions{Buffer: 8}) // small buffer: writers must block, not drop
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	const perWriter = 300
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := logs[w%2]
			for i := range perWriter {
				r := writeRequest(w*perWriter + i)
				switch i % 3 {
				case 0:
					l.Asked(r)
				case 1:
					l.Decided(r, true, Allowed(ByUser{Via: "dialog"}))
				default:
					l.Decided(r, false, FromRule(engine.Rule{Surface: engine.SurfaceWrite, Pattern: "/home/**", Action: engine.Deny, Origin: engine.OriginGlobal}))
				}
			}
		}()
	}
	wg.Wait()
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var lines, ours int
	for sc.Scan() {
		lines++
		if lines == 2 {
			continue // the crash's half line: the only one allowed to be broken
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d broken: %v: %q", lines, err, sc.Text())
		}
		if lines == 1 {
			continue
		}
		ours++
		if id, _ := m["requestId"].(string); !RequestID(id).Valid() {
			t.Fatalf("line %d: requestId %v", lines, m["requestId"])
		}
		if _, ok := m["decidedBy"].(map[string]any)["kind"]; !ok {
			t.Fatalf("line %d: decidedBy %v", lines, m["decidedBy"])
		}
	}
	if ours != 8*perWriter {
		t.Fatalf("%d records, want %d", ours, 8*perWriter)
	}

	// ReadLog skips exactly the half line.
	f.Seek(0, 0)
	n := 0
	broken, err := ReadLog(f, func(LogRecord) error { n++; return nil })
	if err != nil || broken != 1 || n != 8*perWriter+1 {
		t.Fatalf("ReadLog: %d records, %d broken, %v", n, broken, err)
	}
}

func TestLogCapsAndMasks(t *testing.T) {
	l, records := testLog(t)
	l.opts.FieldWidth = 64
	r := NewRequest(engine.Check{Surface: engine.SurfaceBash, Value: "GITHUB_TOKEN=ghp_abcdef123456 git push https://example.com/" + strings.Repeat("x", 500)})
	r.Process.Exe = "/usr/bin/git"
	l.Decided(r, false, Denied(ByRule{Surface: engine.SurfaceBash, Pattern: "git push *", Origin: engine.OriginGlobal}, "curl -H 'Authorization: Bearer sekrit' is not allowed"))
	l.send(l.encode("test.masking", fields{{"requestId", r.ID}, {"api_key", "hunter2"}, {"nested", map[string]any{"password": "pw", "ok": "fine"}}}), false)
	l.Decided(r, true, Denied(ByForwarded{Responder: "outer", Decision: ByAuthorizer{Name: "judge", Verdict: VerdictDeny, Reason: "saw API_TOKEN=abc123 in " + strings.Repeat("y", 300)}}, "no"))
	recs := records()
	inner := recs[2]["decidedBy"].(map[string]any)["decision"].(map[string]any)["reason"].(string)
	if strings.Contains(inner, "abc123") || len(inner) > 64 || !strings.HasSuffix(inner, "…") {
		t.Fatalf("nested decidedBy reason %q", inner)
	}
	value := recs[0]["value"].(string)
	if strings.Contains(value, "ghp_") || !strings.HasSuffix(value, "…") || len(value) > 64 {
		t.Fatalf("value %q", value)
	}
	if reason := recs[0]["reason"].(string); strings.Contains(reason, "sekrit") {
		t.Fatalf("reason %q", reason)
	}
	if recs[1]["api_key"] != maskedValue || recs[1]["nested"].(map[string]any)["password"] != maskedValue || recs[1]["nested"].(map[string]any)["ok"] != "fine" {
		t.Fatalf("masking %v", recs[1])
	}
}

func TestLogReadAllowsNone(t *testing.T) {
	var buf testutil.SyncBuffer
	l := NewLogWriter(&buf, LogOptions{ReadAllows: "none"})
	read := NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/usr/lib/x.so"})
	allowRead := FromRule(engine.Rule{Surface: engine.SurfaceRead, Pattern: "/usr/**", Action: engine.Allow, Origin: engine.OriginDefault})
	l.Decided(read, false, allowRead)                                                                                                 // omitted
	l.Decided(read, false, Denied(ByError{Reason: "unresolvable"}, "unresolvable"))                                                   // kept
	l.Decided(read, true, Allowed(ByUser{Via: "dialog"}))                                                                             // an ask's outcome: kept
	l.Decided(writeRequest(1), false, FromRule(engine.Rule{Action: engine.Allow, Surface: engine.SurfaceWrite, Pattern: "/home/**"})) // kept
	l.Close()
	got := strings.Count(string(buf.Bytes()), "\n")
	if got != 3 {
		t.Fatalf("%d records:\n%s", got, buf.Bytes())
	}
	if bytes.Contains(buf.Bytes(), []byte(`"permission_request.allowed","requestId":"`+string(read.ID))) {
		t.Fatal("plain read allow was written")
	}
}

// slowWriter blocks until released, so the log's queue fills.
type slowWriter struct {
	release chan struct{}
	testutil.SyncBuffer
}

func (s *slowWriter) Write(p []byte) (int, error) { <-s.release; return s.SyncBuffer.Write(p) }

func TestLogDropsOnlyReadAllows(t *testing.T) {
	w := &slowWriter{release: make(chan struct{})}
	l := NewLogWriter(w, LogOptions{Buffer: 2})
	read := NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/usr/lib/x.so"})
	allowRead := FromRule(engine.Rule{Surface: engine.SurfaceRead, Pattern: "/usr/**", Action: engine.Allow, Origin: engine.OriginDefault})
	for range 50 {
		l.Decided(read, false, allowRead) // never blocks
	}
	done := make(chan struct{})
	go func() {
		l.Decided(writeRequest(1), false, Denied(ByError{Reason: "x"}, "x")) // must be written, waiting if needed
		close(done)
	}()
	close(w.release)
	<-done
	l.Close()
	out := string(w.Bytes())
	if !strings.Contains(out, `"event":"review_log.dropped"`) || !strings.Contains(out, `"permission_request.denied"`) {
		t.Fatalf("log:\n%s", out)
	}
	var dropped, kept int
	ReadLog(strings.NewReader(out), func(r LogRecord) error {
		if r.Event == EventAllowed {
			kept++
		}
		if r.Event == EventDropped {
			var m struct{ Count int }
			json.Unmarshal(r.Raw, &m)
			dropped += m.Count
		}
		return nil
	})
	if kept+dropped != 50 || dropped == 0 {
		t.Fatalf("kept %d + dropped %d != 50", kept, dropped)
	}
}

func FuzzParseLogLine(f *testing.F) {
	f.Add([]byte(`{"time":"2026-12-01T06:00:00Z","event":"permission_request.denied","requestId":"0190a0b0-0000-7000-8000-000000000000","decidedBy":{"kind":"user","via":"dialog"}}`))
	f.Add([]byte(`{"time":"x"`))
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, err := ParseLogLine(line)
		if err == nil && rec.Event == "" {
			t.Fatal("accepted a record without event")
		}
		ReadLog(bytes.NewReader(line), func(LogRecord) error { return nil })
	})
}

func BenchmarkLogRecord(b *testing.B) {
	l := NewLogWriter(discard{}, LogOptions{})
	r := writeRequest(1)
	d := Allowed(ByUser{Via: "dialog"})
	b.ReportAllocs()
	for b.Loop() {
		l.Decided(r, true, d)
	}
	l.Close()
}

// BenchmarkLogRecordAllowedRead is the record of the supervisor's
// commonest call, a read allowed by a rule, encoded as the writer does.
func BenchmarkLogRecordAllowedRead(b *testing.B) {
	l := NewLogWriter(discard{}, LogOptions{})
	r, d := allowedRead()
	now := time.Now()
	var batch []byte
	b.ReportAllocs()
	for b.Loop() {
		// As the writer does: appended to the batch it writes.
		batch = l.appendRecord(batch[:0], now, EventAllowed, l.recordFields(r, d))
	}
	l.Close()
}

// allowedRead is the supervisor's commonest record: a read of a library
// allowed by the default policy's "*" rule, and its decision.
func allowedRead() (Request, Decision) {
	rule := engine.Rule{Surface: engine.SurfaceRead, Pattern: "*", Action: engine.Allow, Origin: engine.OriginDefault, Pos: engine.Position{File: "default.jsonc", Line: 20, Column: 7}}
	r := NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/usr/lib/x86_64-linux-gnu/libc.so.6"})
	r.Process = Process{PID: 4242, Comm: "git", Exe: "/usr/bin/git"}
	r.Access = "read"
	r.Rule = rule
	return r, FromRule(rule)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestLogAuditRecordsReadBack(t *testing.T) {
	var buf testutil.SyncBuffer
	l := NewLogWriter(&buf, LogOptions{ReadAllows: "none"})
	rule := engine.Rule{Surface: engine.SurfaceRead, Pattern: "~/.ssh/**", Action: engine.Deny, Origin: engine.OriginAudit, Pos: engine.Position{File: "strict.jsonc", Line: 20, Column: 7}}
	r := NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/home/u/.ssh/id_rsa"})
	r.Rule = rule
	// Even with readAllows "none", an audited read is written: it is not
	// an ordinary allow.
	l.Decided(r, false, FromRule(rule))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rec, err := ParseLogLine([]byte(string(buf.Bytes())))
	if err != nil {
		t.Fatalf("%v: %s", err, string(buf.Bytes()))
	}
	by, ok := rec.DecidedBy.(ByAudit)
	if rec.Event != EventWouldDeny || rec.Action != "allow" || !ok || by.Would != engine.Deny || by.Pattern != "~/.ssh/**" || by.Pos.Line != 20 {
		t.Fatalf("record: %+v (decidedBy %#v)\n%s", rec, rec.DecidedBy, string(buf.Bytes()))
	}
	if rec.Rule.Pattern != "~/.ssh/**" || rec.Rule.Action != engine.Deny || rec.Rule.Origin != engine.OriginAudit || rec.Rule.Pos.File != "strict.jsonc" {
		t.Fatalf("rule read back: %+v", rec.Rule)
	}
}

// Every record of a log opened with a run id carries it, and reads back;
// without one, records have no "run".
func TestLogRunID(t *testing.T) {
	for _, run := range []string{"01a24b99-69bd-7346-97b9-bd13b2132388", ""} {
		var buf testutil.SyncBuffer
		l := NewLogWriter(&buf, LogOptions{Run: run})
		rule := engine.Rule{Surface: engine.SurfaceWrite, Pattern: "*", Action: engine.Ask, Origin: engine.OriginAudit}
		r := NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: "/home/u/x"})
		r.Rule = rule
		l.Decided(r, false, FromRule(rule))
		l.SessionRules(nil)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(buf.Bytes())), "\n")
		if len(lines) != 2 {
			t.Fatalf("%d records:\n%s", len(lines), buf.Bytes())
		}
		for _, line := range lines {
			rec, err := ParseLogLine([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			if rec.Run != run || strings.Contains(line, `"run"`) != (run != "") {
				t.Fatalf("run %q: read back %q from %s", run, rec.Run, line)
			}
		}
	}
}

// A log written for a nested permwrap's subtree (Responder) records every
// decision as forwarded from the node that decided, with the deciding
// provenance inside and the node named; ParseLogLine reads it back.
func TestLogForwardedForNode(t *testing.T) {
	var buf bytes.Buffer
	l := NewLogWriter(&buf, LogOptions{Responder: "root"})
	r := NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: "/w/x"})
	r.Node = "reviewer#3"
	r.Rule = engine.Rule{Surface: engine.SurfaceWrite, Pattern: "/w/*", Action: engine.Ask, Origin: engine.OriginGlobal}
	l.Asked(r)
	l.Decided(r, true, Allowed(ByAuthorizer{Name: "judge", Verdict: VerdictAllow}))
	l.Close()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("records: %q", buf.String())
	}
	for i, line := range lines {
		rec, err := ParseLogLine([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		f, ok := rec.DecidedBy.(ByForwarded)
		if !ok || f.Responder != "root" || f.Node != "reviewer#3" || rec.Node != "reviewer#3" || rec.RequestID != r.ID {
			t.Fatalf("record %d: %s", i, line)
		}
		inner := []string{"rule", "authorizer"}[i]
		if f.Decision == nil || f.Decision.Kind() != inner {
			t.Errorf("record %d: forwarded decision %v, want %s", i, f.Decision, inner)
		}
	}
	if ev := OutcomeEvent(true, Allowed(ByAuthorizer{Name: "judge", Verdict: VerdictAllow})); !strings.Contains(lines[1], string(ev)) {
		t.Errorf("the outcome event is the decision's, not the wrapper's: %s", lines[1])
	}
}

// Nesting events are records like any other: a time, an event, a request
// id, and for a failure the reason as an error's provenance.
func TestLogNestingEvents(t *testing.T) {
	var buf bytes.Buffer
	l := NewLogWriter(&buf, LogOptions{})
	l.Nesting("registered", "pi#1", "pi --mode json", 42, nil)
	l.Nesting("refused", "", "", 43, errors.New("nesting deeper than 16 levels"))
	l.Close()
	var got []LogRecord
	if _, err := ReadLog(&buf, func(r LogRecord) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Event != "nesting.registered" || got[0].Node != "pi#1" || got[0].PID != 42 || got[0].RequestID == "" {
		t.Fatalf("records: %+v", got)
	}
	if e, ok := got[1].DecidedBy.(ByError); !ok || !strings.Contains(e.Reason, "16 levels") {
		t.Fatalf("refusal: %+v", got[1])
	}
}

// TestLogRoutineRecordsWaitForCompany: a file log holds the allows a rule
// made (routine) for up to routineDelay so a busy tree's records go out
// in few writes, but a record that must be seen at once (a denial) is
// written without that wait, together with every routine record queued
// before it and in order; Close writes what is still held.
func TestLogRoutineRecordsWaitForCompany(t *testing.T) {
	path := filepath.Join(t.TempDir(), "review.jsonl")
	l, err := OpenLog(path, LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	allow := FromRule(engine.Rule{Surface: engine.SurfaceWrite, Pattern: "/home/**", Action: engine.Allow, Origin: engine.OriginGlobal})
	deny := FromRule(engine.Rule{Surface: engine.SurfaceWrite, Pattern: "/home/**", Action: engine.Deny, Origin: engine.OriginGlobal})
	values := func() []string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if line == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("broken line %q: %v", line, err)
			}
			out = append(out, fmt.Sprint(m["event"], " ", m["value"]))
		}
		return out
	}
	waitFor := func(n int) []string {
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := values()
			if len(got) >= n || time.Now().After(deadline) {
				return got
			}
			time.Sleep(time.Millisecond)
		}
	}

	// Routine records alone are written within about routineDelay.
	l.Decided(writeRequest(1), false, allow)
	l.Decided(writeRequest(2), false, allow)
	got := waitFor(2)
	want := []string{"permission_request.allowed /home/u/p/file-1", "permission_request.allowed /home/u/p/file-2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("routine records: %q, want %q", got, want)
	}

	// A denial takes the routine records queued before it along, in order.
	l.Decided(writeRequest(3), false, allow)
	l.Decided(writeRequest(4), false, deny)
	got = waitFor(4)
	want = append(want, "permission_request.allowed /home/u/p/file-3", "permission_request.denied /home/u/p/file-4")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a denial: %q, want %q", got, want)
	}

	// Close writes what is held, at once.
	for i := 5; i < 8; i++ {
		l.Decided(writeRequest(i), false, allow)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got = values(); len(got) != 7 || got[6] != "permission_request.allowed /home/u/p/file-7" {
		t.Fatalf("after Close: %q", got)
	}
}

// appendJSONString copies plain ASCII itself; whatever it is given, the
// bytes must be encoding/json's.
func TestAppendJSONStringIsEncodingJSON(t *testing.T) {
	cases := []string{"", "/usr/lib/x86_64-linux-gnu/libc.so.6", "a b~c", "\x7f", "é", "\u2028", "\xff\xfe", "<script>&", `"quoted"`, `back\slash`, "tab\there", "nl\n", "\x00"}
	for c := 0; c < 256; c++ {
		cases = append(cases, string([]byte{byte(c)}), "x"+string([]byte{byte(c)})+"y")
	}
	for _, s := range cases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString([]byte("prefix"), s); string(got) != "prefix"+string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got[len("prefix"):], want)
		}
	}
}

// BenchmarkLogDecidedAllowedRead is what a supervisor worker pays to log
// a read allowed by a rule, the commonest record: Decided up to the
// queue (the writer goroutine encodes it meanwhile). The queue is large
// enough that nothing is dropped while it runs.
func BenchmarkLogDecidedAllowedRead(b *testing.B) {
	l := NewLogWriter(discard{}, LogOptions{Buffer: 1 << 20})
	r, d := allowedRead()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n++; n == 1<<19 {
			b.StopTimer()
			l.Close()
			l = NewLogWriter(discard{}, LogOptions{Buffer: 1 << 20})
			n = 0
			b.StartTimer()
		}
		l.Decided(r, false, d)
	}
	b.StopTimer()
	if l.dropped.Load() != 0 {
		b.Fatalf("%d records dropped: the benchmark measured dropping", l.dropped.Load())
	}
	l.Close()
}

// TestLogRuleFieldEncoding: a record's rule, cached by the rule itself,
// is encoded exactly as the rule's JSON form through sanitize (capped,
// masked), on the first record and on every later one.
func TestLogRuleFieldEncoding(t *testing.T) {
	l := NewLogWriter(discard{}, LogOptions{FieldWidth: 64})
	defer l.Close()
	rules := []engine.Rule{
		{Surface: engine.SurfaceRead, Pattern: "*", Action: engine.Allow, Origin: engine.OriginDefault, Pos: engine.Position{File: "default.jsonc", Line: 20, Column: 7}},
		{Surface: engine.SurfaceWrite, Pattern: "/srv/" + strings.Repeat("x", 200) + "/**", Action: engine.Deny, Origin: engine.OriginGlobal, Pos: engine.Position{File: "policy.jsonc", Line: 3, Column: 5}},
		{Surface: engine.SurfaceBash, Pattern: "curl -H 'Authorization: Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789' *", Action: engine.Ask, Origin: engine.OriginSession},
		{Surface: engine.SurfaceRead, Pattern: "~/.ssh/**", Origin: engine.OriginGlobal},
	}
	for _, rule := range rules {
		r := NewRequest(engine.Check{Surface: rule.Surface, Value: "/x"})
		r.Rule = rule
		want := `"rule":` + string(l.sanitize("rule", ruleToJSON(rule)))
		for i := range 2 {
			line := string(l.encodeAt(time.Now(), EventAllowed, l.requestFields(r)))
			if !strings.Contains(line, want) {
				t.Errorf("record %d of rule %v:\n%s\nwant it to hold\n%s", i, rule, line, want)
			}
		}
	}
	// No rule: no rule field, as before.
	r := NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/x"})
	if line := string(l.encodeAt(time.Now(), EventAllowed, l.requestFields(r))); strings.Contains(line, `"rule"`) {
		t.Errorf("a record without a rule has one: %s", line)
	}
}

func TestLogRecordsCovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "review.jsonl")
	l, err := OpenLog(path, LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := writeRequest(1)
	r.Covers = []string{"writes into /srv/repo.git (the push's remote)"}
	l.Decided(r, true, Allowed(ByUser{Via: "dialog"}))
	l.Decided(r, true, Denied(ByUser{Via: "dialog"}, "no"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("records: %q", lines)
	}
	var approved, rejected map[string]any
	if json.Unmarshal([]byte(lines[0]), &approved) != nil || json.Unmarshal([]byte(lines[1]), &rejected) != nil {
		t.Fatalf("records: %q", lines)
	}
	if c, _ := approved["covers"].([]any); len(c) != 1 || c[0] != r.Covers[0] {
		t.Errorf("approval record's covers: %v", approved["covers"])
	}
	if _, ok := rejected["covers"]; ok {
		t.Errorf("a rejection says what it covers: %v", rejected["covers"])
	}
}

// BenchmarkLogDecidedAllowedReadSummary is BenchmarkLogDecidedAllowedRead
// with readAllows "summary" (the default): what a supervisor worker pays
// to hand an allowed read to the writer's summary of its process.
func BenchmarkLogDecidedAllowedReadSummary(b *testing.B) {
	l := NewLogWriter(discard{}, LogOptions{Buffer: 1 << 20, ReadAllows: "summary"})
	r, d := allowedRead()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n++; n == 1<<19 {
			b.StopTimer()
			l.Close()
			l = NewLogWriter(discard{}, LogOptions{Buffer: 1 << 20, ReadAllows: "summary"})
			n = 0
			b.StartTimer()
		}
		l.Decided(r, false, d)
	}
	b.StopTimer()
	if l.dropped.Load() != 0 {
		b.Fatalf("%d reads dropped: the benchmark measured dropping", l.dropped.Load())
	}
	l.Close()
}
