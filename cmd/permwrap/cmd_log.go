package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/display"
)

const logUsage = `usage: permwrap log [--file F] [--follow] [--since DUR] [--decided-by KIND] [--denied] [--json]

Show the review log, one line per decision: time, outcome, surface,
value, and who decided (a summary line for a process's allowed reads).
The rotated older files (F.3, F.2, F.1) are read first, oldest first.

  --file F           the log to read (default $XDG_STATE_HOME/permwrap/review.jsonl)
  --follow           keep printing decisions as they are written
  --since DUR        only records newer than DUR ago (90s, 15m, 2h, 3d) or than a time (RFC 3339)
  --decided-by KIND  only decisions made by KIND: ` + "user, authorizer, rule, session_approval, yolo, audit, kernel, unavailable, error, forwarded" + `
  --denied           only denials
  --json             print the matching records as they are stored (every record kind)
`

// logFilter is what `permwrap log` selects.
type logFilter struct {
	since     time.Time
	decidedBy string
	denied    bool
	json      bool
}

// isDecision reports whether a record is the outcome of a request.
func isDecision(e authority.Event) bool {
	switch e {
	case authority.EventAllowed, authority.EventDenied, authority.EventApproved, authority.EventRejected, authority.EventTimedOut,
		authority.EventWouldAsk, authority.EventWouldDeny, authority.EventAnswered, authority.EventAllowedReads,
		authority.EventAllowedWrites:
		return true
	}
	return false
}

func (f logFilter) match(r authority.LogRecord) bool {
	if !f.since.IsZero() && r.Time.Before(f.since) {
		return false
	}
	if f.denied || f.decidedBy != "" || !f.json {
		// The readable view also says where records are missing.
		dropped := r.Event == authority.EventDropped && !f.denied && f.decidedBy == ""
		if !isDecision(r.Event) && !dropped {
			return false
		}
	}
	if f.denied && (r.Action != "deny" || r.Event == authority.EventAnswered) {
		return false
	}
	if f.decidedBy != "" && (r.DecidedBy == nil || r.DecidedBy.Kind() != f.decidedBy) {
		return false
	}
	return true
}

func cmdLog(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("permwrap log", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, logUsage) }
	file := fs.String("file", "", "")
	follow := fs.Bool("follow", false, "")
	since := fs.String("since", "", "")
	decidedBy := fs.String("decided-by", "", "")
	denied := fs.Bool("denied", false, "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitInternal
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "permwrap log: unexpected argument %q\n%s", fs.Arg(0), logUsage)
		return exitInternal
	}
	f := logFilter{decidedBy: *decidedBy, denied: *denied, json: *asJSON}
	if f.decidedBy != "" && !slices.Contains(authority.DecidedByKinds, f.decidedBy) {
		fmt.Fprintf(stderr, "permwrap log: --decided-by %q is not one of %s\n", f.decidedBy, strings.Join(authority.DecidedByKinds, ", "))
		return exitInternal
	}
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			fmt.Fprintf(stderr, "permwrap log: --since: %v\n", err)
			return exitInternal
		}
		f.since = t
	}
	path := *file
	if path == "" {
		var err error
		if path, err = authority.DefaultLogPath(); err != nil {
			fmt.Fprintf(stderr, "permwrap log: %v\n", err)
			return exitInternal
		}
	}
	color := !f.json && isTerminal(stdout) && os.Getenv("NO_COLOR") == ""

	ctx := context.Background()
	if *follow {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	return showLog(ctx, path, *follow, f, color, stdout, stderr)
}

// showLog prints the matching records of the log at path — its rotated
// older files first — and with follow keeps reading what is appended
// until ctx ends. A request's outcome is printed once: a second outcome
// record with a request id already shown is skipped.
func showLog(ctx context.Context, path string, follow bool, f logFilter, color bool, stdout, stderr io.Writer) int {
	files := authority.RotatedLogs(path)
	older, path := files[:len(files)-1], files[len(files)-1]
	file, err := os.Open(path)
	for err != nil && follow && errors.Is(err, os.ErrNotExist) {
		// Following a log that does not exist yet: wait for permwrap to create it.
		select {
		case <-ctx.Done():
			return exitOK
		case <-time.After(followPoll):
		}
		file, err = os.Open(path)
	}
	if err != nil && !(errors.Is(err, os.ErrNotExist) && len(older) > 0) {
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(stderr, "permwrap log: no review log at %s (nothing decided yet, or see --file)\n", path)
			return exitFailure
		}
		fmt.Fprintf(stderr, "permwrap log: %v\n", err)
		return exitInternal
	}
	defer func() {
		if file != nil {
			file.Close()
		}
	}()

	broken := 0
	seen := map[authority.RequestID]bool{}
	emit := func(r authority.LogRecord) error {
		if !f.match(r) {
			return nil
		}
		if isDecision(r.Event) && r.RequestID != "" {
			if seen[r.RequestID] {
				return nil
			}
			if len(seen) >= maxSeen {
				clear(seen)
			}
			seen[r.RequestID] = true
		}
		var err error
		if f.json {
			_, err = fmt.Fprintf(stdout, "%s\n", r.Raw)
		} else {
			_, err = fmt.Fprintln(stdout, formatRecord(r, color))
		}
		return err
	}
	for _, p := range older {
		of, oerr := os.Open(p)
		if oerr != nil {
			continue // rotated away while we read
		}
		n, rerr := authority.ReadLog(of, emit)
		of.Close()
		broken += n
		if rerr != nil {
			fmt.Fprintf(stderr, "permwrap log: %v\n", rerr)
			return exitInternal
		}
	}
	if file != nil {
		n, rerr := authority.ReadLog(file, emit)
		broken += n
		err = rerr
	} else {
		err = nil
	}
	if err == nil && follow && file != nil {
		broken += followLog(ctx, path, &file, emit, stderr)
	}
	if broken > 0 {
		fmt.Fprintf(stderr, "permwrap log: skipped %d broken line(s)\n", broken)
	}
	if err != nil {
		fmt.Fprintf(stderr, "permwrap log: %v\n", err)
		return exitInternal
	}
	return exitOK
}

// maxSeen bounds the request ids remembered to print each outcome once.
const maxSeen = 1 << 20

const followPoll = 200 * time.Millisecond

// followLog reads what is appended to *file after its current offset,
// line by line, until ctx ends. A file that shrinks or is replaced (log
// rotation) is read again from its start.
func followLog(ctx context.Context, path string, file **os.File, emit func(authority.LogRecord) error, stderr io.Writer) (broken int) {
	var partial []byte
	// consume takes what was read; false when emit wants no more.
	consume := func(b []byte) bool {
		partial = append(partial, b...)
		for {
			i := bytes.IndexByte(partial, '\n')
			if i < 0 {
				break
			}
			line := partial[:i]
			if len(bytes.TrimSpace(line)) > 0 {
				if rec, perr := authority.ParseLogLine(line); perr != nil {
					broken++
				} else if emit(rec) != nil {
					return false
				}
			}
			partial = partial[i+1:]
		}
		if len(partial) > 1<<20 { // a line that never ends is not a record
			partial, broken = nil, broken+1
		}
		return true
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := (*file).Read(buf)
		if n > 0 {
			if !consume(buf[:n]) {
				return broken
			}
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			fmt.Fprintf(stderr, "permwrap log: %v\n", err)
			return broken
		}
		select {
		case <-ctx.Done():
			return broken
		case <-time.After(followPoll):
		}
		if rotated(*file, path) {
			if nf, err := os.Open(path); err == nil {
				// The records the old file got before it was rotated
				// first (a rotated file is not written again).
				if rest, _ := io.ReadAll(*file); len(rest) > 0 && !consume(rest) {
					nf.Close()
					return broken
				}
				(*file).Close()
				*file, partial = nf, nil
			}
		}
	}
}

// rotated reports whether path now names a different file than f, or f
// was truncated below the offset already read.
func rotated(f *os.File, path string) bool {
	cur, err1 := f.Stat()
	now, err2 := os.Stat(path)
	if err1 != nil || err2 != nil {
		return false
	}
	if !os.SameFile(cur, now) {
		return true
	}
	off, err := f.Seek(0, io.SeekCurrent)
	return err == nil && now.Size() < off
}

// parseSince reads a duration ago (Go syntax, plus "d" for days) or an
// RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || n < 0 {
			return time.Time{}, fmt.Errorf("%q is not a duration like 90s, 15m, 2h or 3d, nor an RFC 3339 time", s)
		}
		return now.Add(-time.Duration(n * 24 * float64(time.Hour))), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is not a duration like 90s, 15m, 2h or 3d, nor an RFC 3339 time", s)
	}
	return now.Add(-d), nil
}

var outcomeWords = map[authority.Event]string{
	authority.EventAllowed:  "allowed",
	authority.EventDenied:   "denied",
	authority.EventApproved: "approved",
	authority.EventRejected: "rejected",
	authority.EventTimedOut: "timed out",
	// Nothing could change: the kernel's own answer, nobody asked.
	authority.EventAnswered: "answered",
	// Audit mode: allowed, but the policy would not have.
	authority.EventWouldAsk:  "would ask",
	authority.EventWouldDeny: "would deny",
	// A process's allowed reads, counted (readAllows "summary").
	authority.EventAllowedReads: "allowed",
	// A process's allowed writes in the scratch directories, counted.
	authority.EventAllowedWrites: "allowed",
}

const (
	ansiReset  = "\x1b[0m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiDim    = "\x1b[2m"
)

// formatRecord is one readable line:
//
//	2026-12-01 06:00:00  denied     write  /etc/hosts  by rule write:/etc/** (deny, policy.jsonc:12:5) — system files
//	2026-12-01 06:00:01  rejected   write  /etc/foo  asked by rule write:* (ask, default.jsonc:101:7); no one to answer (headless)
//	2026-12-01 06:00:02  allowed    read   212 reads by rg (pid 42): /usr/share/doc 180, /usr/share/man 30, … — by rule read:* (allow, default.jsonc:20:7)
//	2026-12-01 06:00:03  allowed    write  96 writes by compile (pid 43): /tmp/go-build1234 96 — by rule write:/tmp/** (allow, default.jsonc:113:7)
func formatRecord(r authority.LogRecord, color bool) string {
	word := outcomeWords[r.Event]
	if word == "" {
		word = string(r.Event)
	}
	var b strings.Builder
	stamp := r.Time.Local().Format("2006-01-02 15:04:05")
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return code + s + ansiReset
	}
	b.WriteString(paint(ansiDim, stamp))
	b.WriteString("  ")
	code := ansiGreen
	switch r.Event {
	case authority.EventDenied, authority.EventRejected:
		code = ansiRed
	case authority.EventTimedOut, authority.EventWouldAsk, authority.EventWouldDeny:
		code = ansiYellow
	case authority.EventAnswered, authority.EventAllowedReads, authority.EventAllowedWrites:
		code = ansiDim
	}
	if r.Event == authority.EventDropped {
		b.WriteString(paint(ansiYellow, fmt.Sprintf("%-9s", "missing")))
		fmt.Fprintf(&b, "  %d record(s) not written: %s", r.Count, safeText(r.What))
		return b.String()
	}
	b.WriteString(paint(code, fmt.Sprintf("%-9s", word)))
	if r.Event == authority.EventAllowedReads || r.Event == authority.EventAllowedWrites {
		fmt.Fprintf(&b, "  %-5s  %s — %s", safeText(r.Surface), safeText(readsSummary(r)), safeText(decider(r)))
	} else {
		fmt.Fprintf(&b, "  %-5s  %s  %s", safeText(r.Surface), safeText(r.Value), safeText(decider(r)))
		if r.Reason != "" && !unanswered(r) {
			b.WriteString(" — " + safeText(r.Reason))
		}
	}
	if r.Node != "" {
		b.WriteString(" [node " + safeText(r.Node) + "]")
	}
	return b.String()
}

// unanswered: an ask nobody could answer (headless, timed out, the
// prompt unavailable); its reason is what decider says.
func unanswered(r authority.LogRecord) bool {
	_, ok := r.DecidedBy.(authority.ByUnavailable)
	return ok
}

// decider says who decided: the rule (its pattern, action and origin or
// place) when the record names it, or for an ask nobody answered the
// rule that asked and why nobody did.
func decider(r authority.LogRecord) string {
	hasRule := r.Rule.Pattern != "" || r.Rule.Surface != engine.SurfaceInvalid
	switch by := r.DecidedBy.(type) {
	case nil:
		return "by unknown"
	case authority.ByUnavailable:
		asked := "asked"
		if hasRule {
			asked += " by " + r.Rule.String()
		}
		switch by.Reason {
		case "", authority.ReasonUnavailable:
			return asked + "; no one to answer (headless)"
		case authority.ReasonTimedOut:
			return asked + "; no answer in time"
		}
		return asked + "; " + by.Reason
	case authority.ByRule:
		if hasRule && r.Rule.Pattern == by.Pattern && r.Rule.Surface == by.Surface {
			return "by " + r.Rule.String()
		}
		return "by " + by.String()
	}
	return "by " + r.DecidedBy.String()
}

// readsSummary is a read summary's middle: "212 reads by rg (pid 42):
// /usr/share/doc 180, /usr/share/man 30, …".
func readsSummary(r authority.LogRecord) string {
	prog := r.Program
	if prog == "" {
		prog = "?"
	}
	what := "reads"
	if r.Event == authority.EventAllowedWrites {
		what = "writes"
	}
	s := fmt.Sprintf("%d %s by %s (pid %d)", r.Count, what, prog, r.PID)
	if r.Processes > 1 {
		s = fmt.Sprintf("%d %s by %s (%d processes, the first pid %d)", r.Count, what, prog, r.Processes, r.PID)
	}
	for i, d := range r.Dirs {
		if i == 0 {
			s += ": "
		} else {
			s += ", "
		}
		if i == 3 {
			s += "…"
			break
		}
		s += fmt.Sprintf("%s %d", d.Dir, d.Count)
	}
	return s
}

// safeText keeps a log value from driving the terminal: the log holds
// paths and command lines the agent chose. It is the one sanitiser
// (internal/display), which also escapes bidi overrides.
func safeText(s string) string { return display.Printable(s) }

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
