package layout

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/permwrap/permwrap/"

// forbidden says, for a package (or a package and those beneath it, with
// a trailing "/..."), which packages it must not depend on, directly or
// not, and why.
var forbidden = []struct {
	pkg  string
	deps []string
	why  string
}{
	{"engine/...", []string{"notify/...", "supervisor/...", "forwarding", "authority", "internal/procfs", "golang.org/x/sys/unix"}, "the engine is pure: no kernel, no /proc, no authority"},
	{"engine/shell", []string{"engine"}, "shell analysis judges nothing: engine imports it, not the reverse"},
	{"authority", []string{"notify/...", "supervisor/...", "forwarding", "internal/procfs"}, "the authority knows nothing of the kernel"},
	{"notify/...", []string{"engine/...", "authority", "supervisor/...", "forwarding"}, "the seccomp boundary knows nothing of policy"},
	{"events", []string{"notify", "notify/pin", "supervisor/...", "forwarding", "authority"}, "decision events send what the review log wrote: they decide nothing, and know nothing of the seccomp boundary"},
	{"supervisor/terminal", []string{"supervisor"}, "the terminal is a room of its own"},
	{"supervisor/receive", []string{"supervisor"}, "receiving is a room of its own"},
	{"supervisor/egress", []string{"supervisor"}, "the egress proxy is a room of its own"},
	{"forwarding", []string{"supervisor/..."}, "nesting is a room of its own; supervisor adapts to it"},
	{"internal/procfs", []string{"..."}, "a leaf: the standard library only"},
}

// testOnly are packages production code must not import.
var testOnly = []string{"internal/testutil", "internal/kerneltest", "internal/bpftest"}

// TestPackageGraph: every rule of the package graph holds.
func TestPackageGraph(t *testing.T) {
	deps := packageDeps(t)
	if len(deps) < 20 {
		t.Fatalf("go list found only %d packages", len(deps))
	}
	for pkg, ds := range deps {
		for _, rule := range forbidden {
			if !matches(rule.pkg, pkg) {
				continue
			}
			for _, d := range ds {
				for _, f := range rule.deps {
					if matches(f, d) && d != pkg {
						t.Errorf("%s depends on %s: %s", pkg, d, rule.why)
					}
				}
			}
		}
		if strings.HasPrefix(pkg, "internal/") && isTestOnly(pkg) {
			continue
		}
		for _, d := range ds {
			if isTestOnly(d) {
				t.Errorf("%s (production) depends on %s, which only tests may use", pkg, d)
			}
		}
	}
}

// TestUnsafeOnlyInUnsafeFiles: unsafe is imported only by files named
// *_unsafe.go, and only in notify, notify/pin and notify/host.
func TestUnsafeOnlyInUnsafeFiles(t *testing.T) {
	root := repoRoot(t)
	files, err := filepath.Glob(filepath.Join(root, "*", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(root, "*", "*", "*.go"))
	files = append(files, more...)
	more, _ = filepath.Glob(filepath.Join(root, "*", "*", "*", "*.go"))
	files = append(files, more...)
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || strings.Contains(f, "/testdata/") {
			continue
		}
		seen++
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p != "unsafe" {
				continue
			}
			rel, _ := filepath.Rel(root, f)
			dir := filepath.Dir(rel)
			if !strings.HasSuffix(f, "_unsafe.go") || (dir != "notify" && dir != "notify/pin" && dir != "notify/host") {
				t.Errorf("%s imports unsafe: only notify's, pin's and host's *_unsafe.go files may", rel)
			}
		}
	}
	if seen < 100 {
		t.Fatalf("checked only %d files", seen)
	}
}

// TestMatches: the rules' patterns.
func TestMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, pkg string
		want         bool
	}{
		{"engine", "engine", true},
		{"engine", "engine/shell", false},
		{"engine/...", "engine/shell", true},
		{"engine/...", "engineer", false},
		{"...", "engine", true},
		{"...", "golang.org/x/sys/unix", false},
		{"golang.org/x/sys/unix", "golang.org/x/sys/unix", true},
	} {
		if got := matches(c.pattern, c.pkg); got != c.want {
			t.Errorf("matches(%q, %q) = %v", c.pattern, c.pkg, got)
		}
	}
}

// matches reports whether pkg (relative to the module, or a full import
// path outside it) is pattern, or beneath it for "X/..."; "..." alone is
// every package of the module.
func matches(pattern, pkg string) bool {
	if pattern == "..." {
		return !strings.Contains(strings.SplitN(pkg, "/", 2)[0], ".")
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

func isTestOnly(pkg string) bool {
	for _, p := range testOnly {
		if pkg == p {
			return true
		}
	}
	return false
}

// packageDeps are the module's packages and every package each depends
// on, the module's own relative to it, the rest as full import paths
// (standard library left out).
func packageDeps(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "./...")
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		var ds []string
		for _, d := range f[1:] {
			switch {
			case strings.HasPrefix(d, module):
				ds = append(ds, strings.TrimPrefix(d, module))
			case strings.Contains(strings.SplitN(d, "/", 2)[0], "."):
				ds = append(ds, d)
			}
		}
		m[pkg] = ds
	}
	return m
}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(self)))
}
