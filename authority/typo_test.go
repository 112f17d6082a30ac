package authority

import (
	"context"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

func typo(t *testing.T, from, to string) engine.TypoPath {
	t.Helper()
	tp, err := engine.NewTypoPath(from, to, engine.Env{Home: "/home/u", Workspace: "/home/u/project"})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestTypoPath(t *testing.T) {
	a, err := NewTypoPath(append(WorkspaceSiblings("/home/u/project"),
		typo(t, "/home/u/src/github.com/acme/old-api/**", "/home/u/src/github.com/acme/api"),
		typo(t, "/tmp/projct/*.go", "/home/u/project")))
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
	for _, m := range [][2]string{{"relative/**", "/x"}, {"/x/[", "/y"}, {"/x/**", "y"}, {"~root/x/**", "/y"}} {
		if _, err := engine.NewTypoPath(m[0], m[1], engine.Env{}); err == nil {
			t.Errorf("%v accepted", m)
		}
	}
	if _, err := NewTypoPath([]engine.TypoPath{{From: "/a/**", To: "rel"}}); err == nil {
		t.Error("a relative To accepted")
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
	// The engine's matcher (which lets dir/** match dir itself) decides;
	// ~ means what it means in rules, and the intended path is found.
	a, err := NewTypoPath([]engine.TypoPath{typo(t, "~/old/**", "~/new")})
	if err != nil {
		t.Fatal(err)
	}
	v, reason, _ := a.Review(context.Background(), NewRequest(engine.Check{Surface: engine.SurfaceRead, Value: "/home/u/old/a/b"}), nil)
	if v != VerdictDeny || !strings.HasSuffix(reason, "did you mean /home/u/new/a/b?") || !strings.Contains(reason, "~/old/**") {
		t.Fatalf("%v %q", v, reason)
	}
}
