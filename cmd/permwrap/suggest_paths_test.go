package main

import (
	"testing"

	"github.com/permwrap/permwrap/engine"
)

func TestGenName(t *testing.T) {
	tests := []struct{ in, want string }{
		// Made up by programs.
		{"tmp_objdir-incoming-bOovua", "tmp_objdir-incoming-*"},
		{"tmp_objdir-incoming-Vz4QsL", "tmp_objdir-incoming-*"},
		{"tmp_obj_FDFId8", "tmp_obj_*"},
		{"__init__.cpython-311.pyc.140233263125760", "__init__.cpython-311.pyc.*"},
		{"866e48a1728d0d4070215069f6f81d3e0161cd", "*"},
		{"tyUhoOM", "*"},
		{"tmp.kJ3xQ9aZ2b", "tmp.*"},
		{"build-20261206-134501.log", "build-*.log"},
		{"session.12345", "session.*"},
		{"go-build2837462", "go-build*"},
		{"tmp12345", "tmp*"},
		{"python311", "python311"},
		// Chosen by people: kept, glob characters quoted.
		{"main.go", "main.go"},
		{"HEAD.lock", "HEAD.lock"},
		{"config.lock", "config.lock"},
		{"pre-applypatch.sample", "pre-applypatch.sample"},
		{"README2", "README2"},
		{"MyFile.txt", "MyFile.txt"},
		{"python3.11", "python3.11"},
		{"__init__.cpython-311.pyc", "__init__.cpython-311.pyc"},
		{"deadbeef", "deadbeef"},
		{"2026", "*"},
		{"v1.2.3", "v1.2.3"},
		{"a*b", `a\*b`},
		{"package-lock.json", "package-lock.json"},
		{"node_modules", "node_modules"},
		{"incoming", "incoming"},
		{"TypeScript", "TypeScript"},
	}
	for _, tt := range tests {
		if got, _ := genName(tt.in); got != tt.want {
			t.Errorf("genName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestGenPath(t *testing.T) {
	for in, want := range map[string]string{
		"/home/dev/r.git/objects/36/866e48a1728d0d4070215069f6f81d3e0161cd":      "/home/dev/r.git/objects/*/*",
		"/home/dev/r.git/objects/tmp_objdir-incoming-Vz4QsL/36/tmp_obj_FDFId8":   "/home/dev/r.git/objects/tmp_objdir-incoming-*/*/tmp_obj_*",
		"/home/dev/lib/pkg/__pycache__/__init__.cpython-311.pyc.140233263125760": "/home/dev/lib/pkg/__pycache__/__init__.cpython-311.pyc.*",
		"/home/dev/src/ab/x": "/home/dev/src/ab/x",
	} {
		if got := genPath(in); got != want {
			t.Errorf("genPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTooBroad(t *testing.T) {
	env := engine.Env{Home: "/home/dev", Workspace: "/home/dev/src/app", TmpDir: "/tmp/u"}
	for dir, want := range map[string]bool{
		"/": true, "/home": true, "/home/dev": true, "/usr": true, "/tmp": true, "/tmp/u": true,
		"/home/dev/src":                          true, // an ancestor of the workspace
		"/home/dev/.cache":                       true,
		"/home/dev/.config":                      true,
		"/home/dev/.local/share":                 true,
		"/usr/local/lib":                         true,
		"/home/dev/src/app":                      false, // the workspace itself
		"/home/dev/src/app/build":                false,
		"/home/dev/.cache/go-build":              false,
		"/home/dev/.npm":                         false,
		"/home/dev/remote.git":                   false,
		"/usr/local/lib/node_modules/typescript": false,
		"/opt/tool":                              false,
		"/tmp/u/x":                               false,
	} {
		if got := tooBroad(dir, env); got != want {
			t.Errorf("tooBroad(%q) = %v, want %v", dir, got, want)
		}
	}
}

// A generalised path always matches the path it came from, whatever the
// name holds (glob characters, separators side by side, bytes).
func TestGenPathMatchesItsValue(t *testing.T) {
	names := []string{
		"tmp_objdir-incoming-bOovua", "a-1234-5678", "x..12345..y", "__init__.cpython-311.pyc.140233263125760",
		"a*b[c]{d}?e\\f", "~tilde", "${HOME}", "-_.", "build2837462-Zx9QwE.tmp", "ünïcode-Ab3dEf9", "12345",
		"866e48a1728d0d4070215069f6f81d3e0161cd", ".hidden-AbC123x", "a__b--c..d",
	}
	for _, n := range names {
		for _, v := range []string{"/home/dev/" + n, "/home/dev/objects/" + n + "/" + n} {
			g := genPath(v)
			m, err := engine.PathMatcher(g)
			if err != nil {
				t.Fatalf("genPath(%q) = %q: %v", v, g, err)
			}
			if !m(v) {
				t.Errorf("genPath(%q) = %q does not match it", v, g)
			}
		}
	}
}

// Only the names below home, the workspace or ${TMPDIR} are generalised.
func TestGenPatternKeepsTheHome(t *testing.T) {
	env := engine.Env{Home: "/home/user12345", Workspace: "/srv/ws-20261206", TmpDir: "/tmp/u-99999"}
	for v, want := range map[string]string{
		"/home/user12345/x/tmp.kJ3xQ9aZ2b":    "~/x/tmp.*",
		"/srv/ws-20261206/out/run-123456.log": "${WORKSPACE}/out/run-*.log",
		"/tmp/u-99999/cache-Ab3dEf9/x":        "${TMPDIR}/cache-*/x",
		"/opt/tool-123456/y":                  "/opt/tool-*/y",
	} {
		if got := genPattern(v, engine.SurfaceWrite, env); got != want {
			t.Errorf("genPattern(%q) = %q, want %q", v, got, want)
		}
	}
}
