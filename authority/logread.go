package authority

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/permwrap/permwrap/engine"
)

// LogRecord is one review-log line read back. Fields a record does not
// have are zero; Raw is the line as written, for pass-through.
type LogRecord struct {
	Time      time.Time
	Event     Event
	RequestID RequestID
	PID       int
	Exe       string
	Comm      string
	Surface   string
	Access    string
	Value     string
	// Paths are both names of a rename, exchange or link (from, to),
	// when the record has them.
	Paths     []string
	Action    string
	Reason    string
	Node      string
	Run       string    // the run's id (LogOptions.Run); "" in older logs
	DecidedBy DecidedBy // nil when absent or unreadable
	// Rule is the rule that answered the request as first judged (for an
	// audited request, the rule that would have asked or denied); the
	// zero Rule when the record names none or it is unreadable.
	Rule engine.Rule
	// A permission_request.allowed_reads summary: how many reads, by
	// which program, counted by directory (most first).
	Count   int64
	Program string
	// Processes is how many of the program's processes the summary
	// counts (PID is the first).
	Processes int64
	Dirs      []DirCount
	// What a review_log.dropped record says was dropped.
	What string
	Raw  []byte
}

// DirCount is a directory of a read summary and its reads.
type DirCount struct {
	Dir   string `json:"dir"`
	Count int64  `json:"count"`
}

// maxLogLine bounds one line read back; longer lines are skipped as
// broken (the writer caps fields, so only a foreign file has them).
const maxLogLine = 1 << 20

// ParseLogLine reads one review-log line. It fails on anything that is
// not a JSON object with a time and an event.
func ParseLogLine(line []byte) (LogRecord, error) {
	var w struct {
		Time      string          `json:"time"`
		Event     string          `json:"event"`
		RequestID string          `json:"requestId"`
		PID       int             `json:"pid"`
		Exe       string          `json:"exe"`
		Comm      string          `json:"comm"`
		Surface   string          `json:"surface"`
		Access    string          `json:"access"`
		Value     string          `json:"value"`
		Action    string          `json:"action"`
		Reason    string          `json:"reason"`
		Node      string          `json:"node"`
		Run       string          `json:"run"`
		Paths     []string        `json:"paths"`
		DecidedBy json.RawMessage `json:"decidedBy"`
		Rule      *ruleJSON       `json:"rule"`
		Count     int64           `json:"count"`
		Processes int64           `json:"processes"`
		Program   string          `json:"program"`
		Dirs      []DirCount      `json:"dirs"`
		What      string          `json:"what"`
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return LogRecord{}, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(line, &w); err != nil {
		return LogRecord{}, err
	}
	if w.Event == "" {
		return LogRecord{}, errors.New("record has no event")
	}
	t, err := time.Parse(time.RFC3339Nano, w.Time)
	if err != nil {
		return LogRecord{}, fmt.Errorf("record time: %w", err)
	}
	rec := LogRecord{
		Time: t, Event: Event(w.Event), RequestID: RequestID(w.RequestID), PID: w.PID,
		Exe: w.Exe, Comm: w.Comm, Surface: w.Surface, Access: w.Access, Value: w.Value,
		Paths:  w.Paths,
		Action: w.Action, Reason: w.Reason, Node: w.Node, Run: w.Run,
		Count: w.Count, Processes: w.Processes, Program: w.Program, Dirs: w.Dirs, What: w.What,
		Raw: append([]byte(nil), line...),
	}
	if len(w.DecidedBy) > 0 {
		rec.DecidedBy, _ = ParseDecidedBy(w.DecidedBy) // unreadable provenance shows as unknown, not as a broken line
	}
	if w.Rule != nil {
		rec.Rule = ruleFromJSON(*w.Rule)
	}
	return rec, nil
}

// ReadLog calls fn for every record in r, skipping lines that do not
// parse (a crash cut a line short, a foreign line) and counting them. It
// stops at the end of r, at a read error, or when fn returns an error.
func ReadLog(r io.Reader, fn func(LogRecord) error) (broken int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, tooLong, rerr := readLine(br)
		if len(line) > 0 || tooLong {
			if tooLong {
				broken++
			} else if rec, perr := ParseLogLine(line); perr != nil {
				broken++
			} else if ferr := fn(rec); ferr != nil {
				return broken, ferr
			}
		}
		if rerr == io.EOF {
			return broken, nil
		}
		if rerr != nil {
			return broken, rerr
		}
	}
}

// readLine returns the next line without its newline; a line longer than
// maxLogLine is consumed and reported as tooLong. A final line without a
// newline is returned with io.EOF.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > maxLogLine {
			tooLong = true
			buf = nil
		} else if !tooLong {
			buf = append(buf, chunk...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil:
			return bytes.TrimRight(buf, "\n"), tooLong, err
		}
		return bytes.TrimRight(buf, "\n"), tooLong, nil
	}
}

// ruleFromJSON reads a record's rule back (ruleToJSON's form); what does
// not parse stays zero.
func ruleFromJSON(j ruleJSON) engine.Rule {
	s, _ := engine.ParseSurface(j.Surface)
	a, _ := engine.ParseAction(j.Action)
	return engine.Rule{Surface: s, Pattern: j.Pattern, Action: a, Origin: engine.ParseOrigin(j.Origin), Pos: parsePosition(j.Position)}
}
