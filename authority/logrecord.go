package authority

import (
	"github.com/permwrap/permwrap/engine"
	"strings"
)

// The records: what each kind of event writes about a request, its
// decision and the session (requestFields and recordFields hold the
// fields they share).

// Record writes one permission_request.* record about r and its decision.
func (l *Log) Record(ev Event, r Request, d Decision) {
	if l == nil {
		return
	}
	readAllow := ev == EventAllowed && r.Check.Surface == engine.SurfaceRead
	if _, byRule := d.DecidedBy().(ByRule); ev == EventAllowed && byRule {
		// Only a rule's allow is routine: a read or write a person's
		// approval or a session rule allowed keeps a record of its own.
		switch {
		case readAllow && l.opts.ReadAllows == readAllowsNone:
			return
		case readAllow && l.opts.ReadAllows == readAllowsSummary:
			l.noteRead(r, d)
			return
		case r.Check.Surface == engine.SurfaceWrite && l.opts.ScratchWrites == readAllowsSummary && l.inScratch(r):
			l.noteRead(r, d)
			return
		}
	}
	l.record(ev, r, d, readAllow)
}

// record queues the record; apart from Record so that only these records
// move r to the heap (the closures keep it), not a read summary's note.
func (l *Log) record(ev Event, r Request, d Decision, readAllow bool) {
	t := l.now()
	if ev == EventAllowed || ev == EventAnswered {
		// Routine records (most of a busy tree's) are gathered on the
		// writer goroutine too, not on the worker a process waits on: r
		// and d are values nobody changes once decided.
		l.sendLazy(func(dst []byte) []byte { return l.appendRecord(dst, t, ev, l.recordFields(r, d)) }, readAllow, false, false)
		return
	}
	f := l.recordFields(r, d)
	l.sendLazy(func(dst []byte) []byte { return l.appendRecord(dst, t, ev, f) }, readAllow, true, true)
}

// noteRead hands an allowed read, or a scratch write, to the writer's
// summary of its process.
func (l *Log) noteRead(r Request, d Decision) {
	l.note(readNote{pid: r.Process.PID, exe: r.Process.Exe, value: r.Check.Value, node: r.Node, rule: r.Rule,
		by: l.provenance(r, d.DecidedBy()), surface: r.Check.Surface, access: r.Access})
}

// inScratch reports whether every path r touches is beneath one of the
// scratch directories (LogOptions.ScratchDirs).
func (l *Log) inScratch(r Request) bool {
	paths := r.Paths
	if len(paths) == 0 {
		paths = []string{r.Check.Value}
	}
	for _, p := range paths {
		in := false
		for _, d := range l.opts.ScratchDirs {
			if len(p) > len(d) && strings.HasPrefix(p, d) && (p[len(d)] == '/' || d == "/") {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	return true
}

// SummarisesReads reports whether allowed reads go to per-process
// summaries (readAllows "summary"): a caller may then hand them over with
// NoteRead without making a Request (and its request id) for each.
func (l *Log) SummarisesReads() bool {
	return l != nil && l.opts.ReadAllows == readAllowsSummary && l.opts.Responder == ""
}

// NoteRead hands a read that rule allowed without asking (by, its
// provenance) to the writer's summary of process p: a value on a
// channel, dropped and counted when the channel is full.
func (l *Log) NoteRead(p Process, path, node string, rule engine.Rule, by DecidedBy) {
	if l == nil {
		return
	}
	l.note(readNote{pid: p.PID, exe: p.Exe, value: path, node: node, rule: rule, by: by, surface: engine.SurfaceRead})
}

// note hands n to the writer's summaries: a value on a channel, dropped
// and counted when the channel is full.
func (l *Log) note(n readNote) {
	n.t = l.now()
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return
	}
	select {
	case l.reads <- n:
	default:
		l.dropped.Add(1)
	}
	if 2*len(l.reads) >= cap(l.reads) {
		l.wake()
	}
}

// recordFields are the fields of a permission_request record.
func (l *Log) recordFields(r Request, d Decision) fields {
	f := l.requestFields(r)
	f = append(f,
		field{"action", d.Action().String()},
		field{"decidedBy", l.provenance(r, d.DecidedBy())},
	)
	if reason := d.Reason(); reason != "" {
		f = append(f, field{"reason", reason})
	}
	if len(r.Covers) > 0 && d.Action() == engine.Allow {
		// What the allow approved besides (engine.Effect): the writes
		// that follow without asking.
		f = append(f, field{"covers", r.Covers})
	}
	if rules := d.SessionRules(); len(rules) > 0 {
		list := make([]any, len(rules))
		for i, p := range rules {
			list[i] = map[string]any{"surface": p.Surface.String(), "pattern": p.Pattern, "action": d.Action().String()}
		}
		f = append(f, field{"sessionRules", list})
	}
	if saved := d.Saved(); len(saved) > 0 {
		list := make([]any, len(saved))
		for i, sr := range saved {
			list[i] = map[string]any{"surface": sr.Surface.String(), "pattern": sr.Pattern, "action": sr.Action.String(), "file": sr.File}
		}
		f = append(f, field{"policyRules", list})
	}
	return f
}

// Wants reports whether a record of this kind would be written at all, so
// a caller can skip gathering what it would hold (allowed reads with
// readAllows "none" are not).
func (l *Log) Wants(ev Event, s engine.Surface) bool {
	if l == nil {
		return false
	}
	return !(ev == EventAllowed && s == engine.SurfaceRead && l.opts.ReadAllows == readAllowsNone)
}

// Decided writes the outcome record for r: allowed/denied when recorded
// authority decided (asked false), approved/rejected/timed_out when the
// request was asked.
func (l *Log) Decided(r Request, asked bool, d Decision) {
	l.Record(OutcomeEvent(asked, d), r, d)
}

// OutcomeEvent names the outcome record for a decision.
func OutcomeEvent(asked bool, d Decision) Event {
	if a, ok := d.DecidedBy().(ByAudit); ok && d.Action() == engine.Allow {
		if a.Would == engine.Deny {
			return EventWouldDeny
		}
		return EventWouldAsk
	}
	if _, ok := d.DecidedBy().(ByKernel); ok {
		return EventAnswered
	}
	allow := d.Action() == engine.Allow
	switch {
	case !asked && allow:
		return EventAllowed
	case !asked:
		return EventDenied
	case allow:
		return EventApproved
	}
	if u, ok := d.DecidedBy().(ByUnavailable); ok && u.Reason == ReasonTimedOut {
		return EventTimedOut
	}
	return EventRejected
}

// Asked writes the record that an ask started; decidedBy is the rule
// that asked (recorded authority decided to ask).
func (l *Log) Asked(r Request) {
	if l == nil {
		return
	}
	f := l.requestFields(r)
	by := ruleProvenance(r.Rule)
	if !r.HasRule() {
		by = ByRule{Surface: r.Check.Surface, Pattern: "", Origin: engine.OriginBuiltin}
	}
	f = append(f, field{"action", engine.Ask.String()}, field{"decidedBy", l.provenance(r, by)})
	if r.HumanOnly {
		f = append(f, field{"humanOnly", true})
	}
	l.send(l.encode(EventAsked, f), false)
}

// provenance is what a record says decided: by itself, or, in a log
// written for a nested node (Responder), wrapped as forwarded.
func (l *Log) provenance(r Request, by DecidedBy) DecidedBy {
	if l.opts.Responder == "" {
		return by
	}
	return ByForwarded{Responder: l.opts.Responder, Decision: by, Node: r.Node}
}

// Nesting writes what happened to a nested permwrap's node: kind is
// "registered", "refused", "protocol-error", "done" or "closed"; node its
// label ("" before registration), detail its command for a
// registration, pid the inner's keeper. A refusal or protocol error
// carries its reason as an error's decidedBy.
func (l *Log) Nesting(kind, node, detail string, pid int, err error) {
	if l == nil {
		return
	}
	f := fields{{"requestId", NewRequestID()}, {"pid", pid}}
	if node != "" {
		f = append(f, field{"node", node})
	}
	if detail != "" {
		f = append(f, field{"command", detail})
	}
	if err != nil {
		f = append(f, field{"reason", err.Error()}, field{"decidedBy", ByError{Reason: err.Error()}})
	}
	l.send(l.encode(Event(EventNestingPrefix+kind), f), false)
}

// SessionRules writes the session's rules; call it once at exit.
func (l *Log) SessionRules(rules []engine.Rule) {
	if l == nil {
		return
	}
	list := make([]any, 0, len(rules))
	for _, r := range rules {
		if rj := ruleToJSON(r); rj != nil {
			list = append(list, rj)
		}
	}
	// Every record carries a request id and a decidedBy, so one parser
	// reads them all; this one's id names the record itself.
	l.send(l.encode(EventSessionRules, fields{
		{"requestId", NewRequestID()},
		{"decidedBy", ByUser{Via: "dialog"}},
		{"rules", list},
	}), false)
}

func (l *Log) unregisteredLink(id RequestID, name string) {
	if l == nil {
		return
	}
	l.send(l.encode(EventUnregisteredLink, fields{
		{"requestId", id},
		{"name", name},
		{"decidedBy", ByUnavailable{Reason: "authorizer link " + name + " is not registered: skipped"}},
	}), false)
}

func (l *Log) chainResolved(id RequestID, links []LinkOutcome, terminal string, d Decision) {
	if l == nil {
		return
	}
	if links == nil {
		links = []LinkOutcome{}
	}
	f := fields{{"requestId", id}, {"links", links}}
	if terminal != "" {
		f = append(f, field{"terminal", terminal})
	}
	f = append(f, field{"action", d.Action().String()}, field{"decidedBy", d.DecidedBy()})
	l.send(l.encode(EventChainResolved, f), false)
}

func (l *Log) requestFields(r Request) fields {
	// Sized for a routine record's fields and its decision's, grown once
	// at most.
	f := make(fields, 0, 12)
	f = append(f,
		field{"requestId", r.ID},
		field{"pid", r.Process.PID},
	)
	if r.Process.TID != 0 {
		f = append(f, field{"tid", r.Process.TID})
	}
	f = append(f,
		field{"comm", r.Process.Comm},
		field{"exe", r.Process.Exe},
		field{"surface", r.Check.Surface.String()},
	)
	if r.Access != "" {
		f = append(f, field{"access", r.Access})
	}
	f = append(f, field{"value", r.Check.Value})
	if len(r.Paths) == 2 {
		f = append(f, field{"paths", r.Paths}) // a rename's both ends
	}
	if r.Through != "" {
		f = append(f, field{"through", r.Through}) // a save's temporary file
	}
	if r.Command != "" {
		f = append(f, field{"command", r.Command}, field{"commandBy", r.CommandBy})
	}
	if n := netToJSON(r.Net); n != nil {
		f = append(f, field{"net", n})
	}
	if r.Node != "" {
		f = append(f, field{"node", r.Node})
	}
	if ruleSet(r.Rule) {
		// The rule itself: its encoding is cached by the rule, so a
		// routine record does not rebuild it (appendSanitizedCached).
		f = append(f, field{"rule", r.Rule})
	}
	return f
}

// droppedFields describes records that were not written (they are
// counted, never silently lost): behind, read allows the queue had no
// room for; unwritten, routine records the file refused (disk full,
// read-only, I/O error); lost, asks, answers or denials the file refused
// past what permwrap holds in memory for it.
func (l *Log) droppedFields(behind, unwritten, lost int64) fields {
	f := fields{{"requestId", NewRequestID()}, {"count", behind + unwritten + lost}}
	switch {
	case behind > 0:
		f = append(f, field{"what", "read allows (log writer behind)"}, field{"decidedBy", ByError{Reason: "review log writer fell behind"}})
	default:
		f = append(f, field{"what", "records the log file refused (disk full, read-only or I/O error)"})
		if unwritten > 0 {
			f = append(f, field{"routine", unwritten})
		}
		if lost > 0 {
			f = append(f, field{"important", lost})
		}
		f = append(f, field{"decidedBy", ByError{Reason: "review log could not be written"}})
	}
	return f
}
