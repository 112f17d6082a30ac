// Package procfs reads what permwrap needs of /proc: a process's stat
// line, its children, the fields of a status file, the pids there are.
// It is a leaf (the standard library only), so notify and notify/pin may
// use it; engine and authority do not read /proc at all.
//
// Each parser takes the file's bytes and returns an error wrapping
// ErrMalformed for text it cannot read, never a panic; each reader takes
// a pid, or a proc mount and a pid (At), and returns the read's own error
// unchanged, so a caller can tell a process that is gone from a file it
// cannot read.
package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
)

// Root is where proc is mounted.
const Root = "/proc"

// ErrMalformed is wrapped by every error about a /proc file's text (as
// opposed to reading it).
var ErrMalformed = errors.New("malformed")

// Stat is /proc/PID/stat up to starttime (field 22), named as proc(5)
// names the fields; the number is the field's.
type Stat struct {
	PID        int    // (1) pid, > 0
	Comm       string // (2) comm, without its parentheses
	State      byte   // (3) state: R, S, D, Z, T, t, X, ...
	PPID       int    // (4) ppid, >= 0 (0: the parent is outside the reader's pid namespace)
	Pgrp       int    // (5) pgrp
	Session    int    // (6) session
	TTYNr      int64  // (7) tty_nr: the controlling terminal's device number (major bits 15-8, minor bits 31-20 and 7-0), 0 for none
	TPGID      int    // (8) tpgid: the terminal's foreground process group, -1 for none
	Flags      uint32 // (9) flags (PF_*)
	NumThreads int    // (20) num_threads, >= 0
	StartTime  uint64 // (22) starttime: clock ticks since boot when the process started
}

// Field numbers (proc(5)) of the fields Stat holds.
const (
	fieldState     = 3
	fieldPPID      = 4
	fieldPgrp      = 5
	fieldSession   = 6
	fieldTTYNr     = 7
	fieldTPGID     = 8
	fieldFlags     = 9
	fieldThreads   = 20
	fieldStartTime = 22
)

func malformed(file, what string) error {
	return fmt.Errorf("procfs: %w %s: %s", ErrMalformed, file, what)
}

// ParseStat reads a /proc/PID/stat line. The command name (field 2) is in
// parentheses and may hold anything, spaces and parentheses included, so
// the fields after it are counted from the last ')'. Fields past
// starttime are not read; a line that ends before it is malformed.
func ParseStat(b []byte) (Stat, error) {
	var s Stat
	open := bytes.IndexByte(b, '(')
	close := bytes.LastIndexByte(b, ')')
	if open <= 0 || close < open {
		return s, malformed("stat", "no (comm)")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil || pid <= 0 {
		return s, malformed("stat", "pid")
	}
	f := bytes.Fields(b[close+1:])
	// f[0] is field 3 (state), so field k is f[k-3].
	field := func(k int) string { return string(f[k-fieldState]) }
	if len(f) < fieldStartTime-fieldState+1 {
		return s, malformed("stat", "short")
	}
	if len(f[0]) != 1 {
		return s, malformed("stat", "state")
	}
	ints := []struct {
		k   int
		dst *int
		min int
	}{
		{fieldPPID, &s.PPID, 0},
		{fieldPgrp, &s.Pgrp, minInt},
		{fieldSession, &s.Session, minInt},
		{fieldTPGID, &s.TPGID, minInt},
		{fieldThreads, &s.NumThreads, 0},
	}
	for _, n := range ints {
		v, err := strconv.Atoi(field(n.k))
		if err != nil || v < n.min {
			return Stat{}, malformed("stat", "field "+strconv.Itoa(n.k))
		}
		*n.dst = v
	}
	if s.TTYNr, err = strconv.ParseInt(field(fieldTTYNr), 10, 64); err != nil {
		return Stat{}, malformed("stat", "tty_nr")
	}
	flags, err := strconv.ParseUint(field(fieldFlags), 10, 32)
	if err != nil {
		return Stat{}, malformed("stat", "flags")
	}
	if s.StartTime, err = strconv.ParseUint(field(fieldStartTime), 10, 64); err != nil {
		return Stat{}, malformed("stat", "starttime")
	}
	s.PID, s.Comm, s.State, s.Flags = pid, string(b[open+1:close]), f[0][0], uint32(flags)
	return s, nil
}

const minInt = -int(^uint(0)>>1) - 1

// ReadStat reads and parses /proc/PID/stat (pid may be a thread's id).
// A read's error is returned as os.ReadFile gives it; text it cannot
// parse, as an error wrapping ErrMalformed.
func ReadStat(pid int) (Stat, error) {
	return readStat(Root + "/" + strconv.Itoa(pid) + "/stat")
}

// ReadStatAt is ReadStat of the proc mounted at root.
func ReadStatAt(root string, pid int) (Stat, error) {
	return readStat(filepath.Join(root, strconv.Itoa(pid), "stat"))
}

func readStat(path string) (Stat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(b)
}

// ParseChildren reads a /proc/PID/task/TID/children file: the pids of
// the thread's children, separated by spaces. It returns every pid it
// reads, and an error wrapping ErrMalformed if a word is not a number.
func ParseChildren(b []byte) ([]int, error) {
	var out []int
	var bad error
	for _, w := range bytes.Fields(b) {
		n, err := strconv.Atoi(string(w))
		if err != nil {
			if bad == nil {
				bad = malformed("children", strconv.Quote(string(w)))
			}
			continue
		}
		out = append(out, n)
	}
	return out, bad
}

// Children lists the children of every thread of process pid, from
// /proc/PID/task/*/children (a kernel with CONFIG_PROC_CHILDREN): nil
// when the process cannot be read; a thread that cannot be read, or a
// word that is not a pid, is passed over.
func Children(pid int) []int {
	dir := Root + "/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		c, _ := ParseChildren(b)
		out = append(out, c...)
	}
	return out
}

// Pids lists the processes in /proc (of its mount's pid namespace), in
// os.ReadDir's order (by name): the entries that are decimal numbers.
func Pids() ([]int, error) {
	ents, err := os.ReadDir(Root)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		if pid, ok := parsePid(e.Name()); ok {
			out = append(out, pid)
		}
	}
	return out, nil
}

// parsePid is a /proc entry's pid: decimal digits, no leading zero.
func parsePid(s string) (int, bool) {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0, false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// StatusFields yields the lines of a /proc/PID/status file (or any file of
// "Key: value" lines) as key and value, the value with the white space
// around it trimmed. A line without a ':' is passed over.
func StatusFields(b []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(key, value []byte) bool) {
		b := b
		for len(b) > 0 {
			line := b
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				line, b = b[:i], b[i+1:]
			} else {
				b = nil
			}
			key, val, ok := bytes.Cut(line, []byte(":"))
			if !ok {
				continue
			}
			if !yield(key, bytes.TrimSpace(val)) {
				return
			}
		}
	}
}

// StatusField is the value of the first line of key in a status file.
func StatusField(b []byte, key string) ([]byte, bool) {
	for k, v := range StatusFields(b) {
		if string(k) == key {
			return v, true
		}
	}
	return nil, false
}
