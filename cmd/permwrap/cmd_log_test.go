package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/testutil"
)

const logFixture = `{"time":"2026-12-01T06:00:00Z","event":"permission_request.denied","requestId":"0190a0b0-0000-7000-8000-000000000001","pid":10,"exe":"/usr/bin/bash","surface":"write","value":"/etc/hosts","action":"deny","decidedBy":{"kind":"rule","surface":"write","pattern":"/etc/**","origin":"global","position":"policy.jsonc:12:5"},"reason":"system files"}
{"time":"2026-12-01T06:00:01Z","event":"permission_request.asked","requestId":"0190a0b0-0000-7000-8000-000000000002","surface":"bash","value":"git push","action":"ask","decidedBy":{"kind":"rule","surface":"bash","pattern":"git *","origin":"global"}}
{"time":"2026-12-01T06:00:02Z","event":"authorizer_chain.resolved","requestId":"0190a0b0-0000-7000-8000-000000000002","links":[{"name":"judge","verdict":"defer"}],"terminal":"prompt","action":"allow","decidedBy":{"kind":"user","via":"dialog"}}
{"time":"2026-12-01T06:00:03Z","event":"permission_request.approved","requestId":"0190a0b0-0000-7000-8000-000000000002","surface":"bash","value":"git push","action":"allow","decidedBy":{"kind":"user","via":"dialog"}}
{"time":"2026-12-01T06:00:04Z","event":"permission_req
not json at all
{"time":"2026-12-01T07:00:00Z","event":"permission_request.rejected","requestId":"0190a0b0-0000-7000-8000-000000000003","surface":"write","value":"/home/u/project-old/x.go\u001b[2J","action":"deny","decidedBy":{"kind":"authorizer","name":"typo-path","verdict":"deny","reason":"did you mean /home/u/project/x.go?"},"reason":"did you mean /home/u/project/x.go?"}
{"time":"2026-12-01T07:00:01Z","event":"permission_request.timed_out","requestId":"0190a0b0-0000-7000-8000-000000000004","surface":"read","value":"/home/u/.ssh/id_rsa","action":"deny","decidedBy":{"kind":"unavailable","reason":"timed out waiting for confirmation"},"reason":"timed out waiting for confirmation"}
{"time":"2026-12-01T07:00:02Z","event":"permission_request.allowed","requestId":"0190a0b0-0000-7000-8000-000000000005","surface":"bash","value":"npm test","action":"allow","decidedBy":{"kind":"forwarded","responder":"outer","decision":{"kind":"session_approval","surface":"bash","pattern":"npm *"}},"node":"inner-1"}
`

func writeFixture(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "review.jsonl")
	if err := os.WriteFile(p, []byte(logFixture), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func runLog(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmdLog(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCmdLogReadable(t *testing.T) {
	time.Local = time.UTC
	p := writeFixture(t)
	code, out, errOut := runLog(t, "--file", p)
	want := `2026-12-01 06:00:00  denied     write  /etc/hosts  by rule write:/etc/** (policy.jsonc:12:5) — system files
2026-12-01 06:00:03  approved   bash   git push  by user (dialog)
2026-12-01 07:00:00  rejected   write  /home/u/project-old/x.go\x1b[2J  by authorizer typo-path (deny) — did you mean /home/u/project/x.go?
2026-12-01 07:00:01  timed out  read   /home/u/.ssh/id_rsa  asked; no answer in time
2026-12-01 07:00:02  allowed    bash   npm test  by forwarded from outer: session approval bash:npm * [node inner-1]
`
	if code != exitOK || out != want {
		t.Fatalf("exit %d\n got:\n%s\nwant:\n%s", code, out, want)
	}
	if errOut != "permwrap log: skipped 2 broken line(s)\n" {
		t.Fatalf("stderr %q", errOut)
	}
}

func TestCmdLogFilters(t *testing.T) {
	time.Local = time.UTC
	p := writeFixture(t)
	cases := []struct {
		args []string
		want []string // request id suffixes, in order
	}{
		{[]string{"--denied"}, []string{"001", "003", "004"}},
		{[]string{"--decided-by", "user"}, []string{"002"}},
		{[]string{"--decided-by", "forwarded"}, []string{"005"}},
		{[]string{"--denied", "--decided-by", "authorizer"}, []string{"003"}},
		{[]string{"--since", "2026-12-01T06:30:00Z"}, []string{"003", "004", "005"}},
		{[]string{"--json"}, []string{"001", "002", "002", "002", "003", "004", "005"}},
		{[]string{"--json", "--denied"}, []string{"001", "003", "004"}},
	}
	for _, c := range cases {
		code, out, _ := runLog(t, append([]string{"--file", p, "--json"}, c.args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d", c.args, code)
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line == "" {
				continue
			}
			i := strings.Index(line, `"requestId":"`)
			got = append(got, line[i+len(`"requestId":"`)+33:i+len(`"requestId":"`)+36])
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%v: got %v want %v", c.args, got, c.want)
		}
	}
}

func TestCmdLogSinceDuration(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"90m":                  now.Add(-90 * time.Minute),
		"2d":                   now.Add(-48 * time.Hour),
		"0.5d":                 now.Add(-12 * time.Hour),
		"2026-11-30T00:00:00Z": time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
	} {
		got, err := parseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"yesterday", "-5m", "d", "-1d", "5"} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCmdLogErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--decided-by", "martian"},
		{"--since", "soon"},
		{"extra"},
		{"--nope"},
	} {
		if code, _, errOut := runLog(t, args...); code != exitInternal || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	code, _, errOut := runLog(t, "--file", filepath.Join(t.TempDir(), "absent.jsonl"))
	if code != exitFailure || !strings.Contains(errOut, "no review log at") {
		t.Errorf("absent log: %d %q", code, errOut)
	}
}

func TestCmdLogFollowWithRealLog(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state", "review.jsonl")
	l, err := authority.OpenLog(p, authority.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := authority.NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: "/etc/passwd"})
	l.Decided(r, false, authority.FromRule(engine.Rule{Surface: engine.SurfaceWrite, Pattern: "/etc/**", Action: engine.Deny, Origin: engine.OriginHardGuard}))
	l.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var out, errb testutil.SyncBuffer
	done := make(chan int)
	go func() { done <- showLog(ctx, p, true, logFilter{denied: true}, false, &out, &errb) }()

	waitFor := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if strings.Contains(out.String(), want) {
				return
			}
		}
		t.Fatalf("follow never printed %q; got:\n%s", want, out.String())
	}
	waitFor("/etc/passwd")

	// A second permwrap appends while we follow.
	l2, err := authority.OpenLog(p, authority.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r2 := authority.NewRequest(engine.Check{Surface: engine.SurfaceBash, Value: "curl evil.example"})
	l2.Decided(r2, true, authority.Denied(authority.ByUser{Via: "dialog"}, "no network"))
	l2.Decided(authority.NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/ok"}), true, authority.Allowed(authority.ByUser{Via: "dialog"}))
	l2.Close()
	waitFor("curl evil.example  by user (dialog) — no network")
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errb.String())
	}
	if strings.Contains(out.String(), "/ok") {
		t.Fatal("--denied printed an approval")
	}
}

// A headless ask's denial names the rule that asked and says nobody could
// answer; a rule's denial names the rule with its action and place; an
// outcome written twice under one request id is shown once; a read
// summary is one line.
func TestCmdLogDeniedOneLinePerRequest(t *testing.T) {
	time.Local = time.UTC
	const headless = `{"time":"2026-12-01T06:00:00Z","event":"permission_request.rejected","requestId":"0190a0b0-0000-7000-8000-00000000000a","pid":7,"comm":"sh","surface":"write","access":"create","value":"/etc/foo","rule":{"surface":"write","pattern":"*","action":"ask","origin":"default","position":"default.jsonc:101:7"},"action":"deny","decidedBy":{"kind":"unavailable","reason":"confirmation unavailable"},"reason":"confirmation unavailable"}`
	const byRule = `{"time":"2026-12-01T06:00:01Z","event":"permission_request.denied","requestId":"0190a0b0-0000-7000-8000-00000000000b","pid":7,"surface":"write","value":"/etc/hosts","rule":{"surface":"write","pattern":"/etc/**","action":"deny","origin":"global","position":"policy.jsonc:12:5"},"action":"deny","decidedBy":{"kind":"rule","surface":"write","pattern":"/etc/**","origin":"global","position":"policy.jsonc:12:5"},"reason":"system files"}`
	const summary = `{"time":"2026-12-01T06:00:02Z","event":"permission_request.allowed_reads","requestId":"0190a0b0-0000-7000-8000-00000000000c","pid":42,"exe":"/usr/bin/rg","program":"rg","surface":"read","count":212,"since":"2026-12-01T06:00:01Z","dirs":[{"dir":"/usr/share/doc","count":180},{"dir":"/usr/share/man","count":30},{"dir":"/etc","count":1},{"dir":"/usr/lib","count":1}],"paths":["/usr/share/doc/a"],"rule":{"surface":"read","pattern":"*","action":"allow","origin":"default","position":"default.jsonc:20:7"},"action":"allow","decidedBy":{"kind":"rule","surface":"read","pattern":"*","origin":"default","position":"default.jsonc:20:7"}}`
	const writes = `{"time":"2026-12-01T06:00:02Z","event":"permission_request.allowed_writes","requestId":"0190a0b0-0000-7000-8000-00000000000e","pid":50,"processes":3,"exe":"/usr/lib/go/pkg/tool/linux_amd64/compile","program":"compile","surface":"write","count":96,"since":"2026-12-01T06:00:01Z","dirs":[{"dir":"/tmp/go-build1","count":96}],"accesses":{"create":96},"paths":["/tmp/go-build1/b001/_pkg_.a"],"rule":{"surface":"write","pattern":"/tmp/**","action":"allow","origin":"default","position":"default.jsonc:113:7"},"action":"allow","decidedBy":{"kind":"rule","surface":"write","pattern":"/tmp/**","origin":"default","position":"default.jsonc:113:7"}}`
	p := filepath.Join(t.TempDir(), "review.jsonl")
	const dropped = `{"time":"2026-12-01T06:00:03Z","event":"review_log.dropped","requestId":"0190a0b0-0000-7000-8000-00000000000d","count":412,"what":"records the log file refused (disk full, read-only or I/O error)","routine":412,"decidedBy":{"kind":"error","reason":"review log could not be written"}}`
	if err := os.WriteFile(p, []byte(headless+"\n"+byRule+"\n"+headless+"\n"+summary+"\n"+writes+"\n"+dropped+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runLog(t, "--file", p, "--denied")
	want := `2026-12-01 06:00:00  rejected   write  /etc/foo  asked by rule write:* (ask, default.jsonc:101:7); no one to answer (headless)
2026-12-01 06:00:01  denied     write  /etc/hosts  by rule write:/etc/** (deny, policy.jsonc:12:5) — system files
`
	if code != exitOK || out != want {
		t.Fatalf("--denied: exit %d\n got:\n%s\nwant:\n%s", code, out, want)
	}
	code, out, _ = runLog(t, "--file", p)
	if wantSum := "2026-12-01 06:00:02  allowed    read   212 reads by rg (pid 42): /usr/share/doc 180, /usr/share/man 30, /etc 1, … — by rule read:* (allow, default.jsonc:20:7)\n" +
		"2026-12-01 06:00:02  allowed    write  96 writes by compile (3 processes, the first pid 50): /tmp/go-build1 96 — by rule write:/tmp/** (allow, default.jsonc:113:7)\n" +
		"2026-12-01 06:00:03  missing    412 record(s) not written: records the log file refused (disk full, read-only or I/O error)\n"; code != exitOK || !strings.HasSuffix(out, wantSum) || strings.Count(out, "\n") != 5 {
		t.Fatalf("all: exit %d\n got:\n%s\nwant it to end in:\n%s", code, out, wantSum)
	}
}

// permwrap log reads the rotated files first, oldest first, and goes on
// when the current file is missing (rotated, not yet written again).
func TestCmdLogReadsRotatedFiles(t *testing.T) {
	time.Local = time.UTC
	dir := t.TempDir()
	p := filepath.Join(dir, "review.jsonl")
	rec := func(sec int) string {
		return fmt.Sprintf(`{"time":"2026-12-01T06:00:%02dZ","event":"permission_request.denied","requestId":"0190a0b0-0000-7000-8000-0000000000%02d","surface":"write","value":"/f%d","action":"deny","decidedBy":{"kind":"error","reason":"x"}}`+"\n", sec, sec, sec)
	}
	for name, sec := range map[string]int{p + ".2": 1, p + ".1": 2, p: 3} {
		if err := os.WriteFile(name, []byte(rec(sec)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, _ := runLog(t, "--file", p)
	if code != exitOK || !strings.Contains(out, "/f1") || strings.Index(out, "/f1") > strings.Index(out, "/f2") || strings.Index(out, "/f2") > strings.Index(out, "/f3") {
		t.Fatalf("exit %d, want /f1, /f2, /f3 in order:\n%s", code, out)
	}
	os.Remove(p)
	if code, out, _ = runLog(t, "--file", p); code != exitOK || strings.Count(out, "\n") != 2 {
		t.Fatalf("without the current file: exit %d\n%s", code, out)
	}
}

// --follow across rotations: every record is printed once, those the old
// file got just before it was rotated included.
func TestCmdLogFollowAcrossRotation(t *testing.T) {
	p := filepath.Join(t.TempDir(), "review.jsonl")
	l, err := authority.OpenLog(p, authority.LogOptions{RotateBytes: 8 << 10, Keep: 9})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb testutil.SyncBuffer
	done := make(chan int)
	go func() { done <- showLog(ctx, p, true, logFilter{denied: true}, false, &out, &errb) }()
	deny := authority.FromRule(engine.Rule{Surface: engine.SurfaceWrite, Pattern: "/etc/**", Action: engine.Deny, Origin: engine.OriginHardGuard})
	const chunks, per = 4, 20
	for c := range chunks {
		for i := range per {
			l.Decided(authority.NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: fmt.Sprintf("/etc/f-%d-%d", c, i)}), false, deny)
		}
		time.Sleep(2 * followPoll)
	}
	l.Close()
	if files := authority.RotatedLogs(p); len(files) < 3 {
		t.Fatalf("files %v: the log was not rotated", files)
	}
	for deadline := time.Now().Add(10 * time.Second); strings.Count(out.String(), "\n") < chunks*per && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	got := out.String()
	for c := range chunks {
		for i := range per {
			if n := strings.Count(got, fmt.Sprintf("/etc/f-%d-%d ", c, i)); n != 1 {
				t.Fatalf("/etc/f-%d-%d printed %d times:\n%s", c, i, n, got)
			}
		}
	}
}
