package supervisor_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// permissive allows everything: under it a workload must behave exactly
// as it does bare (same output, same exit status) — no false denials.
const permissive = `{ "extends": "none", "permission": { "*": "allow" } }`

// workload runs script with bash in a fresh copy of setup, bare and under
// permwrap, and requires identical stdout and exit status.
func workload(t *testing.T, name, script string, setup func(dir string)) {
	t.Helper()
	kerneltest.Tool(t, "bash")
	s := newSandbox(t, permissive)
	bareDir := filepath.Join(s.workspace, "bare")
	wrapDir := filepath.Join(s.workspace, "wrapped")
	for _, d := range []string{bareDir, wrapDir} {
		os.MkdirAll(d, 0o755)
		if setup != nil {
			setup(d)
		}
	}
	full := "set -e; cd \"$1\"; " + script
	bare := s.bare("bash", "-c", full, "sh", bareDir)
	wrapped := s.run("bash", "-c", full, "sh", wrapDir)
	if bare.code != 0 {
		t.Fatalf("%s fails even bare (exit %d): %s", name, bare.code, bare.stderr)
	}
	if wrapped.code != bare.code {
		t.Fatalf("%s: exit %d under permwrap, %d bare\nstderr: %s", name, wrapped.code, bare.code, wrapped.stderr)
	}
	norm := func(s, dir string) string { return strings.ReplaceAll(s, dir, "DIR") }
	if norm(wrapped.stdout, wrapDir) != norm(bare.stdout, bareDir) {
		t.Fatalf("%s: output differs\nbare:\n%s\nwrapped:\n%s\nstderr: %s", name, bare.stdout, wrapped.stdout, wrapped.stderr)
	}
	if strings.Contains(wrapped.stderr, "permwrap: denied") {
		t.Fatalf("%s: false denial:\n%s", name, wrapped.stderr)
	}
}

// need skips (fails under PERMWRAP_REQUIRE_KERNEL=1) without the tools.
func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		kerneltest.Tool(t, tool)
	}
}

func TestWorkloadGit(t *testing.T) {
	need(t, "git")
	workload(t, "git", `
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@x GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@x
export GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' GIT_CONFIG_NOSYSTEM=1
git init -q -b main .
for i in 1 2 3; do echo "line $i" > f$i.txt; done
git add -A
git commit -q -m "first commit"
echo more >> f1.txt
git commit -q -am "second"
git log --format='%H %s'
git status --porcelain
git mv f2.txt g2.txt && git commit -q -m mv && git log --oneline | wc -l
`, nil)
}

func TestWorkloadCC(t *testing.T) {
	need(t, "cc")
	workload(t, "cc", `
cat > hello.c <<'C'
#include <stdio.h>
int main(int argc, char **argv) { printf("hello %d\n", argc); return 0; }
C
cc -O1 -o hello hello.c
./hello a b
`, nil)
}

func TestWorkloadMake(t *testing.T) {
	kerneltest.Long(t)
	need(t, "cc", "make")
	workload(t, "make -j2", `
make -s -j2
./prog
`, func(dir string) {
		var objs []string
		for i := 0; i < 40; i++ {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.c", i)), []byte(fmt.Sprintf("int f%d(void) { return %d; }\n", i, i)), 0o644)
			objs = append(objs, fmt.Sprintf("f%d.o", i))
		}
		main := "#include <stdio.h>\n"
		for i := 0; i < 40; i++ {
			main += fmt.Sprintf("int f%d(void);\n", i)
		}
		main += "int main(void) { int s = 0;\n"
		for i := 0; i < 40; i++ {
			main += fmt.Sprintf("s += f%d();\n", i)
		}
		main += "printf(\"%d\\n\", s); return 0; }\n"
		os.WriteFile(filepath.Join(dir, "main.c"), []byte(main), 0o644)
		mk := "prog: main.o " + strings.Join(objs, " ") + "\n\tcc -o $@ $^\n%.o: %.c\n\tcc -c -O1 -o $@ $<\n"
		os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644)
	})
}

func TestWorkloadTar(t *testing.T) {
	need(t, "tar")
	workload(t, "tar", `
mkdir -p src/a/b && echo one > src/a/1 && echo two > src/a/b/2 && ln -s 1 src/a/l
tar -cf x.tar src
mkdir out && tar -xf x.tar -C out
find out | sort
cat out/src/a/l
tar -tvf x.tar | awk '{print $1, $6}' | sort
`, nil)
}

func TestWorkloadPython(t *testing.T) {
	need(t, "python3")
	workload(t, "python3", `
python3 - <<'PY'
import os, json, tempfile, shutil
os.makedirs("d/e", exist_ok=True)
with open("d/e/x.json", "w") as f: json.dump({"a": [1,2,3]}, f)
with open("d/e/x.json") as f: print(json.load(f))
os.rename("d/e/x.json", "d/y.json")
shutil.copytree("d", "d2")
print(sorted(os.listdir("d2")))
with tempfile.NamedTemporaryFile("w", dir=".", delete=True) as t: t.write("x")
os.symlink("d/y.json", "link")
print(os.readlink("link"), open("link").read())
shutil.rmtree("d2")
print(os.path.exists("d2"))
PY
`, nil)
}

func TestWorkloadGoBuild(t *testing.T) {
	kerneltest.Long(t)
	need(t, "go")
	gocache := t.TempDir()
	workload(t, "go build", `
export GOCACHE=`+gocache+` GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off
cat > go.mod <<'G'
module example.com/hello
go 1.21
G
cat > main.go <<'G'
package main
import "fmt"
func main() { fmt.Println("hello from go") }
G
go build -o hello .
./hello
`, nil)
}

func TestWorkloadNpm(t *testing.T) {
	need(t, "npm")
	workload(t, "npm --version", `npm --version`, nil)
}
