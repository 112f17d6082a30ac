package procfs

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// A stat line with fields 3 to 52 after "pid (comm)".
func statLine(pid int, comm string) string {
	return strconv.Itoa(pid) + " (" + comm + ") S 17 4242 4240 34816 4250 4194560 100 0 0 0 1 2 0 0 20 0 3 0 987654 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
}

func TestParseStat(t *testing.T) {
	want := Stat{PID: 4242, State: 'S', PPID: 17, Pgrp: 4242, Session: 4240, TTYNr: 34816, TPGID: 4250, Flags: 4194560, NumThreads: 3, StartTime: 987654}
	for _, comm := range []string{"sh", "a) b (c", "we (ird) name", "", ")", "((", " ) S 1 2 3 ", "x\ny"} {
		s, err := ParseStat([]byte(statLine(4242, comm)))
		if err != nil {
			t.Fatalf("comm %q: %v", comm, err)
		}
		w := want
		w.Comm = comm
		if s != w {
			t.Errorf("comm %q: parsed %+v, want %+v", comm, s, w)
		}
	}
	// No terminal: tty_nr 0, tpgid -1; init's parent 0.
	s, err := ParseStat([]byte("1 (init) S 0 1 1 0 -1 4194560 1 1 0 0 1 1 1 1 20 0 1 0 5"))
	if err != nil || s.PPID != 0 || s.TTYNr != 0 || s.TPGID != -1 || s.StartTime != 5 {
		t.Fatalf("init: %+v %v", s, err)
	}
	full := statLine(4242, "a) b (c")
	for _, bad := range []string{
		"",
		"\n",
		"1 (x",
		"1 x) S 1",
		"(x) S 0 1 1 0 -1 4194560 1 1 0 0 1 1 1 1 20 0 1 0 5",
		"x (y) S 0 1 1 0 -1 4194560 1 1 0 0 1 1 1 1 20 0 1 0 5",
		"0 (y) S 0 1 1 0 -1 4194560 1 1 0 0 1 1 1 1 20 0 1 0 5",
		"1 ) (y S 0 1 1 0 -1 4194560 1 1 0 0 1 1 1 1 20 0 1 0 5",
		"1 (y) S x 1",
		"1 (y) SS 0 1 1 0 -1 4194560 1 1 0 0 1 1 1 1 20 0 1 0 5",
		"1 (y) S -1 1 1 0 -1 4194560 1 1 0 0 1 1 1 1 20 0 1 0 5",
		"1 (y) S 0 1 1 x -1 4194560 1 1 0 0 1 1 1 1 20 0 1 0 5",
		"1 (y) S 0 1 1 0 -1 -1 1 1 0 0 1 1 1 1 20 0 1 0 5",
		"1 (y) S 0 1 1 0 -1 4194560 1 1 0 0 1 1 1 1 20 0 -1 0 5",
		"1 (y) S 0 1 1 0 -1 4194560 1 1 0 0 1 1 1 1 20 0 1 0 -5",
		"1 (y) S 0 1 1 0 -1 4194560 1 1 0 0 1 1 1 1 20 0 1 0", // truncated before starttime
		full[:len(full)/4], // truncated
		full[:len("4242 (a) b (c)")],
	} {
		if s, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("%q parsed: %+v", bad, s)
		} else if !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v does not wrap ErrMalformed", bad, err)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte(statLine(4242, "a) b (c")))
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 1 0 0 1 1 1 1 20 0 1 0 5 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"))
	f.Add([]byte("7 ()) ) Z 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 2"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStat(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if s.PID <= 0 || s.PPID < 0 || s.NumThreads < 0 {
			t.Fatalf("accepted %+v", s)
		}
	})
}

func TestReadStat(t *testing.T) {
	s, err := ReadStat(os.Getpid())
	if err != nil || s.PID != os.Getpid() || s.PPID != os.Getppid() || s.StartTime == 0 || s.NumThreads < 1 {
		t.Fatalf("self: %+v %v", s, err)
	}
	if _, err := ReadStat(1 << 30); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no such pid: %v", err)
	}
	// A child whose name has ")" and spaces: its parent is this process.
	c := exec.Command("/bin/sh", "-c", "exec -a 'a) 1 (b' sleep 30")
	if err := c.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { c.Process.Kill(); c.Wait() }()
	if s, err := ReadStat(c.Process.Pid); err != nil || s.PPID != os.Getpid() {
		t.Fatalf("child: %+v %v", s, err)
	}
	if kids := Children(os.Getpid()); !slices.Contains(kids, c.Process.Pid) {
		t.Fatalf("Children(self) = %v, want %d among them", kids, c.Process.Pid)
	}
	if pids, err := Pids(); err != nil || !slices.Contains(pids, os.Getpid()) || !slices.Contains(pids, c.Process.Pid) {
		t.Fatalf("Pids() = %v, %v", pids, err)
	}
}

// A proc root of one's own: what forwarding's tests give it.
func TestReadStatAt(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "12"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "12", "stat"), []byte(statLine(12, "x y")), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := ReadStatAt(root, 12); err != nil || s.PID != 12 || s.Comm != "x y" {
		t.Fatalf("%+v %v", s, err)
	}
	if err := os.WriteFile(filepath.Join(root, "12", "stat"), []byte("12 (x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadStatAt(root, 12); !errors.Is(err, ErrMalformed) {
		t.Fatalf("malformed: %v", err)
	}
	if _, err := ReadStatAt(root, 13); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

func TestParseChildren(t *testing.T) {
	for in, want := range map[string][]int{"": nil, "\n": nil, "5 6 7 ": {5, 6, 7}, "12": {12}} {
		got, err := ParseChildren([]byte(in))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	got, err := ParseChildren([]byte("5 x 7"))
	if !errors.Is(err, ErrMalformed) || !slices.Equal(got, []int{5, 7}) {
		t.Errorf("5 x 7: %v %v", got, err)
	}
}

func TestParsePid(t *testing.T) {
	for s, want := range map[string]int{"1": 1, "4242": 4242} {
		if n, ok := parsePid(s); !ok || n != want {
			t.Errorf("%q: %d %v", s, n, ok)
		}
	}
	for _, s := range []string{"", "0", "01", "self", "thread-self", "+5", "-5", "5a", "99999999999999999999999"} {
		if n, ok := parsePid(s); ok {
			t.Errorf("%q: %d", s, n)
		}
	}
}

func TestStatusFields(t *testing.T) {
	b := []byte("Name:\tsh\nUmask:\t0022\nno colon\nUid:\t1\t2\t3\t4\nCapPrm:\t000001ffffffffff\nSeccomp:\t2\nempty:\nSeccomp:\t0")
	if v, ok := StatusField(b, "CapPrm"); !ok || string(v) != "000001ffffffffff" {
		t.Errorf("CapPrm: %q %v", v, ok)
	}
	if v, ok := StatusField(b, "Uid"); !ok || string(v) != "1\t2\t3\t4" {
		t.Errorf("Uid: %q %v", v, ok)
	}
	if v, ok := StatusField(b, "Seccomp"); !ok || string(v) != "2" {
		t.Errorf("Seccomp: the first line's %q %v", v, ok)
	}
	if v, ok := StatusField(b, "empty"); !ok || len(v) != 0 {
		t.Errorf("empty: %q %v", v, ok)
	}
	if _, ok := StatusField(b, "Gid"); ok {
		t.Error("Gid found")
	}
	var keys []string
	seq := StatusFields(b)
	for range 2 { // a sequence can be ranged over twice
		keys = keys[:0]
		for k := range seq {
			keys = append(keys, string(k))
		}
		if want := []string{"Name", "Umask", "Uid", "CapPrm", "Seccomp", "empty", "Seccomp"}; !slices.Equal(keys, want) {
			t.Fatalf("keys %q, want %q", keys, want)
		}
	}
	self, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	if v, ok := StatusField(self, "Pid"); !ok || string(v) != strconv.Itoa(os.Getpid()) {
		t.Errorf("self's Pid: %q %v", v, ok)
	}
}
