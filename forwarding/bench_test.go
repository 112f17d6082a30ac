package forwarding

import (
	"os"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

// What nesting adds to one notification: the node lookup and the extra
// layers. Compare each nested figure with its single-level twin from the
// same run.

func benchRegistry(b *testing.B, depth int) (*Registry, *Node) {
	b.Helper()
	r, err := NewRegistry(cfg(""), nil, RegistryOptions{})
	if err != nil {
		b.Fatal(err)
	}
	n := r.Root()
	for i := 0; i < depth; i++ {
		n, _, err = r.Register(n, Spec{Name: "n", Argv: []string{"n"}, Config: cfg(`{"permission": {"*": "allow", "write": {"/home/u/proj/secret/**": "deny"}}}`)}, Peer{PID: 10 + i, Start: 1}, &fakePin{})
		if err != nil {
			b.Fatal(err)
		}
	}
	return r, n
}

func benchDecide(b *testing.B, depth int) {
	_, n := benchRegistry(b, depth)
	layers := n.Layers()
	checks := write("/home/u/proj/src/main.go")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if v := Decide(layers, checks...); v.Result.Action != engine.Allow {
			b.Fatal(v)
		}
	}
}

func BenchmarkDecideSingleLevel(b *testing.B) { benchDecide(b, 0) }
func BenchmarkDecideNested1(b *testing.B)     { benchDecide(b, 1) }
func BenchmarkDecideNested3(b *testing.B)     { benchDecide(b, 3) }

// The single-level baseline: the root's policy asked directly.
func BenchmarkDecidePolicyDirect(b *testing.B) {
	r, _ := benchRegistry(b, 0)
	p := r.Root().Policy()
	checks := write("/home/u/proj/src/main.go")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if p.Decide(checks...).Action != engine.Allow {
			b.Fatal()
		}
	}
}

// NodeOf with no node registered: the root, no lookup.
func BenchmarkNodeOfNotNested(b *testing.B) {
	r, _ := benchRegistry(b, 0)
	tree := NewTree(ProcFS{}, r, os.Getppid(), TreeOptions{})
	pid := os.Getpid()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tree.NodeOf(pid); err != nil {
			b.Fatal(err)
		}
	}
}

// NodeOf of a cached process with a /proc start-time pin (ProcFS). The
// supervisor's pidfd pins cost a poll instead of a /proc read.
func BenchmarkNodeOfCachedProcFS(b *testing.B) {
	r, _ := benchRegistry(b, 1)
	tree := NewTree(ProcFS{}, r, os.Getppid(), TreeOptions{})
	pid := os.Getpid()
	if _, err := tree.NodeOf(pid); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tree.NodeOf(pid); err != nil {
			b.Fatal(err)
		}
	}
}

// The first lookup of a process: a walk of one parent.
func BenchmarkNodeOfMissProcFS(b *testing.B) {
	r, _ := benchRegistry(b, 1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tree := NewTree(ProcFS{}, r, os.Getppid(), TreeOptions{})
		if _, err := tree.NodeOf(os.Getpid()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRegister(b *testing.B) {
	r, err := NewRegistry(cfg(""), nil, RegistryOptions{MaxNodes: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	spec := Spec{Name: "n", Argv: []string{"n"}, Config: cfg("", withScope("s.jsonc", `{"permission": {"write": {"/x/**": "deny"}}}`))}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := r.Register(r.Root(), spec, Peer{PID: 10, Start: 1}, &fakePin{}); err != nil {
			b.Fatal(err)
		}
	}
}
