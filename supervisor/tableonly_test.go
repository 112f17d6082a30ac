package supervisor

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestNoSyscallOutsideTheTable: every syscall permwrap knows is a row of
// the table (syscalls.go). A syscall number anywhere else in the
// production code is either the first argument of a call that makes that
// syscall (unix.Syscall(unix.SYS_BIND, ...), permwrap's own calls), or a
// second list that would drift from the table: this test fails on it.
func TestNoSyscallOutsideTheTable(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(self))
	table := filepath.Join(root, "supervisor", "syscalls.go")
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == table {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		for _, nr := range strayNumbers(f) {
			t.Errorf("%s names %s outside the syscall table (supervisor/syscalls.go): add a row, or read the row", fset.Position(nr.Pos()), nr.Sel.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files under %s", checked, root)
	}
}

// strayNumbers are the SYS_ constants of f that are not the first
// argument of a call.
func strayNumbers(f *ast.File) []*ast.SelectorExpr {
	made := map[ast.Node]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok && len(c.Args) > 0 {
			made[c.Args[0]] = true
		}
		return true
	})
	var out []*ast.SelectorExpr
	ast.Inspect(f, func(n ast.Node) bool {
		s, ok := n.(*ast.SelectorExpr)
		if ok && strings.HasPrefix(s.Sel.Name, "SYS_") && !made[s] {
			out = append(out, s)
		}
		return true
	})
	return out
}

// TestStrayNumbers: the check itself finds a list and lets a call pass.
func TestStrayNumbers(t *testing.T) {
	src := `package p
import "golang.org/x/sys/unix"
var list = []int{unix.SYS_CHDIR, unix.SYS_FCHDIR}
func f() { unix.Syscall(unix.SYS_BIND, 0, 0, 0) }
func g(nr int) bool { return nr == unix.SYS_UNSHARE }
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range strayNumbers(f) {
		names = append(names, s.Sel.Name)
	}
	if got := strings.Join(names, " "); got != "SYS_CHDIR SYS_FCHDIR SYS_UNSHARE" {
		t.Errorf("found %q", got)
	}
}
