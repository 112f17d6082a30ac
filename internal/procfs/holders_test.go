package procfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeProc makes a proc tree: each pid's fd links, as given; a pid
// mapped to nil has a file where its fd directory would be (a read that
// fails, as another user's fds do).
func fakeProc(t *testing.T, fds map[string][]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, links := range fds {
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if links == nil {
			os.WriteFile(filepath.Join(root, pid, "fd"), nil, 0o644)
			continue
		}
		os.Mkdir(filepath.Join(root, pid, "fd"), 0o755)
		for i, l := range links {
			if err := os.Symlink(l, filepath.Join(root, pid, "fd", string(rune('0'+i)))); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

func TestSocketHolders(t *testing.T) {
	root := fakeProc(t, map[string][]string{
		"10":   {"/dev/null", "socket:[42]"},
		"11":   {"socket:[421]", "socket:[4]", "pipe:[42]"},
		"12":   nil,
		"13":   {"socket:[42]"},
		"9":    {"socket:[42]"},
		"014":  {"socket:[42]"}, // not a pid
		"self": {"socket:[42]"},
	})
	os.Mkdir(filepath.Join(root, "15"), 0o755) // gone: no fd directory
	pids, unreadable, err := SocketHolders(root, 42, 0)
	if err != nil || !slices.Equal(pids, []int{10, 13, 9}) || unreadable != 1 {
		t.Errorf("SocketHolders = %v %d %v", pids, unreadable, err)
	}
	if pids, _, _ := SocketHolders(root, 42, 2); len(pids) != 2 {
		t.Errorf("limit 2: %v", pids)
	}
	if pids, _, _ := SocketHolders(root, 7, 0); len(pids) != 0 {
		t.Errorf("nobody's socket: %v", pids)
	}
	if _, _, err := SocketHolders(filepath.Join(root, "none"), 42, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no proc: %v", err)
	}
}

func TestParseCmdline(t *testing.T) {
	for _, c := range []struct {
		in    string
		max   int
		args  []string
		trunc bool
	}{
		{"sleep\x0030\x00", 100, []string{"sleep", "30"}, false},
		{"", 100, nil, false},
		{"\x00", 100, []string{}, false},
		{"a\x00\x00b\x00", 100, []string{"a", "", "b"}, false},
		{"rewritten title", 100, []string{"rewritten title"}, false},
		{"abcdef\x00gh\x00", 4, []string{"abcd"}, true},
		{"ab\x00cd\x00", 3, []string{"ab"}, true},
	} {
		args, trunc := ParseCmdline([]byte(c.in), c.max)
		if (len(args) != 0 || len(c.args) != 0) && !slices.Equal(args, c.args) || trunc != c.trunc {
			t.Errorf("ParseCmdline(%q, %d) = %q %v, want %q %v", c.in, c.max, args, trunc, c.args, c.trunc)
		}
	}
}

func TestReadProgram(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "5"), 0o755)
	os.WriteFile(filepath.Join(root, "5", "cmdline"), []byte("tmux\x00new\x00"), 0o644)
	// No exe link (another user's process): the first word.
	p, err := ReadProgram(root, 5)
	if err != nil || p.Exe != "tmux" || !p.ExeFromArgv || !slices.Equal(p.Args, []string{"tmux", "new"}) {
		t.Errorf("without exe: %+v %v", p, err)
	}
	os.Symlink("/usr/bin/tmux", filepath.Join(root, "5", "exe"))
	if p, err := ReadProgram(root, 5); err != nil || p.Exe != "/usr/bin/tmux" || p.ExeFromArgv {
		t.Errorf("with exe: %+v %v", p, err)
	}
	// A long command line is cut.
	os.WriteFile(filepath.Join(root, "5", "cmdline"), []byte(strings.Repeat("x", 3*MaxCmdline)), 0o644)
	if p, _ := ReadProgram(root, 5); !p.Truncated || len(p.Args) != 1 || len(p.Args[0]) != MaxCmdline {
		t.Errorf("long: %v %d", p.Truncated, len(p.Args))
	}
	if _, err := ReadProgram(root, 6); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("gone: %v", err)
	}
	// This process, for real.
	p, err = ReadProgram(Root, os.Getpid())
	if exe, _ := os.Executable(); err != nil || p.Exe != exe || len(p.Args) == 0 {
		t.Errorf("self: %+v %v (exe %s)", p, err, exe)
	}
}
