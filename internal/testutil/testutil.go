// Package testutil holds the helpers several packages' tests had copied:
// a buffer safe to write from another goroutine, a pseudo-terminal whose
// screen a test reads, a tmux session's commands, the review log's
// records, and where the temporary directories are. Only tests import
// it (TestOnlyTestsImportTestutil); machine features a test needs are
// internal/kerneltest's.
package testutil

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// SyncBuffer is a bytes.Buffer safe to read while another goroutine
// writes it (a log's writer, a follower).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Bytes is a copy of what was written so far.
func (s *SyncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// Reset forgets what was written.
func (s *SyncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}

// PTY is a pseudo-terminal of rows × cols whose master side a goroutine
// reads into a buffer: Text is all a program on the slave side showed.
// The test writes the person's keys to Master.
type PTY struct {
	Master, Slave *os.File
	shown         SyncBuffer
}

// OpenPTY opens a PTY, closed when the test ends; no pseudo-terminal
// skips the test (or fails it, under PERMWRAP_REQUIRE_KERNEL=1).
func OpenPTY(t testing.TB, rows, cols uint16) *PTY {
	t.Helper()
	m, s, err := pty.Open()
	kerneltest.Need(t, "a pseudo-terminal", err)
	if err := pty.Setsize(m, &pty.Winsize{Rows: rows, Cols: cols}); err != nil {
		m.Close()
		s.Close()
		t.Fatal(err)
	}
	p := &PTY{Master: m, Slave: s}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			p.shown.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { m.Close(); s.Close() })
	return p
}

// Text is everything shown so far, escape sequences and all.
func (p *PTY) Text() string { return p.shown.String() }

// Reset forgets what was shown.
func (p *PTY) Reset() { p.shown.Reset() }

// ShellQuote quotes argv as one sh command line.
func ShellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// Tmux runs tmux on the server at socket, failing t when tmux does, and
// returns its output. A tmux command that does not return within
// Scale(30 seconds) (a server that stopped answering) is killed and fails
// t, so no terminal test can hang on one.
func Tmux(t testing.TB, socket string, args ...string) string {
	t.Helper()
	bound := Scale(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, "tmux", append([]string{"-S", socket}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	switch {
	case ctx.Err() != nil:
		t.Fatalf("tmux %v did not return in %v (the tmux server stopped answering)\n%s", args, bound, out)
	case err != nil:
		t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// ParseRecords parses a JSON-lines log (the review log, a side log):
// every line must be one JSON record, or the test fails naming the log.
func ParseRecords(t testing.TB, name string, b []byte) []map[string]any {
	t.Helper()
	var recs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: a line does not parse: %v\n%s", name, err, sc.Bytes())
		}
		recs = append(recs, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return recs
}

// ReadRecords is ParseRecords of the file at path; a file that cannot be
// read fails the test.
func ReadRecords(t testing.TB, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("review log %s: %v", path, err)
	}
	return ParseRecords(t, "review log "+path, b)
}

// UnderTemp reports a path beneath a directory the default policy allows
// writes in wholesale (/tmp, /var/tmp, /dev/shm, $TMPDIR): a home there
// would hide every false denial about the home.
func UnderTemp(p string) bool {
	for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm", os.TempDir()} {
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// HomeBase makes a directory for a realistic home, removed when the test
// ends: under $env, /home, or beside (the directory beside the
// repository), the first that is writable and not beneath a temporary
// directory (UnderTemp), named prefix plus a random part, mode 0755.
func HomeBase(t testing.TB, env, prefix, beside string) string {
	t.Helper()
	for _, cand := range []string{os.Getenv(env), "/home", beside} {
		if cand == "" {
			continue
		}
		real, err := filepath.EvalSymlinks(cand)
		if err != nil || UnderTemp(real) {
			continue
		}
		d, err := os.MkdirTemp(real, prefix)
		if err != nil {
			continue
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	t.Fatalf("no writable directory outside /tmp and /var/tmp for the home (set %s)", env)
	return ""
}

// Scale stretches a test's wait for something that takes wall-clock time
// (a program starting, a screen settling, a build) by
// $PERMWRAP_TEST_TIMEOUT_SCALE (a number ≥ 1; default 1), so a busy
// machine (2 vCPUs shared with another build) can give the tests room
// without editing them. ./scripts/test sets it. Only waits are scaled:
// a test that passes is no slower.
func Scale(d time.Duration) time.Duration {
	f, err := strconv.ParseFloat(os.Getenv("PERMWRAP_TEST_TIMEOUT_SCALE"), 64)
	if err != nil || !(f > 1) || f > 100 {
		return d
	}
	return time.Duration(float64(d) * f)
}

// GoBuild runs `go build -o out args...` in dir, bounded by
// Scale(10 minutes): a build that does not finish (a machine too busy,
// a module download that never answers) fails the test saying which
// build and why, instead of hanging it until go test's -timeout ends the
// whole package with a goroutine dump.
func GoBuild(t testing.TB, dir, out string, args ...string) {
	t.Helper()
	goTool := kerneltest.Tool(t, "go")
	bound := Scale(10 * time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	argv := append([]string{"build", "-o", out}, args...)
	cmd := exec.CommandContext(ctx, goTool, argv...)
	cmd.Dir = dir
	cmd.WaitDelay = 10 * time.Second
	b, err := cmd.CombinedOutput()
	switch {
	case ctx.Err() != nil:
		t.Fatalf("go %s (in %s) did not finish in %v and was killed: the machine is too busy (raise PERMWRAP_TEST_TIMEOUT_SCALE) or a module download hangs (run `go mod download` first)\n%s",
			strings.Join(argv, " "), dir, bound, b)
	case err != nil:
		t.Fatalf("go %s (in %s): %v\n%s", strings.Join(argv, " "), dir, err, b)
	}
}
