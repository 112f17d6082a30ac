package authority

import (
	"context"
	"os"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

func BenchmarkNewRequestID(b *testing.B) {
	for b.Loop() {
		NewRequestID()
	}
}

// BenchmarkChainResolve: an ask through two deferring in-process links
// to the denying terminal, with the review log on.
func BenchmarkChainResolve(b *testing.B) {
	l := NewLogWriter(discard{}, LogOptions{})
	defer l.Close()
	cfg := allowBash()
	cfg.Links = []string{"a", "typo-path"}
	typo, _ := NewTypoPath(WorkspaceSiblings("/home/u/project"))
	ch := NewChain(cfg, map[string]Authorizer{"a": &fixed{v: VerdictDefer}, "typo-path": typo}, DenyingTerminal{}, l, nil)
	r := NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: "/home/u/project/src/main.go"})
	b.ReportAllocs()
	for b.Loop() {
		ch.Resolve(context.Background(), r)
	}
}

func BenchmarkRenderRequest(b *testing.B) {
	r := renderFixture()
	b.ReportAllocs()
	for b.Loop() {
		RenderRequest(r, 100, 14)
	}
}

// BenchmarkExecLink: one ask reviewed by a judge program (the test
// binary in judge mode): process start, query socket, JSON both ways.
func BenchmarkExecLink(b *testing.B) {
	j := &ExecAuthorizer{Name: "judge", Command: []string{os.Args[0], "judge-mode", "defer"}}
	r := bashAsk("git push")
	for b.Loop() {
		if _, _, err := j.Review(context.Background(), r, nil); err != nil {
			b.Fatal(err)
		}
	}
}
