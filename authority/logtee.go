package authority

// A tee of the review log: every record the writer goroutine makes is
// handed, as the whole masked line the file gets, to LogOptions.Tee
// (package events sends them to journald, syslog or an OpenTelemetry
// collector). The tee must never block the writer: it queues and drops.

// EventEventsDropped is the record, at exit, of the records the tee
// could not send: "sinks" counts them per sink.
const EventEventsDropped Event = "events.dropped"

// Tee receives a copy of the review log's records.
type Tee interface {
	// Records is given whole record lines (each ending in a newline),
	// on the log's writer goroutine. It must not block, and must not
	// keep b after it returns.
	Records(b []byte)
	// Close is called once, when the log closes, after the last record:
	// it sends what is queued within its own bound and returns how many
	// records each sink dropped (nil or empty: none).
	Close() map[string]int64
}

// tee hands b's records to the tee, if one is set and still open.
func (l *Log) tee(b []byte) {
	if l.opts.Tee != nil && !l.teeClosed && len(b) > 0 {
		l.opts.Tee.Records(b)
	}
}

// closeTee closes the tee and writes a record of what it dropped.
func (l *Log) closeTee() {
	if l.opts.Tee == nil || l.teeClosed {
		return
	}
	l.teeClosed = true
	counts := l.opts.Tee.Close()
	var total int64
	for _, n := range counts {
		total += n
	}
	if total == 0 {
		return
	}
	rec := l.appendRecord(nil, l.now(), EventEventsDropped, fields{
		{"requestId", NewRequestID()}, {"count", total}, {"sinks", counts},
		{"decidedBy", ByError{Reason: "decision events could not be sent"}},
	})
	l.writeOut(rec, []mark{{end: len(rec), important: true}}, true)
}

// SayOnce tells the person text once per kind and run, on the notice
// line SetNotice set (an event sink that drops records says so once).
func (l *Log) SayOnce(kind, text string) {
	if l == nil {
		return
	}
	l.say(kind, text)
}
