package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

// runMain is `gostdcmp run`: CMD through test2json into FILE, watched for
// stalls, resumed past the tests that hung or crashed it.
func runMain(args []string) int {
	fs := flag.NewFlagSet("gostdcmp run", flag.ExitOnError)
	pkg := fs.String("pkg", "", "the package `PATH` (test2json -p)")
	out := fs.String("o", "", "write the events to `FILE`")
	stall := fs.Duration("stall", 30*time.Second, "stop the binary when tests run and none starts or ends for `DUR` (0: never)")
	timeout := fs.Duration("timeout", 0, "the binary's -test.timeout `DUR`: a part still running a minute after it is stopped (0: never)")
	resume := fs.Int("resume", 10, "run again past the tests that hung or crashed the binary, at most `N` times")
	fs.Parse(args)
	cmd := fs.Args()
	if *pkg == "" || *out == "" || len(cmd) == 0 {
		usage()
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gostdcmp:", err)
		return 2
	}
	defer f.Close()
	t2j, err := test2jsonPath()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gostdcmp:", err)
		return 2
	}
	w := &eventWriter{w: bufio.NewWriter(f), pkg: *pkg}
	defer w.w.Flush()
	var skip []string
	for part := 1; ; part++ {
		argv := append([]string(nil), cmd...)
		if len(skip) > 0 {
			argv = append(argv, "-test.skip="+skipPattern(skip))
		}
		res, err := runPart(w, t2j, argv, *stall, *timeout)
		if err != nil {
			w.note("could not run %s: %v", cmd[0], err)
			fmt.Fprintln(os.Stderr, "gostdcmp:", err)
			return 2
		}
		w.note("exit status %d after %.1fs", res.rc, res.secs)
		fmt.Fprintf(os.Stderr, "exit %d after %.1fs", res.rc, res.secs)
		if res.stopped != "" {
			fmt.Fprintf(os.Stderr, " (%s)", res.stopped)
		}
		fmt.Fprintln(os.Stderr)
		if res.finished && res.stopped == "" {
			break
		}
		if len(res.running) == 0 {
			w.note("stopped with no test running: not resumed")
			break
		}
		if part > *resume {
			w.note("not resumed: resumed %d times already", *resume)
			break
		}
		skip = append(skip, res.running...)
		w.note("part %d: resumed with -test.skip=%s", part+1, skipPattern(skip))
		fmt.Fprintf(os.Stderr, "    resumed past %s: ", strings.Join(res.running, ", "))
	}
	if err := w.w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "gostdcmp:", err)
		return 2
	}
	return 0
}

func skipPattern(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(q, "|") + ")$"
}

// test2jsonPath finds `go tool test2json`'s program: in GOTOOLDIR, or
// (Go 1.24 and later build it on demand) where `go tool -n` says.
func test2jsonPath() (string, error) {
	if out, err := exec.Command("go", "env", "GOTOOLDIR").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "test2json")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	out, err := exec.Command("go", "tool", "-n", "test2json").Output()
	if err != nil {
		return "", fmt.Errorf("go tool -n test2json: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// eventWriter writes the stream: test2json's lines as they come, and the
// runner's own notes as output events of no test.
type eventWriter struct {
	w   *bufio.Writer
	pkg string
}

func (e *eventWriter) line(b []byte) {
	e.w.Write(b)
	e.w.WriteByte('\n')
}

func (e *eventWriter) note(format string, args ...any) {
	b, _ := json.Marshal(struct {
		Time    time.Time
		Action  string
		Package string
		Output  string
	}{time.Now(), "output", e.pkg, "gostd: " + fmt.Sprintf(format, args...) + "\n"})
	e.line(b)
	e.w.Flush()
}

type partResult struct {
	rc       int
	secs     float64
	finished bool     // the binary's final PASS or FAIL was seen
	stopped  string   // why the runner stopped it ("" when it did not)
	running  []string // top-level tests running when it ended
}

func runPart(w *eventWriter, t2jPath string, argv []string, stall, timeout time.Duration) (partResult, error) {
	var res partResult
	pr, pw, err := os.Pipe()
	if err != nil {
		return res, err
	}
	t2j := exec.Command(t2jPath, "-t", "-p", w.pkg)
	t2j.Stdin = pr
	t2j.Stderr = os.Stderr
	t2jOut, err := t2j.StdoutPipe()
	if err != nil {
		return res, err
	}
	if err := t2j.Start(); err != nil {
		return res, err
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdin = os.Stdin
	c.Stdout = pw
	c.Stderr = pw
	start := time.Now()
	if err := c.Start(); err != nil {
		pw.Close()
		pr.Close()
		t2j.Wait()
		return res, err
	}
	pw.Close()
	pr.Close()

	lines := make(chan []byte, 256)
	go func() {
		sc := bufio.NewScanner(t2jOut)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(lines)
	}()
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()

	state := map[string]string{} // test: running, paused, done
	progress := time.Now()
	var killAt, exitedAt time.Time
	stop := func(why string) {
		if res.stopped != "" {
			return
		}
		res.stopped = why
		w.note("%s; running: %s", why, strings.Join(runningTests(state, false), ", "))
		c.Process.Signal(syscall.SIGQUIT)
		killAt = time.Now().Add(15 * time.Second)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var waitErr error
	done := false
	for lines != nil {
		select {
		case b, ok := <-lines:
			if !ok {
				lines = nil
				break
			}
			w.line(b)
			var e event
			if json.Unmarshal(b, &e) != nil {
				break
			}
			switch e.Action {
			case "run", "cont":
				state[e.Test] = "running"
				progress = time.Now()
			case "pause":
				state[e.Test] = "paused"
				progress = time.Now()
			case "pass", "fail", "skip":
				if e.Test == "" {
					res.finished = true
				} else {
					state[e.Test] = "done"
					progress = time.Now()
				}
			}
		case err := <-exited:
			waitErr, done, exitedAt = err, true, time.Now()
			exited = nil
		case now := <-tick.C:
			w.w.Flush()
			switch {
			case done:
				// Something the binary started may hold the pipe open;
				// test2json then never sees the end of its input.
				if now.Sub(exitedAt) > 10*time.Second {
					w.note("the binary exited but its output stayed open for 10s: stopped reading")
					t2j.Process.Kill()
					for range lines {
					}
					lines = nil
				}
			case !killAt.IsZero() && now.After(killAt):
				c.Process.Kill()
				killAt = time.Time{}
			case stall > 0 && now.Sub(progress) > stall && len(runningTests(state, false)) > 0:
				stop(fmt.Sprintf("stalled: no test started or ended for %s", stall))
			case timeout > 0 && now.Sub(start) > timeout+time.Minute:
				stop("still running a minute after its -test.timeout")
			}
		}
	}
	if !done {
		waitErr = <-exited
	}
	t2j.Wait()
	res.secs = time.Since(start).Seconds()
	res.rc = 0
	if waitErr != nil {
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			return res, waitErr
		}
		res.rc = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.rc = 128 + int(ws.Signal())
		}
	}
	res.running = runningTests(state, true)
	return res, nil
}

// runningTests lists the tests running (not paused, not done), or only
// their top-level names.
func runningTests(state map[string]string, top bool) []string {
	seen := map[string]bool{}
	var out []string
	for name, s := range state {
		if s != "running" {
			continue
		}
		if top {
			name, _, _ = strings.Cut(name, "/")
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
