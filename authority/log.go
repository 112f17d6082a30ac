package authority

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permwrap/permwrap/engine"
)

// Event names a review-log record.
type Event string

const (
	EventAllowed  Event = "permission_request.allowed"   // recorded authority allowed, nobody asked
	EventDenied   Event = "permission_request.denied"    // recorded authority denied, nobody asked
	EventAsked    Event = "permission_request.asked"     // an ask started (before the chain)
	EventApproved Event = "permission_request.approved"  // an ask was answered allow
	EventRejected Event = "permission_request.rejected"  // an ask was answered deny
	EventTimedOut Event = "permission_request.timed_out" // an ask got no answer in time
	// EventAnswered: the request could change nothing and was answered
	// as the kernel answers it, without asking (decidedBy ByKernel).
	EventAnswered Event = "permission_request.answered"
	// Audit mode (--audit): the policy would have asked or denied, and
	// the request was allowed.
	EventWouldAsk  Event = "permission_request.would_ask"
	EventWouldDeny Event = "permission_request.would_deny"

	EventChainResolved    Event = "authorizer_chain.resolved"
	EventUnregisteredLink Event = "authorizer_chain.unregistered_link"
	EventSessionRules     Event = "session.rules"
	EventDropped          Event = "review_log.dropped"
	// Nested permwraps (docs/nesting.md): nesting.registered,
	// nesting.refused, nesting.protocol-error, nesting.done,
	// nesting.closed.
	EventNestingPrefix = "nesting."
)

// ReasonTimedOut is the denial reason when nobody answered an ask in time.
const ReasonTimedOut = "timed out waiting for confirmation"

const (
	defaultFieldWidth  = 512
	defaultLogBuffer   = 4096
	maskedValue        = Masked
	readAllowsAll      = "all"
	readAllowsNone     = "none"
	logFileMode        = 0o600
	logDirMode         = 0o700
	dropReportInterval = time.Second
)

// LogOptions tune the review log.
type LogOptions struct {
	// FieldWidth caps every string field, in bytes (0: 512). Cut values
	// end in "…".
	FieldWidth int
	// ReadAllows is "all" (default) or "none": with "none", allows of
	// plain reads decided by recorded authority are not written. Denies,
	// asks and their outcomes are always written.
	ReadAllows string
	// Buffer is how many records may wait for the writer (0: 4096).
	Buffer int
	// Responder, when set, makes this the log of a nested permwrap's
	// subtree written for it by the permwrap that decided (its root):
	// every record's decidedBy is wrapped as
	// {kind: forwarded, responder: Responder, decision: …, node: …}.
	Responder string
}

// DefaultLogPath is $XDG_STATE_HOME/permwrap/review.jsonl, falling back
// to ~/.local/state/permwrap/review.jsonl.
func DefaultLogPath() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "permwrap", "review.jsonl"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("review log: no XDG_STATE_HOME and no home directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "permwrap", "review.jsonl"), nil
}

// Log is the review log: JSON lines, appended by one writer goroutine,
// one write(2) per record on an O_APPEND file, so concurrent permwrap
// processes sharing a file interleave whole lines.
//
// Writing never blocks the caller for long: records queue on a bounded
// channel. When it is full, allows of plain reads are dropped and
// counted (the count is logged); every other record waits for room.
//
// A nil *Log discards everything, so callers need not check.
type Log struct {
	opts    LogOptions
	w       io.Writer
	closer  io.Closer
	ch      chan func([]byte) []byte // each appends one encoded record, on the writer goroutine
	kick    chan struct{}            // wakes a writer holding routine records (cap 1)
	done    chan struct{}
	mu      sync.RWMutex // held for reading while sending; Close takes it for writing
	closed  bool
	dropped atomic.Int64
	errMu   sync.Mutex
	err     error
	now     func() time.Time

	encMu       sync.Mutex // guards the caches of appendSanitizedCached
	ruleCache   map[ruleCacheKey][]byte
	byRuleCache map[byRuleCacheKey][]byte

	// batch: the writer may write several queued records at once (a file;
	// a NewLogWriter's writer gets one record per Write).
	batch bool
}

// OpenLog opens (creating directories and the file as needed) the log at
// path for appending. If the file's last byte is not a newline — a crash
// cut a record short — a newline is written first so the next record
// starts on its own line.
func OpenLog(path string, opts LogOptions) (*Log, error) {
	f, err := OpenLogFile(path)
	if err != nil {
		return nil, err
	}
	return newLog(f, f, opts, true), nil
}

// OpenLogFile opens the review-log file at path for appending, as
// OpenLog does (directories and file created, a cut last line ended),
// for a writer of whole record lines: a nested permwrap writing the
// records its parent sends it.
func OpenLogFile(path string) (*os.File, error) {
	if path == "" {
		return nil, errors.New("review log: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(path), logDirMode); err != nil {
		return nil, fmt.Errorf("review log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, logFileMode)
	if err != nil {
		return nil, fmt.Errorf("review log: %w", err)
	}
	if err := repairTail(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// NewLogWriter is a Log over any writer (tests, a pipe). Each record is
// one Write call.
func NewLogWriter(w io.Writer, opts LogOptions) *Log { return newLog(w, nil, opts, false) }

func newLog(w io.Writer, c io.Closer, opts LogOptions, batch bool) *Log {
	if opts.FieldWidth <= 0 {
		opts.FieldWidth = defaultFieldWidth
	}
	if opts.FieldWidth < 16 {
		opts.FieldWidth = 16 // room for the elision mark and something to read
	}
	if opts.Buffer <= 0 {
		opts.Buffer = defaultLogBuffer
	}
	if opts.ReadAllows == "" {
		opts.ReadAllows = readAllowsAll
	}
	l := &Log{opts: opts, w: w, closer: c, ch: make(chan func([]byte) []byte, opts.Buffer), kick: make(chan struct{}, 1), done: make(chan struct{}), now: time.Now, batch: batch}
	go l.writer()
	return l
}

func repairTail(f *os.File, path string) error {
	// Read through a separate descriptor: f is write-only.
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("review log: %w", err)
	}
	if st.Size() == 0 || !st.Mode().IsRegular() {
		return nil
	}
	r, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("review log: %w", err)
	}
	defer r.Close()
	var last [1]byte
	if _, err := r.ReadAt(last[:], st.Size()-1); err != nil {
		return fmt.Errorf("review log: reading its last byte: %w", err)
	}
	if last[0] != '\n' {
		if _, err := f.Write([]byte{'\n'}); err != nil {
			return fmt.Errorf("review log: %w", err)
		}
	}
	return nil
}

func (l *Log) writer() {
	defer close(l.done)
	lastReport := time.Time{}
	var batch []byte
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for enc := range l.ch {
		if !l.batch {
			l.write(enc(nil))
		} else {
			// A file log takes what is queued in one write: whole records,
			// so a line is never split between writes. After the first
			// record it waits up to routineDelay, unless a record that
			// must be seen at once is queued (kick), so that the allows
			// of a busy tree are written together instead of waking this
			// goroutine once per call (docs/review-log.md, "When records
			// are written").
			timer.Reset(routineDelay)
			select {
			case <-l.kick:
			case <-timer.C:
			}
			timer.Stop()
			batch = enc(batch[:0])
		drain:
			for {
				select {
				case more, ok := <-l.ch:
					if !ok {
						break drain
					}
					batch = more(batch)
					if len(batch) >= maxBatch {
						l.write(batch)
						batch = batch[:0]
					}
				default:
					break drain
				}
			}
			if len(batch) > 0 {
				l.write(batch)
			}
		}
		if n := l.dropped.Load(); n > 0 && time.Since(lastReport) >= dropReportInterval {
			l.dropped.Add(-n)
			lastReport = time.Now()
			l.write(l.encode(EventDropped, l.droppedFields(n)))
		}
	}
	if n := l.dropped.Swap(0); n > 0 {
		l.write(l.encode(EventDropped, l.droppedFields(n)))
	}
}

// routineDelay is how long a file log may hold routine records (calls
// allowed by a rule) before writing them; every other record is written
// at once, with whatever is queued before it.
const routineDelay = 10 * time.Millisecond

// maxBatch bounds one batched write of a file log.
const maxBatch = 64 << 10

func (l *Log) write(line []byte) {
	if _, err := l.w.Write(line); err != nil {
		l.errMu.Lock()
		if l.err == nil {
			l.err = fmt.Errorf("review log: %w", err)
		}
		l.errMu.Unlock()
	}
}

// Err is the first write error, if any. The supervisor may report it; a
// failing log does not stop decisions from being made.
func (l *Log) Err() error {
	if l == nil {
		return nil
	}
	l.errMu.Lock()
	defer l.errMu.Unlock()
	return l.err
}

// Close drains queued records, closes the file and returns the first
// error. Records sent after Close are discarded.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return l.Err()
	}
	l.closed = true
	close(l.ch)
	l.wake()
	l.mu.Unlock()
	<-l.done
	if l.closer != nil {
		if err := l.closer.Close(); err != nil {
			l.errMu.Lock()
			if l.err == nil {
				l.err = fmt.Errorf("review log: %w", err)
			}
			l.errMu.Unlock()
		}
	}
	return l.Err()
}

func (l *Log) send(line []byte, droppable bool) {
	l.sendLazy(func(dst []byte) []byte { return append(dst, line...) }, droppable, true)
}

// sendLazy queues a record whose encoding the writer goroutine does: the
// caller (a supervisor worker with a process waiting on it) pays only for
// the queueing. urgent: the writer writes it now (with everything queued
// before it); otherwise it may wait routineDelay for company. A queue
// half full is written at once too.
func (l *Log) sendLazy(enc func([]byte) []byte, droppable, urgent bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return
	}
	if droppable {
		select {
		case l.ch <- enc:
		default:
			l.dropped.Add(1)
		}
	} else {
		l.ch <- enc
	}
	if urgent || 2*len(l.ch) >= cap(l.ch) {
		l.wake()
	}
}

// wake tells a writer holding routine records to write now.
func (l *Log) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Record writes one permission_request.* record about r and its decision.
func (l *Log) Record(ev Event, r Request, d Decision) {
	if l == nil {
		return
	}
	readAllow := ev == EventAllowed && r.Check.Surface == engine.SurfaceRead
	if readAllow && l.opts.ReadAllows == readAllowsNone {
		return
	}
	t := l.now()
	if ev == EventAllowed || ev == EventAnswered {
		// Routine records (most of a busy tree's) are gathered on the
		// writer goroutine too, not on the worker a process waits on: r
		// and d are values nobody changes once decided.
		l.sendLazy(func(dst []byte) []byte { return l.appendRecord(dst, t, ev, l.recordFields(r, d)) }, readAllow, false)
		return
	}
	f := l.recordFields(r, d)
	l.sendLazy(func(dst []byte) []byte { return l.appendRecord(dst, t, ev, f) }, readAllow, true)
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

// field and fields keep record keys in a fixed, readable order (time and
// event first), which map-based encoding would not.
type field struct {
	k string
	v any
}
type fields []field

func (l *Log) encode(ev Event, f fields) []byte {
	return l.encodeAt(l.now(), ev, f)
}

// encodeAt encodes a record stamped t (when it happened, not when the
// writer got to it).
func (l *Log) encodeAt(t time.Time, ev Event, f fields) []byte {
	return l.appendRecord(make([]byte, 0, 512), t, ev, f)
}

// appendRecord appends encodeAt's record to b: the writer encodes a
// batch's records straight into it.
func (l *Log) appendRecord(b []byte, t time.Time, ev Event, f fields) []byte {
	b = append(b, `{"time":"`...)
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","event":`...)
	b = appendJSONString(b, string(ev))
	for _, kv := range f {
		b = append(b, ',')
		b = appendJSONString(b, kv.k)
		b = append(b, ':')
		b = l.appendSanitizedCached(b, kv.k, kv.v)
	}
	return append(b, "}\n"...)
}

// appendSanitizedCached appends sanitize's encoding of v, remembering the
// encodings of the values that repeat from record to record — the rule
// and the provenance of a decision (every allowed read of a session is
// decided by one rule) — keyed by the key and the whole value, so a
// cached encoding is the one sanitize would produce now. Each cache
// holds at most sanitizeCacheMax entries.
func (l *Log) appendSanitizedCached(dst []byte, key string, v any) []byte {
	switch x := v.(type) {
	case engine.Rule:
		return append(dst, cachedEncoding(l, &l.ruleCache, ruleCacheKey{key, x}, func() []byte { return l.sanitize(key, ruleToJSON(x)) })...)
	case ByRule:
		return append(dst, cachedEncoding(l, &l.byRuleCache, byRuleCacheKey{key, x}, func() []byte { return l.sanitize(key, x) })...)
	}
	return l.appendSanitized(dst, key, v)
}

// cachedEncoding is enc()'s encoding from cache *m under k, encoded and
// stored on a miss; a full cache is emptied first.
func cachedEncoding[K comparable](l *Log, m *map[K][]byte, k K, enc func() []byte) []byte {
	l.encMu.Lock()
	b, ok := (*m)[k]
	l.encMu.Unlock()
	if ok {
		return b
	}
	b = enc()
	l.encMu.Lock()
	if *m == nil || len(*m) >= sanitizeCacheMax {
		*m = map[K][]byte{}
	}
	(*m)[k] = b
	l.encMu.Unlock()
	return b
}

// The caches of appendSanitizedCached, typed so a lookup boxes nothing.
type (
	ruleCacheKey struct {
		key string
		val engine.Rule
	}
	byRuleCacheKey struct {
		key string
		val ByRule
	}
)

const sanitizeCacheMax = 256

// sanitize encodes v with every string capped at the field width and
// every value under a secret-looking key masked. It round-trips through
// a generic JSON value so nested objects (decidedBy, rule, links) are
// covered by the same walk and no writer can bypass it.
func (l *Log) sanitize(key string, v any) []byte { return l.appendSanitized(nil, key, v) }

// appendSanitized appends sanitize's encoding of v to dst.
func (l *Log) appendSanitized(dst []byte, key string, v any) []byte {
	if secretKeyCached(key) && v != nil {
		return append(dst, `"`+maskedValue+`"`...)
	}
	switch x := v.(type) { // the common flat fields skip the round trip
	case string:
		return appendJSONString(dst, elide(MaskSecrets(x), l.opts.FieldWidth))
	case RequestID:
		return appendJSONString(dst, elide(string(x), l.opts.FieldWidth))
	case int:
		return strconv.AppendInt(dst, int64(x), 10)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case bool:
		return strconv.AppendBool(dst, x)
	}
	return append(dst, l.sanitizeValue(key, v)...)
}

// sanitizeValue is sanitize for every value but the flat ones.
func (l *Log) sanitizeValue(key string, v any) []byte {
	switch x := v.(type) {
	case DecidedBy: // typed copies: the nested records of every decision skip the round trip too
		return l.marshal(l.capDecidedBy(x))
	case engine.Rule:
		return l.sanitizeValue(key, ruleToJSON(x))
	case *ruleJSON:
		if x == nil {
			return []byte("null")
		}
		c := *x
		c.Pattern, c.Position = l.str(c.Pattern), l.str(c.Position)
		return l.marshal(&c)
	case []LinkOutcome:
		c := make([]LinkOutcome, len(x))
		for i, o := range x {
			c[i] = LinkOutcome{Name: l.str(o.Name), Verdict: o.Verdict, Reason: l.str(o.Reason), Note: l.str(o.Note)}
		}
		return l.marshal(c)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		raw, _ = json.Marshal("unencodable: " + err.Error())
	}
	var g any
	if err := json.Unmarshal(raw, &g); err != nil {
		g = "unencodable"
	}
	out, err := json.Marshal(l.walk(key, g))
	if err != nil {
		return []byte(`"unencodable"`)
	}
	return out
}

// str caps and masks one string value.
func (l *Log) str(s string) string { return elide(MaskSecrets(s), l.opts.FieldWidth) }

func (l *Log) marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`"unencodable"`)
	}
	return b
}

// capDecidedBy returns d with every string capped and masked, following
// forwarded decisions down to MaxForwardDepth.
func (l *Log) capDecidedBy(d DecidedBy) DecidedBy {
	return l.capDecidedByDepth(d, 0)
}

func (l *Log) capDecidedByDepth(d DecidedBy, depth int) DecidedBy {
	switch x := d.(type) {
	case ByUser:
		x.Via = l.str(x.Via)
		return x
	case ByAuthorizer:
		x.Name, x.Reason = l.str(x.Name), l.str(x.Reason)
		return x
	case ByRule:
		x.Pattern, x.Pos.File = l.str(x.Pattern), l.str(x.Pos.File)
		return x
	case BySessionApproval:
		x.Pattern = l.str(x.Pattern)
		return x
	case ByYolo:
		x.Pattern = l.str(x.Pattern)
		return x
	case ByAudit:
		x.Pattern, x.Pos.File = l.str(x.Pattern), l.str(x.Pos.File)
		return x
	case ByKernel:
		x.Errno, x.Reason = l.str(x.Errno), l.str(x.Reason)
		return x
	case ByUnavailable:
		x.Reason = l.str(x.Reason)
		return x
	case ByError:
		x.Reason = l.str(x.Reason)
		return x
	case ByForwarded:
		x.Responder, x.Node = l.str(x.Responder), l.str(x.Node)
		if depth >= MaxForwardDepth {
			x.Decision = nil
		} else if x.Decision != nil {
			x.Decision = l.capDecidedByDepth(x.Decision, depth+1)
		}
		return x
	}
	return ByError{Reason: "unknown provenance"}
}

func (l *Log) walk(key string, v any) any {
	if secretKey(key) && v != nil {
		return maskedValue
	}
	switch x := v.(type) {
	case string:
		return elide(MaskSecrets(x), l.opts.FieldWidth)
	case map[string]any:
		for k, e := range x {
			x[k] = l.walk(k, e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = l.walk("", e)
		}
		return x
	}
	return v
}

// secretKey reports whether a key's value should never be written: the
// key is a name MaskSecrets would mask the value of (password, api_key,
// token, key, …).
func secretKey(k string) bool {
	strong, weak := secretName(k)
	return strong || weak
}

// recordKeySecret is secretKey of the keys records are made of, worked
// out once: every record asked it of each of its dozen keys.
var recordKeySecret = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range []string{"requestId", "pid", "tid", "comm", "exe", "surface", "access", "value",
		"net", "node", "rule", "action", "decidedBy", "reason", "sessionRules", "policyRules",
		"command", "links", "terminal", "name", "rules", "count"} {
		m[k] = secretKey(k)
	}
	return m
}()

// secretKeyCached is secretKey, from recordKeySecret for a record's keys.
func secretKeyCached(k string) bool {
	if s, ok := recordKeySecret[k]; ok {
		return s
	}
	return secretKey(k)
}

// appendJSONString appends s as encoding/json writes it. A string of
// printable ASCII that needs no escaping (a path, a name, a key: almost
// every value) is copied between quotes; any other goes through
// json.Marshal, so the escaping is always encoding/json's.
func appendJSONString(dst []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			plain = false
			break
		}
	}
	if plain {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, err := json.Marshal(s)
	if err != nil { // unreachable for a string; keep the record well-formed anyway
		return append(dst, `"unencodable"`...)
	}
	return append(dst, b...)
}

// droppedFields describes read-allow records the writer could not keep up
// with (they are counted, never silently lost).
func (l *Log) droppedFields(n int64) fields {
	return fields{
		{"requestId", NewRequestID()},
		{"count", n},
		{"what", "read allows (log writer behind)"},
		{"decidedBy", ByError{Reason: "review log writer fell behind"}},
	}
}
