package authority

import (
	"context"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

func TestTypoPath(t *testing.T) {
	a, err := NewTypoPath(append(WorkspaceSiblings("/home/u/project"),
		TypoPath{From: "/home/u/src/github.com/acme/old-api/**", To: "/home/u/src/github.com/acme/api"},
		TypoPath{From: "/tmp/projct/*.go", To: "/home/u/project"}))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		s     engine.Surface
		value string
		want  string // "" = defer
	}{
		{engine.SurfaceWrite, "/home/u/project-old/src/x.go", "/home/u/project-old/src/x.go looks like a mistaken path (typo pattern /home/u/project-old/**); did you mean /home/u/project/src/x.go?"},
		{engine.SurfaceRead, "/home/u/project.bak/go.mod", "/home/u/project.bak/go.mod looks like a mistaken path (typo pattern /home/u/project.bak/**); did you mean /home/u/project/go.mod?"},
		{engine.SurfaceRead, "/home/u/src/github.com/acme/old-api/a/b.go", "/home/u/src/github.com/acme/old-api/a/b.go looks like a mistaken path (typo pattern /home/u/src/github.com/acme/old-api/**); did you mean /home/u/src/github.com/acme/api/a/b.go?"},
		{engine.SurfaceWrite, "/tmp/projct/main.go", "/tmp/projct/main.go looks like a mistaken path (typo pattern /tmp/projct/*.go); did you mean /home/u/project/main.go?"},
		// The mistaken directory itself (`X/**` matches X).
		{engine.SurfaceRead, "/home/u/project-old", "/home/u/project-old looks like a mistaken path (typo pattern /home/u/project-old/**); did you mean /home/u/project?"},
		{engine.SurfaceWrite, "/home/u/project/src/x.go", ""},     // the workspace itself
		{engine.SurfaceRead, "/home/u/project-common/lib.go", ""}, // a real sibling, not a stale copy
		{engine.SurfaceRead, "/home/u/other/x", ""},
		{engine.SurfaceBash, "cat /home/u/project-old/x", ""}, // only path surfaces
		{engine.SurfaceExec, "/home/u/project-old/bin/tool", ""},
	}
	for _, c := range cases {
		v, reason, err := a.Review(context.Background(), NewRequest(engine.Check{Surface: c.s, Value: c.value}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.want == "" {
			if v != VerdictDefer {
				t.Errorf("%s %s: %v %q, want defer", c.s, c.value, v, reason)
			}
			continue
		}
		if v != VerdictDeny || reason != c.want {
			t.Errorf("%s %s:\n got %v %q\nwant deny %q", c.s, c.value, v, reason, c.want)
		}
	}
}

func TestTypoPathBadPatterns(t *testing.T) {
	for _, m := range []TypoPath{{From: "relative/**", To: "/x"}, {From: "/x/[", To: "/y"}, {From: "/x/**", To: "y"}, {From: "~/x/**", To: "rel", Match: func(string) bool { return true }}} {
		if _, err := NewTypoPath([]TypoPath{m}); err == nil {
			t.Errorf("%+v accepted", m)
		}
	}
	if WorkspaceSiblings("/") != nil || WorkspaceSiblings("rel") != nil {
		t.Error("siblings of / or a relative workspace")
	}
	// Glob metacharacters in the workspace are literal.
	a, err := NewTypoPath(WorkspaceSiblings("/src/[x]{a,b}*"))
	if err != nil {
		t.Fatal(err)
	}
	v, reason, _ := a.Review(context.Background(), NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/src/[x]{a,b}*-old/f"}), nil)
	if v != VerdictDeny || !strings.HasSuffix(reason, "did you mean /src/[x]{a,b}*/f?") {
		t.Fatalf("%v %q", v, reason)
	}
	if v, _, _ := a.Review(context.Background(), NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/src/xa-old/f"}), nil); v != VerdictDefer {
		t.Fatal("metacharacters in the workspace were read as a pattern")
	}
}

func TestTypoPathWithEngineMatcher(t *testing.T) {
	// The engine's matcher (here a stand-in that, like many, lets dir/**
	// match dir itself) decides; the intended path is still found.
	match := func(p string) bool {
		return p == "/home/u/old" || strings.HasPrefix(p, "/home/u/old/")
	}
	a, err := NewTypoPath([]TypoPath{{From: "~/old/**", To: "/home/u/new", Match: match}})
	if err != nil {
		t.Fatal(err)
	}
	v, reason, _ := a.Review(context.Background(), NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/home/u/old/a/b"}), nil)
	if v != VerdictDeny || !strings.HasSuffix(reason, "did you mean /home/u/new/a/b?") || !strings.Contains(reason, "~/old/**") {
		t.Fatalf("%v %q", v, reason)
	}
}
