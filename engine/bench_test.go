package engine

import (
	"fmt"
	"strings"
	"testing"
)

// policy200 builds a 200-rule policy shaped like a real one: directory
// trees, basename secrets, device files, exact paths, command prefixes.
func policy200(tb testing.TB) *Policy {
	tb.Helper()
	var b strings.Builder
	b.WriteString(`{"permission": {"*": "ask",`)
	b.WriteString(`"read": {"*": "allow"`)
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, `, "~/.secret%d/**": "ask", "*.key%d": "ask"`, i, i)
	}
	b.WriteString(`}, "write": {"*": "ask", "${WORKSPACE}/**": "allow"`)
	for i := 0; i < 30; i++ {
		fmt.Fprintf(&b, `, "~/.tool%d/**": "allow", "/srv/data%d/*/out/**": "deny", "/etc/conf%d.d/x[0-9].conf": "ask"`, i, i, i)
	}
	b.WriteString(`}, "bash": {"*": "allow"`)
	for i := 0; i < 25; i++ {
		fmt.Fprintf(&b, `, "tool%d push *": "ask", "tool%d * --force": "deny"`, i, i)
	}
	b.WriteString(`}}}`)
	p, _ := compile(tb, b.String())
	n := 0
	for s := range p.rules {
		n += p.rules[s].n
	}
	if n < 200 {
		tb.Fatalf("only %d rules", n)
	}
	return p
}

var sink Result

func BenchmarkEvaluate200(b *testing.B) {
	p := policy200(b)
	checks := []Check{
		{SurfaceWrite, "/home/u/src/proj/internal/engine/policy.go"}, // deep in the workspace
		{SurfaceWrite, "/srv/data29/x/out/file"},                     // late deny
		{SurfaceWrite, "/usr/local/lib/nothing/matches/here.so"},     // falls to `*`
		{SurfaceRead, "/home/u/.secret39/token"},
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sink = p.Evaluate(checks[i&3])
	}
}

func BenchmarkEvaluateBash200(b *testing.B) {
	p := policy200(b)
	lines := []string{"go test ./...", "tool24 push origin main", "tool3 commit --force", "git status --porcelain=v2 --untracked-files=all"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sink = p.Evaluate(Check{SurfaceBash, lines[i&3]})
	}
}

func BenchmarkDecidePath200(b *testing.B) {
	p := policy200(b)
	paths := []string{"/home/u/src/proj/go.mod", "/etc/conf7.d/x3.conf", "/home/u/.tool12/cache/a/b", "/tmp/x"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sink = p.DecidePath(AccessRead|AccessWrite, paths[i&3])
	}
}

func BenchmarkDecidePathDefault(b *testing.B) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		b.Fatal(err)
	}
	paths := []string{"/home/u/src/proj/internal/x.go", "/home/u/.ssh/id_ed25519", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/home/u/src/proj/.git/hooks/pre-commit"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sink = p.DecidePath(AccessWrite, paths[i&3])
	}
}

// BenchmarkDecidePathDefaultRead: reads under the default, content
// rules included (a .pem and a .env are judged in both content modes).
func BenchmarkDecidePathDefaultRead(b *testing.B) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		b.Fatal(err)
	}
	paths := []string{"/home/u/src/proj/internal/x.go", "/usr/lib/python3/dist-packages/certifi/cacert.pem", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/home/u/src/proj/.env.local"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sink = p.DecidePath(AccessRead, paths[i&3])
	}
}

func BenchmarkEvaluateWithSession(b *testing.B) {
	p := policy200(b)
	for i := 0; i < 20; i++ {
		p.AddSessionRule(SurfaceBash, fmt.Sprintf("tool%d push *", i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sink = p.Evaluate(Check{SurfaceBash, "tool19 push origin"})
	}
}

// TestHotPathDoesNotAllocate pins the no-allocation property the
// supervisor relies on (an allocation count, not a timing).
func TestHotPathDoesNotAllocate(t *testing.T) {
	p := policy200(t)
	p.AddSessionRule(SurfaceWrite, "/opt/session/**")
	checks := []Check{
		{SurfaceWrite, "/home/u/src/proj/a/b.go"},
		{SurfaceWrite, "/srv/data3/q/out/z"},
		{SurfaceRead, "/home/u/x.key7"},
		{SurfaceBash, "tool1 x --force"},
		{SurfaceWrite, "/opt/session/x"},
		{SurfacePath, "relative/value"},
	}
	for _, c := range checks {
		if n := testing.AllocsPerRun(100, func() { sink = p.Evaluate(c) }); n != 0 {
			t.Errorf("Evaluate(%v): %v allocs", c, n)
		}
		if n := testing.AllocsPerRun(100, func() { sink = p.DecidePath(AccessRead|AccessWrite|AccessExec, c.Value) }); n != 0 {
			t.Errorf("DecidePath(%q): %v allocs", c.Value, n)
		}
	}
	if n := testing.AllocsPerRun(100, func() { sink = p.Decide(checks[0], checks[1]) }); n != 0 {
		t.Errorf("Decide: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() { sink = p.EvaluateAny(SurfaceBash, "tool1 x", "/usr/bin/tool1 x") }); n != 0 {
		t.Errorf("EvaluateAny: %v allocs", n)
	}
}

// BenchmarkDecideExecDefault: the execs of ordinary work under the
// default policy, with and without options (option readings, §2.2).
func BenchmarkDecideExecDefault(b *testing.B) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		b.Fatal(err)
	}
	execs := []ExecIntent{
		{Path: "/usr/bin/git", Resolved: "/usr/bin/git", Argv: []string{"git", "status", "--short"}, Cwd: "/home/u/src/proj"},
		{Path: "/usr/bin/git", Resolved: "/usr/bin/git", Argv: []string{"git", "push", "-q", "origin", "main"}, Cwd: "/home/u/src/proj"},
		{Path: "/usr/bin/ls", Resolved: "/usr/bin/ls", Argv: []string{"ls", "-la", "src"}, Cwd: "/home/u/src/proj"},
		{Path: "/usr/bin/cat", Resolved: "/usr/bin/cat", Argv: []string{"cat", "go.mod"}, Cwd: "/home/u/src/proj"},
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sink = p.DecideExec(execs[i&3]).Result
	}
}
