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
