package authority

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/kerneltest"
)

// readAllowRequest is an allowed read of path by process pid.
func readAllowRequest(pid int, exe, path string) (Request, Decision) {
	rule := engine.Rule{Surface: engine.SurfaceRead, Pattern: "*", Action: engine.Allow, Origin: engine.OriginDefault, Pos: engine.Position{File: "default.jsonc", Line: 20, Column: 7}}
	r := NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: path})
	r.Process = Process{PID: pid, Exe: exe}
	r.Access = "read"
	r.Rule = rule
	return r, FromRule(rule)
}

func decidedRead(l *Log, pid int, exe, path string) {
	r, d := readAllowRequest(pid, exe, path)
	l.Decided(r, false, d)
}

// records parses every line of b, failing on a broken one.
func records(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("line %d broken: %v: %q", i+1, err, line)
		}
		out = append(out, m)
	}
	return out
}

func byEvent(recs []map[string]any, ev Event) []map[string]any {
	var out []map[string]any
	for _, m := range recs {
		if m["event"] == string(ev) {
			out = append(out, m)
		}
	}
	return out
}

// With readAllows "summary", a process's allowed reads are one record:
// its count, its top directories, its first distinct paths, the rule;
// writes, denials and asks stay one record each.
func TestLogSummarisesReads(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	l := NewLogWriter(lockedWriter{&mu, &buf}, LogOptions{ReadAllows: "summary"})
	for i := range 100 {
		dir := "/usr/share/doc/pkg"
		if i%4 == 0 {
			dir = "/usr/lib/x86_64-linux-gnu"
		}
		decidedRead(l, 7, "/usr/bin/rg", fmt.Sprintf("%s/f%d", dir, i%10))
	}
	for i := range 5 {
		// Three cat processes, interleaved: one summary for the program.
		decidedRead(l, 8+i%3, "/usr/bin/cat", fmt.Sprintf("/etc/f%d", i))
	}
	l.Decided(writeRequest(1), false, Allowed(ByRule{Surface: engine.SurfaceWrite, Pattern: "/home/u/p/**"}))
	l.Decided(writeRequest(2), false, Denied(ByError{Reason: "x"}, "x"))
	// A read a person's approval allowed is not routine: it keeps its
	// own record.
	approved, _ := readAllowRequest(9, "/usr/bin/cat", "/home/u/.aws/config")
	l.Decided(approved, false, Allowed(ByUser{Via: "script approval"}))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	recs := records(t, buf.Bytes())
	if n := len(byEvent(recs, EventAllowed)); n != 2 {
		t.Fatalf("%d allowed records, want 2 (the write, the approved read):\n%s", n, buf.Bytes())
	}
	if n := len(byEvent(recs, EventDenied)); n != 1 {
		t.Fatalf("%d denied records, want 1", n)
	}
	sums := byEvent(recs, EventAllowedReads)
	if len(sums) != 2 {
		t.Fatalf("%d summaries, want 2:\n%s", len(sums), buf.Bytes())
	}
	got := map[string]map[string]any{}
	for _, s := range sums {
		got[s["program"].(string)] = s
	}
	rg := got["rg"]
	if rg == nil || rg["count"] != 100.0 || rg["pid"] != 7.0 || rg["exe"] != "/usr/bin/rg" {
		t.Fatalf("rg summary %v", rg)
	}
	dirs := rg["dirs"].([]any)
	if d := dirs[0].(map[string]any); d["dir"] != "/usr/share/doc" || d["count"] != 75.0 {
		t.Fatalf("rg top directory %v, want /usr/share/doc 75", d)
	}
	if d := dirs[1].(map[string]any); d["dir"] != "/usr/lib/x86_64-linux-gnu" || d["count"] != 25.0 {
		t.Fatalf("rg second directory %v", d)
	}
	// The first 4 distinct paths, then the 4 read most recently (i = 96…99).
	if paths := fmt.Sprint(rg["paths"]); paths != "[/usr/lib/x86_64-linux-gnu/f0 /usr/share/doc/pkg/f1 /usr/share/doc/pkg/f2 /usr/share/doc/pkg/f3 /usr/lib/x86_64-linux-gnu/f6 /usr/share/doc/pkg/f7 /usr/share/doc/pkg/f8 /usr/share/doc/pkg/f9]" {
		t.Fatalf("rg paths %v", paths)
	}
	if rule := rg["rule"].(map[string]any); rule["pattern"] != "*" || rule["origin"] != "default" {
		t.Fatalf("rg rule %v", rule)
	}
	if by := rg["decidedBy"].(map[string]any); by["kind"] != "rule" {
		t.Fatalf("rg decidedBy %v", by)
	}
	if rg["processes"] != 1.0 {
		t.Fatalf("rg processes %v", rg["processes"])
	}
	if c := got["cat"]; c == nil || c["count"] != 5.0 || len(c["paths"].([]any)) != 5 || c["processes"] != 3.0 || c["pid"] != 8.0 {
		t.Fatalf("cat summary %v", c)
	}
	// Read back as a record.
	var rec LogRecord
	ReadLog(bytes.NewReader(buf.Bytes()), func(r LogRecord) error {
		if r.Event == EventAllowedReads && r.Program == "rg" {
			rec = r
		}
		return nil
	})
	if rec.Count != 100 || len(rec.Dirs) != 2 || rec.Rule.Pattern != "*" {
		t.Fatalf("read back: %+v", rec)
	}

	// "each": one record per read, as before.
	buf.Reset()
	l = NewLogWriter(lockedWriter{&mu, &buf}, LogOptions{ReadAllows: "each"})
	for i := range 10 {
		decidedRead(l, 7, "/usr/bin/rg", fmt.Sprintf("/x/%d", i))
	}
	l.Close()
	if recs := records(t, buf.Bytes()); len(byEvent(recs, EventAllowed)) != 10 || len(byEvent(recs, EventAllowedReads)) != 0 {
		t.Fatalf(`"each": %s`, buf.Bytes())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w lockedWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.b.Bytes()...)
}

// A process that stops reading gets its summary within about
// summaryIdle, without waiting for permwrap to exit.
func TestLogSummaryWrittenWhenProcessGoesQuiet(t *testing.T) {
	w := lockedWriter{&sync.Mutex{}, &bytes.Buffer{}}
	l := NewLogWriter(w, LogOptions{ReadAllows: "summary"})
	defer l.Close()
	for i := range 3 {
		decidedRead(l, 9, "/usr/bin/ls", fmt.Sprintf("/etc/%d", i))
	}
	deadline := time.Now().Add(summaryIdle + 5*time.Second)
	for time.Now().Before(deadline) {
		if recs := records(t, w.bytes()); len(recs) > 0 {
			if s := byEvent(recs, EventAllowedReads); len(s) != 1 || s[0]["count"] != 3.0 {
				t.Fatalf("records %v", recs)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no summary written while permwrap runs")
}

// flakySink fails every write while failing is set, taking nothing.
type flakySink struct {
	mu      sync.Mutex
	failing bool
	buf     bytes.Buffer
	tries   int
}

func (s *flakySink) write(b []byte, _ bool) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries++
	if s.failing {
		return 0, &os.PathError{Op: "write", Path: "/x/review.jsonl", Err: syscall.ENOSPC}
	}
	return s.buf.Write(b)
}
func (s *flakySink) close() error { return nil }
func (s *flakySink) set(failing bool) {
	s.mu.Lock()
	s.failing = failing
	s.mu.Unlock()
}
func (s *flakySink) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.buf.Bytes()...)
}

// When the file refuses records, decisions go on; routine records are
// dropped and counted, denials and asks are held and written first once
// the file takes records again, then a record of what was dropped; the
// person is told once.
func TestLogFailingFileKeepsAsksAndDenials(t *testing.T) {
	sink := &flakySink{failing: true}
	l := newLog(sink, LogOptions{ReadAllows: "summary"}, true, "")
	var said []string
	var mu sync.Mutex
	l.SetNotice(func(s string) { mu.Lock(); said = append(said, s); mu.Unlock() })
	allow := Allowed(ByRule{Surface: engine.SurfaceWrite, Pattern: "/home/u/p/**"})
	for i := range 20 {
		l.Decided(writeRequest(i), false, allow) // routine
	}
	l.Asked(writeRequest(100))
	l.Decided(writeRequest(100), true, Denied(ByUnavailable{Reason: ReasonUnavailable}, ReasonUnavailable))
	l.Decided(writeRequest(101), false, Denied(ByError{Reason: "x"}, "x"))
	for i := range 50 {
		decidedRead(l, 5, "/usr/bin/rg", fmt.Sprintf("/usr/share/%d", i))
	}
	// Let the writer try (and fail) a few times.
	waitUntil(t, func() bool { sink.mu.Lock(); defer sink.mu.Unlock(); return sink.tries >= 3 })
	if got := sink.bytes(); len(got) != 0 {
		t.Fatalf("a failing sink took %q", got)
	}
	mu.Lock()
	if len(said) != 1 || !strings.Contains(said[0], "cannot write the review log") || !strings.Contains(said[0], "no space left on device") {
		t.Fatalf("told the person %q, want one line naming the error", said)
	}
	mu.Unlock()

	sink.set(false)
	l.Decided(writeRequest(200), false, Denied(ByError{Reason: "y"}, "y"))
	if err := l.Close(); errors.Is(err, ErrUnwritten) {
		t.Fatalf("Close after the file recovered: %v (every record held was written)", err)
	}
	recs := records(t, sink.bytes())
	var evs []string
	for _, m := range recs {
		evs = append(evs, fmt.Sprint(m["event"], " ", m["value"]))
	}
	want := []string{
		"permission_request.asked /home/u/p/file-100",
		"permission_request.rejected /home/u/p/file-100",
		"permission_request.denied /home/u/p/file-101",
		"review_log.dropped <nil>",
		"permission_request.denied /home/u/p/file-200",
	}
	if len(evs) < len(want) || fmt.Sprint(evs[:len(want)]) != fmt.Sprint(want) {
		t.Fatalf("records after recovery:\n%s\nwant them to begin with\n%s", strings.Join(evs, "\n"), strings.Join(want, "\n"))
	}
	if d := recs[3]; d["routine"] == nil || d["routine"].(float64) < 20 {
		t.Fatalf("dropped record %v: want at least the 20 routine allows counted", d)
	}
	mu.Lock()
	if len(said) != 1 {
		t.Fatalf("told the person %d times: %q", len(said), said)
	}
	mu.Unlock()

	// A file that never recovers: Close says what was not written.
	sink = &flakySink{failing: true}
	l = newLog(sink, LogOptions{}, true, "")
	l.Decided(writeRequest(1), false, Denied(ByError{Reason: "x"}, "x"))
	l.Decided(writeRequest(2), false, allow)
	err := l.Close()
	if !errors.Is(err, ErrUnwritten) || !strings.Contains(err.Error(), "1 ask, answer or denial record(s) and 1 routine record(s)") {
		t.Fatalf("Close: %v", err)
	}
}

func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A short write (the disk filled mid-batch) is cut back: the file holds
// whole records only, and the records refused are handled as above.
func TestFileSinkCutsBackShortWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "review.jsonl")
	s, err := openFileSink(path, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if _, err := s.write([]byte("{\"a\":1}\n"), false); err != nil {
		t.Fatal(err)
	}
	full := true
	s.rawWrite = func(f *os.File, b []byte) (int, error) {
		if !full {
			return f.Write(b)
		}
		n, _ := f.Write(b[:len(b)/2])
		return n, syscall.ENOSPC
	}
	if _, err := s.write([]byte("{\"b\":2}\n{\"c\":3}\n"), false); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("short write: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "{\"a\":1}\n" {
		t.Fatalf("after a short write the file holds %q", got)
	}
	full = false
	if _, err := s.write([]byte("{\"d\":4}\n"), false); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "{\"a\":1}\n{\"d\":4}\n" {
		t.Fatalf("file %q", got)
	}
}

// Two logs on one file, like two permwrap processes, rotating it at a
// small size: every record is in exactly one file, whole, in the files
// RotatedLogs lists, and no file grew far past the size.
func TestLogRotatesSafelyAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "review.jsonl")
	const rotateAt = 16 << 10
	var logs []*Log
	for range 2 {
		l, err := OpenLog(path, LogOptions{RotateBytes: rotateAt, Keep: 90, Buffer: 8})
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	const per = 400
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				logs[w%2].Decided(writeRequest(w*per+i), false, Denied(ByError{Reason: "x"}, "x"))
			}
		}()
	}
	wg.Wait()
	for _, l := range logs {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	files := RotatedLogs(path)
	if len(files) < 3 {
		t.Fatalf("files %v: want the log rotated", files)
	}
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > rotateAt+maxBatch {
			t.Fatalf("%s: %d bytes", f, len(b))
		}
		for _, m := range records(t, b) {
			id := m["requestId"].(string)
			if seen[id] {
				t.Fatalf("record %s in two places", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != 4*per {
		t.Fatalf("%d records, want %d", len(seen), 4*per)
	}

	// Keep bounds the older files.
	dir := t.TempDir()
	path = filepath.Join(dir, "review.jsonl")
	l, err := OpenLog(path, LogOptions{RotateBytes: 4 << 10, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		l.Decided(writeRequest(i), false, Denied(ByError{Reason: "x"}, "x"))
		time.Sleep(2 * time.Millisecond) // a write each, not one batch of all
	}
	l.Close()
	if files := RotatedLogs(path); len(files) != 3 {
		t.Fatalf("Keep 2: files %v", files)
	}
	if _, err := os.Stat(path + ".3"); err == nil {
		t.Fatal("Keep 2 left review.jsonl.3")
	}
}

// A log file removed while permwrap runs is made again at its path, and
// the person is told once.
func TestLogFileRemovedWhileRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "review.jsonl")
	l, err := OpenLog(path, LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	var mu sync.Mutex
	l.SetNotice(func(s string) { mu.Lock(); said = append(said, s); mu.Unlock() })
	l.Decided(writeRequest(1), false, Denied(ByError{Reason: "x"}, "x"))
	waitUntil(t, func() bool { b, _ := os.ReadFile(path); return len(b) > 0 })
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	l.Decided(writeRequest(2), false, Denied(ByError{Reason: "x"}, "x"))
	l.Decided(writeRequest(3), false, Denied(ByError{Reason: "x"}, "x"))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if recs := records(t, b); len(recs) != 2 || recs[0]["value"] != "/home/u/p/file-2" {
		t.Fatalf("new file: %s", b)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) != 1 || !strings.Contains(said[0], "was removed") {
		t.Fatalf("told %q", said)
	}
}

// The case on a real filesystem: the log's directory is a 64 KB
// tmpfs, allowed reads (one record each) fill it, and a denial follows.
// The file holds whole records only; the person is told once; the denial
// is written in the room routine records may not take; the count of what
// was dropped follows as soon as there is room again.
func TestLogDiskFullTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		kerneltest.Skip(t, "root, to mount a 64 KB tmpfs")
	}
	dir := t.TempDir()
	kerneltest.Need(t, "a tmpfs mount", unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k,mode=0700"))
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 16<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "review.jsonl")
	l, err := OpenLog(path, LogOptions{ReadAllows: "each", RotateBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	var mu sync.Mutex
	l.SetNotice(func(s string) { mu.Lock(); said = append(said, s); mu.Unlock() })
	for i := range 2000 {
		decidedRead(l, 7, "/usr/bin/rg", fmt.Sprintf("/usr/share/doc/pkg-%d/README", i))
	}
	deny := writeRequest(1)
	deny.Check.Value = "/etc/passwd"
	l.Decided(deny, false, Denied(ByError{Reason: "system file"}, "system file"))
	waitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(said) > 0 })
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("the full file does not end in a whole record: …%q", b[max(0, len(b)-80):])
	}
	records(t, b) // every line whole
	mu.Lock()
	if !strings.Contains(said[0], "no space left on device") {
		t.Fatalf("told %q", said)
	}
	mu.Unlock()

	// The denial is written in the room kept for asks and denials, with
	// the disk still full of routine records.
	waitUntil(t, func() bool {
		b, _ := os.ReadFile(path)
		return len(byEvent(records(t, b), EventDenied)) == 1
	})

	// Room again: what was dropped is counted.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var recs []map[string]any
	waitUntil(t, func() bool {
		b, _ := os.ReadFile(path)
		recs = records(t, b)
		return len(byEvent(recs, EventDenied)) == 1 && len(byEvent(recs, EventDropped)) >= 1
	})
	if err := l.Close(); errors.Is(err, ErrUnwritten) {
		t.Fatalf("Close: %v", err)
	}
	b, _ = os.ReadFile(path)
	recs = records(t, b)
	var dropped int
	for _, d := range byEvent(recs, EventDropped) {
		n, _ := d["count"].(float64)
		dropped += int(n)
	}
	if kept := len(byEvent(recs, EventAllowed)); kept+dropped != 2000 || dropped == 0 {
		t.Fatalf("%d reads written + %d dropped != 2000", kept, dropped)
	}
	if byEvent(recs, EventDenied)[0]["value"] != "/etc/passwd" {
		t.Fatalf("denial %v", byEvent(recs, EventDenied)[0])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(said) != 1 {
		t.Fatalf("told the person %d times: %q", len(said), said)
	}
}

// A process that holds the log's lock (anyone who can open the lock
// file can) delays a write by lockWait at most: the record is written
// without the lock.
func TestLogLockHeldByAnother(t *testing.T) {
	path := filepath.Join(t.TempDir(), "review.jsonl")
	l, err := OpenLog(path, LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lf, err := os.Open(path + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	l.Decided(writeRequest(1), false, Denied(ByError{Reason: "x"}, "x"))
	waitUntil(t, func() bool { b, _ := os.ReadFile(path); return len(b) > 0 })
	if d := time.Since(start); d < lockWait/2 || d > lockWait+2*time.Second {
		t.Fatalf("written after %v with the lock held elsewhere, want about %v", d, lockWait)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// Writes a rule allowed beneath the scratch directories are summed up
// per process like reads, with their kinds; a write with one end
// outside them, a write elsewhere, and a write a person approved stay
// one record each; "each" keeps every one.
func TestLogSummarisesScratchWrites(t *testing.T) {
	scratch := func(i int, access string, paths ...string) Request {
		r := writeRequest(i)
		r.Process = Process{PID: 77, Exe: "/usr/lib/go/pkg/tool/linux_amd64/compile"}
		r.Check.Value = paths[0]
		r.Access = access
		if len(paths) > 1 {
			r.Paths = paths
		}
		return r
	}
	byRule := Allowed(ByRule{Surface: engine.SurfaceWrite, Pattern: "/tmp/**"})
	for _, mode := range []string{"summary", "each"} {
		var buf bytes.Buffer
		var mu sync.Mutex
		l := NewLogWriter(lockedWriter{&mu, &buf}, LogOptions{ReadAllows: "summary", ScratchWrites: mode,
			ScratchDirs: []string{"/tmp", "/home/u/.cache"}})
		for i := range 30 {
			l.Decided(scratch(i, "create", fmt.Sprintf("/tmp/go-build1/b%03d/_pkg_.a", i)), false, byRule)
		}
		l.Decided(scratch(30, "unlink", "/home/u/.cache/go-build/aa/x"), false, byRule)
		l.Decided(scratch(31, "rename", "/tmp/go-build1/out", "/home/u/p/bin/app"), false, byRule) // lands outside
		l.Decided(scratch(32, "create", "/tmpfoo/x"), false, byRule)                               // not beneath /tmp
		l.Decided(scratch(33, "create", "/tmp/asked"), false, Allowed(ByUser{Via: "script approval"}))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		recs := records(t, buf.Bytes())
		allowed, sums := byEvent(recs, EventAllowed), byEvent(recs, EventAllowedWrites)
		if mode == "each" {
			if len(allowed) != 34 || len(sums) != 0 {
				t.Fatalf("each: %d allowed, %d summaries, want 34 and 0", len(allowed), len(sums))
			}
			continue
		}
		if len(allowed) != 3 {
			t.Fatalf("%d allowed records, want 3 (the rename out, /tmpfoo, the approved):\n%s", len(allowed), buf.Bytes())
		}
		if len(sums) != 1 {
			t.Fatalf("%d write summaries, want 1:\n%s", len(sums), buf.Bytes())
		}
		sum := sums[0]
		if sum["count"] != 31.0 || sum["surface"] != "write" || sum["program"] != "compile" {
			t.Fatalf("summary %v", sum)
		}
		if acc := sum["accesses"].(map[string]any); acc["create"] != 30.0 || acc["unlink"] != 1.0 {
			t.Fatalf("accesses %v", acc)
		}
		if len(byEvent(recs, EventAllowedReads)) != 0 {
			t.Fatal("writes summed up as reads")
		}
	}
}
