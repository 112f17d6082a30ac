// Package events sends the review log's records to the systems a team
// already runs: the systemd journal (native protocol), syslog (RFC 5424)
// and an OpenTelemetry collector (OTLP/HTTP logs, protobuf or JSON).
//
// The review log (authority.Log) hands every record it writes, as the
// whole masked JSON line, to a Dispatcher (its authority.Tee). Each sink
// has its own bounded queue, fed without blocking: a full queue drops
// and counts, a sink that cannot deliver drops and counts, and the
// counts are told to the person once and written to the review log at
// exit (event "events.dropped"). Nothing here can slow a decision.
// docs/teams.md, "Decision events", is the user's side.
package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode"
)

// Record is one review-log record read back for a sink: its fields in
// the order the log wrote them, the line itself (without its newline),
// and what the sinks derive from it.
type Record struct {
	Line   []byte  // the JSON line as the log wrote it, no newline
	Fields []Field // top-level fields in order
	Time   time.Time
	Event  string
}

// Field is one top-level field of a record. Raw is its JSON; Text is the
// value as a sink shows it: a string's text, else the compact JSON.
type Field struct {
	Key  string
	Raw  json.RawMessage
	Text string
	Kind byte // '"' string, '0' number, 't' boolean, 'n' null, '{' object, '[' array
}

// ParseRecord reads one record line (with or without its newline).
func ParseRecord(line []byte) (Record, error) {
	line = bytes.TrimRight(line, "\n")
	r := Record{Line: line}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil || t != json.Delim('{') {
		return r, errors.New("a record is a JSON object")
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return r, err
		}
		k, _ := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return r, err
		}
		f := Field{Key: k, Raw: raw}
		switch c := firstByte(raw); c {
		case '"':
			_ = json.Unmarshal(raw, &f.Text)
			f.Kind = '"'
		case '{', '[':
			var b bytes.Buffer
			if json.Compact(&b, raw) == nil {
				f.Text = b.String()
			} else {
				f.Text = string(raw)
			}
			f.Kind = c
		case 't', 'f':
			f.Text, f.Kind = string(raw), 't'
		case 'n':
			f.Text, f.Kind = "null", 'n'
		default:
			f.Text, f.Kind = string(raw), '0'
		}
		switch k {
		case "time":
			r.Time, _ = time.Parse(time.RFC3339Nano, f.Text)
		case "event":
			r.Event = f.Text
		}
		r.Fields = append(r.Fields, f)
	}
	if r.Event == "" {
		return r, errors.New("a record has an event")
	}
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	return r, nil
}

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 'n'
	}
	return b[0]
}

// Get is the text of the field named k ("" when absent).
func (r Record) Get(k string) string {
	for _, f := range r.Fields {
		if f.Key == k {
			return f.Text
		}
	}
	return ""
}

// SnakeKey is a review-log key in snake case: requestId → request_id.
func SnakeKey(k string) string {
	var b strings.Builder
	for i, c := range k {
		switch {
		case unicode.IsUpper(c):
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(c))
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Severity is how serious a record is, as syslog and journald number it
// (4 warning, 5 notice, 6 info).
type Severity int

// The severities records get.
const (
	SevWarning Severity = 4
	SevNotice  Severity = 5
	SevInfo    Severity = 6
)

func (s Severity) String() string {
	switch s {
	case SevWarning:
		return "warning"
	case SevNotice:
		return "notice"
	}
	return "info"
}

// SeverityOf is a record's severity: denials (and records of what was
// lost) warning; asks, their answers and everything else notice; what a
// rule allowed info.
func SeverityOf(event string) Severity {
	switch event {
	case "permission_request.denied", "permission_request.rejected", "permission_request.timed_out",
		"permission_request.would_deny", "review_log.dropped", "events.dropped", "nesting.refused", "nesting.protocol-error":
		return SevWarning
	case "permission_request.allowed", "permission_request.allowed_reads", "permission_request.allowed_writes",
		"permission_request.answered":
		return SevInfo
	}
	return SevNotice
}

// maxSummary caps the summary line, in bytes.
const maxSummary = 400

// Summary is a record's one-line human summary, as the person's line
// puts it: "permwrap: denied write /etc/hosts — rule write:/etc/**
// (deny, policy.jsonc:12:5): system files".
func (r Record) Summary() string {
	var b strings.Builder
	b.WriteString("permwrap: ")
	ev := r.Event
	if s, ok := strings.CutPrefix(ev, "permission_request."); ok {
		ev = strings.ReplaceAll(s, "_", " ")
	}
	b.WriteString(ev)
	for _, k := range []string{"surface", "access", "value"} {
		if v := r.Get(k); v != "" {
			b.WriteString(" " + v)
		}
	}
	if n := r.Get("count"); n != "" {
		b.WriteString(" (" + n + ")")
	}
	if w := r.Get("what"); w != "" {
		b.WriteString(": " + w)
	}
	if by := decider(r.Get("decidedBy")); by != "" {
		b.WriteString(" — " + by)
	}
	if why := r.Get("reason"); why != "" {
		b.WriteString(": " + why)
	}
	return oneLine(b.String(), maxSummary)
}

// decider names who decided, from decidedBy's JSON.
func decider(js string) string {
	if js == "" || js == "null" {
		return ""
	}
	var d map[string]any
	if json.Unmarshal([]byte(js), &d) != nil {
		return ""
	}
	s := func(k string) string { v, _ := d[k].(string); return v }
	switch kind := s("kind"); kind {
	case "rule":
		out := "rule " + s("surface") + ":" + s("pattern")
		if p := s("position"); p != "" {
			out += " (" + p + ")"
		} else if o := s("origin"); o != "" {
			out += " (" + o + ")"
		}
		return out
	case "authorizer":
		return "authorizer " + s("name")
	case "user":
		return "user (" + s("via") + ")"
	case "forwarded":
		return "permwrap " + s("responder")
	case "":
		return ""
	default:
		if r := s("reason"); r != "" && kind != "audit" {
			return kind + " (" + r + ")"
		}
		return kind
	}
}

// oneLine is s on one line (control characters as spaces), cut to n
// bytes at a character boundary with "…".
func oneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// splitLines calls fn with each whole line of b (without its newline).
func splitLines(b []byte, fn func([]byte)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			fn(b)
			return
		}
		if i > 0 {
			fn(b[:i])
		}
		b = b[i+1:]
	}
}
