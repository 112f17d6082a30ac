package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// event is one line of test2json's output.
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// test is one test (or subtest) of one run of a package.
type test struct {
	name    string
	results []string // pass, fail, skip, timeout, incomplete: one per run of it (-test.count)
	output  []string // its output lines, a goroutine dump left out
	hungIn  int      // the part it hung in (timeout), or -1
}

// part is one start of the binary: the first, or one resumed after a
// stop (gostdcmp run's -resume).
type part struct {
	rc        int      // exit status, -1 when not recorded
	secs      float64  // wall time
	pkgResult string   // pass or fail from the binary's final line; "" when it never got there
	stopped   string   // timeout (a stall or -test.timeout), or ""
	why       string   // what stopped it: the runner's note, or the testing package's panic line
	dump      []string // the goroutine dump the stop printed (SIGQUIT, or the timeout panic)
}

// runLog is one package's run in one mode, its parts merged: a test's
// results are those of the first part that reported it.
type runLog struct {
	tests     map[string]*test
	pkgOutput []string // output of no test (the runner's notes among it)
	parts     []part
	missing   bool
}

func slug(pkg string) string { return strings.ReplaceAll(pkg, "/", "_") }

func readRun(file string) (*runLog, error) {
	r := &runLog{tests: map[string]*test{}}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		r.missing = true
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	settled := map[string]bool{} // tests with results from an earlier part
	var cur *part
	state := map[string]string{} // this part: running, paused, done
	begin := func() {
		r.parts = append(r.parts, part{rc: -1})
		cur = &r.parts[len(r.parts)-1]
		state = map[string]string{}
	}
	end := func() {
		if cur == nil {
			return
		}
		for name, s := range state {
			if s != "running" || settled[name] {
				continue
			}
			t := r.get(name)
			if cur.stopped != "" {
				t.results = append(t.results, "timeout")
				t.hungIn = len(r.parts) - 1
			} else {
				t.results = append(t.results, "incomplete")
			}
		}
		for name := range state {
			if t := r.tests[name]; t != nil && len(t.results) > 0 {
				settled[name] = true
			}
		}
		cur = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			r.pkgOutput = append(r.pkgOutput, string(line))
			continue
		}
		if cur == nil {
			// The runner's notes after a part's exit status belong to
			// no part; "gostd: part N" starts the next one.
			if e.Test == "" && e.Action == "output" && strings.HasPrefix(e.Output, "gostd: ") && !strings.HasPrefix(e.Output, "gostd: part ") {
				r.pkgOutput = append(r.pkgOutput, strings.TrimRight(e.Output, "\n"))
				continue
			}
			begin()
		}
		if e.Action == "output" && cur.stopped != "" && strings.HasPrefix(e.Output, "SIGQUIT: quit") {
			cur.dump = []string{} // what the runner's SIGQUIT made the binary print
		}
		if e.Action == "output" && cur.dump != nil {
			cur.dump = append(cur.dump, strings.TrimRight(e.Output, "\n"))
			if !strings.HasPrefix(e.Output, "gostd: ") {
				continue
			}
		}
		if e.Test != "" && settled[e.Test] {
			continue // run again in a resumed part: the first part's result stands
		}
		switch e.Action {
		case "run", "cont":
			state[e.Test] = "running"
		case "pause":
			state[e.Test] = "paused"
		case "pass", "fail", "skip":
			if e.Test == "" {
				cur.pkgResult = e.Action
			} else {
				state[e.Test] = "done"
				r.get(e.Test).results = append(r.get(e.Test).results, e.Action)
			}
		case "output":
			out := strings.TrimRight(e.Output, "\n")
			if e.Test == "" {
				r.pkgOutput = append(r.pkgOutput, out)
			} else {
				r.get(e.Test).output = append(r.get(e.Test).output, out)
			}
			switch {
			case strings.HasPrefix(out, "panic: test timed out after"):
				cur.stopped = "timeout"
				if cur.why == "" {
					cur.why = out
				}
				cur.dump = []string{}
			case e.Test == "" && (strings.HasPrefix(out, "gostd: stalled") || strings.HasPrefix(out, "gostd: still running")):
				cur.stopped = "timeout"
				why, _, _ := strings.Cut(strings.TrimPrefix(out, "gostd: "), "; running:")
				cur.why = why + " (then SIGQUIT)"
			case e.Test == "" && strings.HasPrefix(out, "gostd: exit status "):
				var rc int
				var secs float64
				if _, err := fmt.Sscanf(out, "gostd: exit status %d after %fs", &rc, &secs); err == nil {
					cur.rc, cur.secs = rc, secs
				}
				end()
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	end()
	return r, nil
}

func (r *runLog) get(name string) *test {
	t := r.tests[name]
	if t == nil {
		t = &test{name: name, hungIn: -1}
		r.tests[name] = t
	}
	return t
}

// stoppedEarly reports whether any part of the run ended before the
// binary's own final line: some tests may never have run.
func (r *runLog) stoppedEarly() bool {
	for _, p := range r.parts {
		if p.pkgResult == "" || p.stopped != "" {
			return true
		}
	}
	return false
}

// state is the package's own result: pass, fail, timeout, stopped.
func (r *runLog) state() string {
	if r.missing || len(r.parts) == 0 {
		return "no log"
	}
	last := r.parts[len(r.parts)-1]
	switch {
	case last.stopped != "":
		return "timeout"
	case last.pkgResult == "":
		return fmt.Sprintf("stopped (exit %d)", last.rc)
	case last.pkgResult == "fail" || last.rc != 0:
		return "fail"
	}
	return "pass"
}

// summary renders a test's results: "pass", or "fail 1, pass 2" when the
// runs of -test.count disagree; "notrun" when it has none.
func summary(t *test) string {
	if t == nil || len(t.results) == 0 {
		return "notrun"
	}
	counts := map[string]int{}
	var kinds []string
	for _, r := range t.results {
		if counts[r] == 0 {
			kinds = append(kinds, r)
		}
		counts[r]++
	}
	if len(kinds) == 1 {
		return kinds[0]
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = k + " " + strconv.Itoa(counts[k])
	}
	return strings.Join(parts, ", ")
}

type counts struct{ pass, fail, skip, other int }

func (r *runLog) count() counts {
	var c counts
	for _, t := range r.tests {
		for _, res := range t.results {
			switch res {
			case "pass":
				c.pass++
			case "fail":
				c.fail++
			case "skip":
				c.skip++
			default:
				c.other++
			}
		}
	}
	return c
}

// column is the run's cell in the counts table.
func (r *runLog) column() string {
	if r.missing {
		return "(no log)"
	}
	c := r.count()
	var secs float64
	var rcs []string
	nonzero := false
	for _, p := range r.parts {
		secs += p.secs
		rcs = append(rcs, strconv.Itoa(p.rc))
		if p.rc != 0 {
			nonzero = true
		}
	}
	s := fmt.Sprintf("%5d %4d %4d %4d %7.1fs", c.pass, c.fail, c.skip, c.other, secs)
	if nonzero {
		s += " exit " + strings.Join(rcs, ",")
	}
	return s
}

// hangStack picks, from the goroutine dump of the part a test hung in,
// the goroutines of tests that were still running — those with a frame of
// the test's own function or its helper (TestSplice's testSplice) first,
// then any other test goroutine not waiting for its subtests or its turn
// (t.Run, t.Parallel) — and renders each as its state and first frames
// outside the runtime: where it hung.
func hangStack(dump []string, name string, max int) []string {
	top, _, _ := strings.Cut(name, "/")
	helper := "." + strings.ToLower(top[:1]) + top[1:]
	type pick struct {
		lines []string
		named bool
	}
	var picks []pick
	var block []string
	flush := func() {
		defer func() { block = nil }()
		if len(block) == 0 {
			return
		}
		named, test := false, false
		var frames []string
		for i := 1; i < len(block); i++ {
			fn := block[i]
			if strings.HasPrefix(fn, "\t") || strings.HasPrefix(fn, "created by ") {
				continue
			}
			for _, n := range []string{"." + top, helper} {
				if strings.Contains(fn, n+"(") || strings.Contains(fn, n+".") {
					named = true
				}
			}
			if strings.HasPrefix(fn, "testing.tRunner(") {
				test = true
				break
			}
			if strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "internal/") {
				continue
			}
			where := ""
			if i+1 < len(block) && strings.HasPrefix(block[i+1], "\t") {
				where = strings.Fields(strings.TrimSpace(block[i+1]))[0]
				where = where[strings.LastIndex(where, "/")+1:]
			}
			if j := strings.LastIndex(fn, "("); j > 0 {
				fn = fn[:j]
			}
			frames = append(frames, fn+" "+where)
		}
		if !named && !test || len(frames) == 0 ||
			strings.HasPrefix(frames[0], "testing.(*T).Run ") || strings.HasPrefix(frames[0], "testing.(*T).Parallel ") {
			return
		}
		if len(frames) > 5 {
			frames = frames[:5]
		}
		lines := []string{block[0]}
		for _, f := range frames {
			lines = append(lines, "    "+f)
		}
		picks = append(picks, pick{lines, named})
	}
	for _, l := range dump {
		switch {
		case strings.HasPrefix(l, "goroutine ") && strings.HasSuffix(l, ":"):
			flush()
			block = []string{l}
		case strings.TrimSpace(l) == "":
			flush()
		case block != nil:
			block = append(block, l)
		}
	}
	flush()
	sort.SliceStable(picks, func(i, j int) bool { return picks[i].named && !picks[j].named })
	var out []string
	for i, p := range picks {
		if i == max {
			break
		}
		out = append(out, p.lines...)
	}
	return out
}
