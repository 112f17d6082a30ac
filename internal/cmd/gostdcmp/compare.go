package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// diff is one test whose result differs between the runs.
type diff struct {
	pkg, name   string
	bare, pw    string
	parent      bool // a subtest of it differs too
	consequence bool // never run because the binary stopped at a hang or crash
	known       *knownEntry
	lines       []string
	linesFrom   string
	rerun       string // "" (not re-run, or the same again), or the re-run's results when they differ from the first: not reproduced
}

type knownEntry struct {
	pkg, pattern, reason string
	line                 int
	used                 bool
	only                 string // "root" or "non-root": expected in that run only ("[root] …" in the file)
}

func readKnown(file string) ([]*knownEntry, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*knownEntry
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fs := strings.Fields(l)
		if len(fs) < 3 {
			return nil, fmt.Errorf("%s:%d: want \"package TestName reason\"", file, i+1)
		}
		if _, err := path.Match(fs[1], ""); err != nil {
			return nil, fmt.Errorf("%s:%d: bad pattern %q: %v", file, i+1, fs[1], err)
		}
		rest := strings.TrimSpace(strings.TrimPrefix(l, fs[0]))
		reason := strings.TrimSpace(strings.TrimPrefix(rest, fs[1]))
		k := &knownEntry{pkg: fs[0], pattern: fs[1], reason: reason, line: i + 1}
		for _, only := range []string{"root", "non-root"} {
			if r, ok := strings.CutPrefix(reason, "["+only+"]"); ok {
				k.only, k.reason = only, strings.TrimSpace(r)
			}
		}
		out = append(out, k)
	}
	return out, nil
}

func matchKnown(known []*knownEntry, pkg, name string) *knownEntry {
	for _, k := range known {
		if k.pkg != pkg {
			continue
		}
		if ok, _ := path.Match(k.pattern, name); ok || k.pattern == name {
			return k
		}
	}
	return nil
}

// framing reports the lines every test has (=== RUN, --- PASS: …),
// which say nothing about why it failed.
func framing(l string) bool {
	t := strings.TrimSpace(l)
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS:", "--- FAIL:", "--- SKIP:"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return t == ""
}

func firstLines(lines []string, n int) []string {
	var out []string
	for _, l := range lines {
		if framing(l) {
			continue
		}
		if len(out) == n {
			out = append(out, "…")
			break
		}
		out = append(out, l)
	}
	return out
}

func lastLines(lines []string, n int) []string {
	var keep []string
	for _, l := range lines {
		if !framing(l) {
			keep = append(keep, l)
		}
	}
	if len(keep) > n {
		keep = append([]string{"…"}, keep[len(keep)-n:]...)
	}
	return keep
}

// rank orders results from good to bad, to pick the run whose output
// explains a difference.
func rank(s string) int {
	switch s {
	case "pass":
		return 0
	case "skip":
		return 1
	case "notrun":
		return 2
	}
	return 3
}

// compare lists the tests whose results differ, parents and consequences
// marked, and the package's own difference when no test explains it.
func compare(pkg string, bare, pw *runLog, nlines int) []*diff {
	names := map[string]bool{}
	for n := range bare.tests {
		names[n] = true
	}
	for n := range pw.tests {
		names[n] = true
	}
	var diffs []*diff
	byName := map[string]*diff{}
	for n := range names {
		b, p := summary(bare.tests[n]), summary(pw.tests[n])
		if b == p {
			continue
		}
		d := &diff{pkg: pkg, name: n, bare: b, pw: p}
		if (p == "notrun" && pw.stoppedEarly()) || (b == "notrun" && bare.stoppedEarly()) {
			d.consequence = true
		}
		worse, from := pw.tests[n], "permwrap"
		if rank(b) > rank(p) {
			worse, from = bare.tests[n], "bare"
		}
		if worse != nil {
			d.lines, d.linesFrom = firstLines(worse.output, nlines), from
			if worse.hungIn >= 0 {
				r := pw
				if from == "bare" {
					r = bare
				}
				hung := r.parts[worse.hungIn]
				d.lines = append([]string{"hung: " + hung.why}, d.lines...)
				d.lines = append(d.lines, hangStack(hung.dump, n, 2)...)
			}
		}
		diffs = append(diffs, d)
		byName[n] = d
	}
	for _, d := range diffs {
		for n, o := range byName {
			if strings.HasPrefix(n, d.name+"/") && !o.consequence {
				d.parent = true
				break
			}
		}
	}
	blamed := false
	for _, d := range diffs {
		if !d.consequence && !d.parent {
			blamed = true
		}
	}
	if bs, ps := bare.state(), pw.state(); bs != ps && !blamed {
		d := &diff{pkg: pkg, name: "(package)", bare: bs, pw: ps}
		src, from := pw, "permwrap"
		if ps == "pass" {
			src, from = bare, "bare"
		}
		d.lines, d.linesFrom = lastLines(src.pkgOutput, nlines), from
		diffs = append(diffs, d)
	}
	sort.Slice(diffs, func(i, j int) bool { return diffs[i].name < diffs[j].name })
	return diffs
}

func readPair(dir, pkg, suffix string) (bare, pw *runLog, err error) {
	s := slug(pkg)
	if bare, err = readRun(filepath.Join(dir, s+".bare"+suffix+".json")); err != nil {
		return nil, nil, err
	}
	if pw, err = readRun(filepath.Join(dir, s+".permwrap"+suffix+".json")); err != nil {
		return nil, nil, err
	}
	return bare, pw, nil
}

// rerunMain is `gostdcmp rerun`: the -test.run pattern of the package's
// differing top-level tests, those that hung left out.
func rerunMain(args []string) int {
	fs := flag.NewFlagSet("gostdcmp rerun", flag.ExitOnError)
	dir := fs.String("dir", "", "the logs `DIR`")
	fs.Parse(args)
	if *dir == "" || fs.NArg() != 1 {
		usage()
	}
	pkg := fs.Arg(0)
	bare, pw, err := readPair(*dir, pkg, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gostdcmp:", err)
		return 2
	}
	hung := map[string]bool{}
	var tops []string
	seen := map[string]bool{}
	diffs := compare(pkg, bare, pw, 0)
	for _, d := range diffs {
		top, _, _ := strings.Cut(d.name, "/")
		if d.bare == "timeout" || d.pw == "timeout" {
			hung[top] = true
		}
	}
	for _, d := range diffs {
		top, _, _ := strings.Cut(d.name, "/")
		if d.consequence || d.name == "(package)" || hung[top] || seen[top] {
			continue
		}
		seen[top] = true
		tops = append(tops, top)
	}
	if len(tops) > 0 {
		sort.Strings(tops)
		fmt.Println(skipPattern(tops))
	}
	return 0
}

func compareMain(args []string) int {
	fs := flag.NewFlagSet("gostdcmp compare", flag.ExitOnError)
	dir := fs.String("dir", "", "the logs `DIR`")
	knownFile := fs.String("known", "", "the known differences `FILE`")
	nlines := fs.Int("lines", 8, "show the first `N` output lines of each differing test")
	uid := fs.Int("uid", os.Getuid(), "the `UID` the tests ran as: entries marked [root] or [non-root] are stale only in that run")
	fs.Parse(args)
	if *dir == "" || fs.NArg() == 0 {
		usage()
	}
	known, err := readKnown(*knownFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gostdcmp:", err)
		return 2
	}
	who := "non-root"
	if *uid == 0 {
		who = "root"
	}
	status, err := report(os.Stdout, *dir, fs.Args(), known, *nlines, who)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gostdcmp:", err)
		return 2
	}
	return status
}

func report(w io.Writer, dir string, pkgs []string, known []*knownEntry, nlines int, who string) (int, error) {
	var all []*diff
	fmt.Fprintln(w, "== tests and subtests by result, and wall time (exit status of each part when not 0)")
	fmt.Fprintf(w, "%-24s  %-34s  %-34s\n", "", "bare", "permwrap")
	fmt.Fprintf(w, "%-24s  %-34s  %-34s\n", "package", " pass fail skip hung", " pass fail skip hung")
	inRun := map[string]bool{}
	for _, pkg := range pkgs {
		inRun[pkg] = true
		bare, pw, err := readPair(dir, pkg, "")
		if err != nil {
			return 2, err
		}
		fmt.Fprintf(w, "%-24s  %-34s  %-34s\n", pkg, bare.column(), pw.column())
		diffs := compare(pkg, bare, pw, nlines)
		// The differing tests run again, when scripts/gostd did: a
		// difference that does not come out the same again was not
		// reproduced.
		rb, rp, err := readPair(dir, pkg, ".rerun")
		if err != nil {
			return 2, err
		}
		if !rb.missing && !rp.missing {
			for _, d := range diffs {
				b, p := rb.tests[d.name], rp.tests[d.name]
				if d.parent || d.consequence || (b == nil && p == nil) {
					continue
				}
				if sb, sp := summary(b), summary(p); sb != d.bare || sp != d.pw {
					d.rerun = "bare " + sb + ", permwrap " + sp
				}
			}
		}
		for _, d := range diffs {
			if d.consequence {
				continue
			}
			if d.known = matchKnown(known, pkg, d.name); d.known != nil {
				d.known.used = true
			}
		}
		all = append(all, diffs...)
	}

	show := func(d *diff) {
		tag := "NOT KNOWN"
		if d.known != nil {
			tag = "known: " + d.known.reason
		}
		fmt.Fprintf(w, "%s %s: %s → %s   [%s]\n", d.pkg, d.name, d.bare, d.pw, tag)
		if len(d.lines) > 0 {
			fmt.Fprintf(w, "    (%s run's output)\n", d.linesFrom)
			for _, l := range d.lines {
				fmt.Fprintf(w, "    | %s\n", l)
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "== differences (bare → permwrap)")
	unknown, nknown, flaky := 0, 0, 0
	for _, d := range all {
		if d.parent || d.consequence || d.rerun != "" {
			continue
		}
		show(d)
		if d.known != nil {
			nknown++
		} else {
			unknown++
		}
	}
	for _, d := range all {
		if d.rerun == "" {
			continue
		}
		if flaky == 0 {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "== differences not reproduced: run again, they came out otherwise (not counted)")
		}
		flaky++
		fmt.Fprintf(w, "(re-run: %s) ", d.rerun)
		show(d)
	}
	var parents, conseq []string
	for _, d := range all {
		switch {
		case d.consequence:
			conseq = append(conseq, fmt.Sprintf("%s %s (%s → %s)", d.pkg, d.name, d.bare, d.pw))
		case d.parent:
			parents = append(parents, fmt.Sprintf("%s %s (%s → %s)", d.pkg, d.name, d.bare, d.pw))
		}
	}
	if len(parents) > 0 {
		fmt.Fprintf(w, "\nparents of the differences above (%d):\n", len(parents))
		for _, p := range parents {
			fmt.Fprintln(w, "    "+p)
		}
	}
	if len(conseq) > 0 {
		fmt.Fprintf(w, "\nnot run because the binary hung or crashed at a difference above (%d):\n", len(conseq))
		for i, p := range conseq {
			if i == 20 {
				fmt.Fprintf(w, "    … and %d more\n", len(conseq)-20)
				break
			}
			fmt.Fprintln(w, "    "+p)
		}
	}
	var stale []*knownEntry
	for _, k := range known {
		if inRun[k.pkg] && !k.used && (k.only == "" || k.only == who) {
			stale = append(stale, k)
		}
	}
	if len(stale) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "== known differences that did not occur (stale)")
		for _, k := range stale {
			fmt.Fprintf(w, "line %d: %s %s %s\n", k.line, k.pkg, k.pattern, k.reason)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "== %d differences: %d known, %d not known; %d not reproduced; %d stale known entries\n",
		nknown+unknown, nknown, unknown, flaky, len(stale))
	if unknown > 0 {
		return 1, nil
	}
	return 0, nil
}
