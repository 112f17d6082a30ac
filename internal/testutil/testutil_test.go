package testutil

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// No package's own code imports testutil, directly or through another:
// only tests do (go list's Deps leave out test files' imports).
func TestOnlyTestsImportTestutil(t *testing.T) {
	goTool := kerneltest.Tool(t, "go")
	const self = "github.com/permwrap/permwrap/internal/testutil"
	out, err := exec.Command(goTool, "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "github.com/permwrap/permwrap/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 10 {
		t.Fatalf("go list listed %d packages:\n%s", len(lines), out)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if f[0] == self {
			continue
		}
		for _, dep := range f[1:] {
			if dep == self {
				t.Errorf("%s imports %s, which is for tests only", f[0], self)
			}
		}
	}
}

func TestShellQuote(t *testing.T) {
	if got, want := ShellQuote([]string{"echo", "it's", "a b"}), `'echo' 'it'\''s' 'a b'`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestParseRecords(t *testing.T) {
	recs := ParseRecords(t, "log", []byte(`{"a":1}`+"\n"+`{"b":"x"}`+"\n"))
	if len(recs) != 2 || recs[0]["a"] != 1.0 || recs[1]["b"] != "x" {
		t.Fatalf("%v", recs)
	}
}

func TestUnderTemp(t *testing.T) {
	for p, want := range map[string]bool{"/tmp": true, "/tmp/x": true, "/tmpx": false, "/home/u": false, "/dev/shm/a": true} {
		if UnderTemp(p) != want {
			t.Errorf("UnderTemp(%q) = %v", p, !want)
		}
	}
}

func TestPTY(t *testing.T) {
	p := OpenPTY(t, 30, 100)
	if _, err := p.Slave.WriteString("hello\n"); err != nil {
		t.Fatal(err)
	}
	for range 500 {
		if strings.Contains(p.Text(), "hello") {
			p.Reset()
			if p.Text() != "" {
				t.Fatal("Reset kept the text")
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the master never read %q: %q", "hello", p.Text())
}

func TestScale(t *testing.T) {
	for _, c := range []struct {
		env  string
		want time.Duration
	}{
		{"", 10 * time.Second},
		{"3", 30 * time.Second},
		{"1.5", 15 * time.Second},
		{"0.5", 10 * time.Second}, // never shorter
		{"-2", 10 * time.Second},
		{"NaN", 10 * time.Second},
		{"lots", 10 * time.Second},
		{"1e9", 10 * time.Second}, // nonsense is ignored, not obeyed
	} {
		t.Setenv("PERMWRAP_TEST_TIMEOUT_SCALE", c.env)
		if got := Scale(10 * time.Second); got != c.want {
			t.Errorf("PERMWRAP_TEST_TIMEOUT_SCALE=%q: Scale(10s) = %v, want %v", c.env, got, c.want)
		}
	}
}
