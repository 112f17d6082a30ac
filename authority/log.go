package authority

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
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
	readAllowsEach     = "each"
	readAllowsSummary  = "summary"
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
	// ReadAllows says how plain reads allowed without asking are written:
	// "summary", one permission_request.allowed_reads record per process
	// (logsummary.go); "each" (or "all", its old name, and ""), one record
	// per read; "none", not at all. Denies, asks and their outcomes are
	// always written one record each.
	ReadAllows string
	// ScratchWrites says how writes a rule allowed without asking are
	// written when every path they touch is beneath one of ScratchDirs
	// (the temporary directories and the cache home: a compiler's work
	// files, a build cache): "summary", one
	// permission_request.allowed_writes record per process, like reads;
	// "each" (and ""), one record per write. Writes anywhere else are
	// always one record each.
	ScratchWrites string
	ScratchDirs   []string
	// Buffer is how many records may wait for the writer (0: 4096).
	Buffer int
	// Run, when set, is written as "run" in every record: one id per
	// permwrap run, so a reader can take one run's records
	// (`permwrap policy suggest` takes the last --audit run's).
	Run string
	// Responder, when set, makes this the log of a nested permwrap's
	// subtree written for it by the permwrap that decided (its root):
	// every record's decidedBy is wrapped as
	// {kind: forwarded, responder: Responder, decision: …, node: …}.
	Responder string
	// RotateBytes: a file log about to pass this size is renamed to
	// path.1 and a new one started (0: DefaultLogRotateBytes; negative:
	// never). Keep is how many older files stay (0: DefaultLogKeep;
	// negative: none).
	RotateBytes int64
	Keep        int
	// Tee, when set, gets a copy of every record written (logtee.go).
	Tee Tee
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
// whole records per write(2) on an O_APPEND file under a lock shared
// with every permwrap writing it (logsink.go), so concurrent permwrap
// processes sharing a file interleave whole lines, and rotation is safe.
//
// Writing never blocks the caller for long: records queue on a bounded
// channel. When it is full, allows of plain reads are dropped and
// counted (the count is logged); every other record waits for room.
//
// When the file cannot be written (disk full, read-only, I/O error),
// nothing half-written stays in it; routine records (allows) are dropped
// and counted, the others (asks, answers, denials) are held in memory, up
// to maxPending bytes, and written first when the file takes records
// again; the person is told once (SetNotice). Decisions go on being made.
//
// A nil *Log discards everything, so callers need not check.
type Log struct {
	opts    LogOptions
	sink    logSink
	path    string        // "" for a NewLogWriter
	ch      chan logEntry // each appends one encoded record, on the writer goroutine
	reads   chan readNote // allowed reads to summarise (readAllows "summary")
	kick    chan struct{} // wakes a writer holding routine records (cap 1)
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

	// batch: the writer may hold routine records for routineDelay to
	// write them together (a file; a NewLogWriter's records are written
	// as they come, one per Write).
	batch bool

	// The writer goroutine's own.
	sums      summaries
	pending   []byte // whole important records the sink refused, oldest first
	unwritten int64  // routine records the sink refused, dropped
	lost      int64  // important records past maxPending, dropped
	failing   bool   // the last write failed
	teeClosed bool   // the tee was closed (logtee.go)

	// noticeMu guards the person's notices: each kind said once.
	noticeMu sync.Mutex
	notice   func(string)
	said     map[string]bool
	unsaid   []string // said before there was a notice function
}

// logEntry is one queued record: its encoder, and whether it is one the
// log keeps ahead of routine records when the file fails (important).
type logEntry struct {
	enc       func([]byte) []byte
	important bool
}

// maxPending bounds the important records held while the file cannot be
// written.
const maxPending = 1 << 20

// OpenLog opens (creating directories and the file as needed) the log at
// path for appending. If the file's last byte is not a newline — a crash
// cut a record short — a newline is written first so the next record
// starts on its own line.
func OpenLog(path string, opts LogOptions) (*Log, error) {
	rotate, keep := opts.RotateBytes, opts.Keep
	if rotate == 0 {
		rotate = DefaultLogRotateBytes
	}
	if keep == 0 {
		keep = DefaultLogKeep
	}
	s, err := openFileSink(path, max(rotate, 0), max(keep, 0))
	if err != nil {
		return nil, err
	}
	return newLog(s, opts, true, path), nil
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
func NewLogWriter(w io.Writer, opts LogOptions) *Log {
	return newLog(writerSink{w: w}, opts, false, "")
}

func newLog(sink logSink, opts LogOptions, batch bool, path string) *Log {
	if opts.FieldWidth <= 0 {
		opts.FieldWidth = defaultFieldWidth
	}
	if opts.FieldWidth < 16 {
		opts.FieldWidth = 16 // room for the elision mark and something to read
	}
	if opts.Buffer <= 0 {
		opts.Buffer = defaultLogBuffer
	}
	switch opts.ReadAllows {
	case "", readAllowsAll:
		opts.ReadAllows = readAllowsEach
	}
	l := &Log{opts: opts, sink: sink, ch: make(chan logEntry, opts.Buffer),
		kick: make(chan struct{}, 1), done: make(chan struct{}), now: time.Now, batch: batch, sums: summaries{}}
	if opts.ScratchWrites != readAllowsSummary || len(opts.ScratchDirs) == 0 {
		opts.ScratchWrites = readAllowsEach
	}
	if opts.ReadAllows == readAllowsSummary || opts.ScratchWrites == readAllowsSummary {
		// Only a summarising log has reads to take (a nil channel is
		// never ready in the writer's select).
		l.reads = make(chan readNote, opts.Buffer)
	}
	l.path = path
	if fs, ok := sink.(*fileSink); ok {
		fs.event = func(text string) { l.say("removed", text) }
	}
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
	var (
		batch []byte
		marks []mark
	)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	tick := time.NewTicker(summaryTick)
	defer tick.Stop()
	for {
		batch, marks = batch[:0], marks[:0]
		retry := false // try the records held back by a failure again
		select {
		case e, ok := <-l.ch:
			if !ok {
				l.finish()
				return
			}
			if l.batch && !e.important {
				// A file log takes what is queued in one write: whole
				// records, so a line is never split between writes. After
				// a routine record it waits up to routineDelay, unless a
				// record that must be seen at once is queued (kick), so
				// that the allows of a busy tree are written together
				// instead of waking this goroutine once per call
				// (docs/review-log.md, "When records are written").
				timer.Reset(routineDelay)
				select {
				case <-l.kick:
				case <-timer.C:
				}
				timer.Stop()
			} else {
				select { // the kick its sender gave: taken now, so the next wait is not cut short
				case <-l.kick:
				default:
				}
			}
			batch, marks = appendEntry(batch, marks, e)
		drain:
			for {
				select {
				case more, ok := <-l.ch:
					if !ok {
						break drain
					}
					batch, marks = appendEntry(batch, marks, more)
					if len(batch) >= maxBatch {
						l.writeOut(batch, marks, false)
						batch, marks = batch[:0], marks[:0]
					}
				default:
					break drain
				}
			}
			l.takeReads()
		case n := <-l.reads:
			l.sums.add(n)
			l.takeReads()
			// Then rest routineDelay, so that a busy tree's reads are
			// taken a channelful at a time instead of waking this
			// goroutine once per call; a record that must be written
			// at once (or a reads channel half full) wakes it (kick).
			timer.Reset(routineDelay)
			select {
			case <-l.kick:
			case <-timer.C:
			}
			timer.Stop()
			l.takeReads()
		case <-tick.C:
			batch, _ = l.dueSummaries(batch, l.now(), false)
			marks = summaryMarks(batch, marks) // summaries are routine
			retry = true
		}
		if n := l.dropped.Load(); n > 0 && time.Since(lastReport) >= dropReportInterval {
			l.dropped.Add(-n)
			lastReport = time.Now()
			batch = l.appendRecord(batch, l.now(), EventDropped, l.droppedFields(n, 0, 0))
			marks = append(marks, mark{end: len(batch), important: true})
		}
		if len(batch) > 0 || (retry && (len(l.pending) > 0 || l.unwritten > 0 || l.lost > 0)) {
			// While the file fails, the count of what was dropped is
			// tried on the tick (retry), not with every batch.
			l.writeOut(batch, marks, retry)
		}
	}
}

// takeReads counts the reads already queued, without waiting.
func (l *Log) takeReads() {
	for range 4096 {
		select {
		case n := <-l.reads:
			l.sums.add(n)
		default:
			return
		}
	}
}

// finish writes what is left when the log closes: the reads still
// queued, every summary, the count of what was dropped.
func (l *Log) finish() {
	for {
		select {
		case n := <-l.reads:
			l.sums.add(n)
			continue
		default:
		}
		break
	}
	batch, _ := l.dueSummaries(nil, l.now(), true)
	marks := summaryMarks(batch, nil)
	if n := l.dropped.Swap(0); n > 0 {
		batch = l.appendRecord(batch, l.now(), EventDropped, l.droppedFields(n, 0, 0))
		marks = append(marks, mark{end: len(batch), important: true})
	}
	if len(batch) > 0 || len(l.pending) > 0 || l.unwritten > 0 || l.lost > 0 {
		l.writeOut(batch, marks, true)
	}
	l.closeTee()
}

// mark is where a record of a batch ends, and whether it is important
// (kept ahead of routine records when the file fails).
type mark struct {
	end       int
	important bool
}

func appendEntry(b []byte, m []mark, e logEntry) ([]byte, []mark) {
	b = e.enc(b)
	return b, append(m, mark{end: len(b), important: e.important})
}

// summaryMarks marks each line of b (summaries only: routine) from the
// end of the last mark in m.
func summaryMarks(b []byte, m []mark) []mark {
	start := 0
	if len(m) > 0 {
		start = m[len(m)-1].end
	}
	for i := start; i < len(b); i++ {
		if b[i] == '\n' {
			m = append(m, mark{end: i + 1})
		}
	}
	return m
}

// routineDelay is how long a file log may hold routine records (calls
// allowed by a rule) before writing them; every other record is written
// at once, with whatever is queued before it.
const routineDelay = 10 * time.Millisecond

// maxBatch bounds one batched write of a file log.
const maxBatch = 64 << 10

// writeOut writes a batch of whole records: first what an earlier
// failure held back, then a record of what was dropped, then the batch.
// What the sink refuses is sorted: important records are tried alone
// (they may fit where the batch did not) and else held, routine ones
// are dropped and counted.
func (l *Log) writeOut(batch []byte, marks []mark, probe bool) {
	l.tee(batch) // new records only: held ones were teed when made
	wrote := false
	if len(l.pending) > 0 {
		if _, err := l.sink.write(l.pending, false); err != nil {
			l.failed(err)
			l.hold(batch, marks, 0)
			return
		}
		l.pending, wrote = l.pending[:0], true
		l.failing = false // the file took records again
	}
	if (l.unwritten > 0 || l.lost > 0) && (probe || !l.failing) {
		// A count, not an ask or denial: it does not use the room kept
		// for those (so retrying it cannot eat that room up).
		rec := l.appendRecord(nil, l.now(), EventDropped, l.droppedFields(0, l.unwritten, l.lost))
		if _, err := l.sink.write(rec, true); err != nil {
			l.failed(err) // the batch's asks and denials are still tried
		} else {
			l.tee(rec) // once, when written (it is made anew at each try)
			l.unwritten, l.lost, wrote = 0, 0, true
		}
	}
	if wrote {
		l.failing = false // the file took records again
	}
	if l.failing {
		// While the file refuses records, routine ones are not tried:
		// what room comes back goes to the held records first.
		batch, marks = l.importantOnly(batch, marks)
	}
	if len(batch) == 0 {
		return
	}
	routine := false
	for _, m := range marks {
		routine = routine || !m.important
	}
	n, err := l.sink.write(batch, routine)
	if err == nil {
		l.failing = false
		return
	}
	l.failed(err)
	// n: the whole records a writer sink took before it failed.
	var important []byte
	start := 0
	for _, m := range marks {
		if m.end > n && m.important {
			important = append(important, batch[max(start, n):m.end]...)
		}
		if m.end > n && !m.important {
			l.unwritten++
		}
		start = m.end
	}
	if len(important) == 0 {
		return
	}
	if _, err := l.sink.write(important, false); err != nil {
		l.hold(important, nil, 0)
	}
}

// importantOnly is batch without its routine records, which are counted
// as dropped.
func (l *Log) importantOnly(batch []byte, marks []mark) ([]byte, []mark) {
	var out []byte
	var om []mark
	start := 0
	for _, m := range marks {
		if m.important {
			out = append(out, batch[start:m.end]...)
			om = append(om, mark{end: len(out), important: true})
		} else {
			l.unwritten++
		}
		start = m.end
	}
	return out, om
}

// hold keeps the important records of batch[from:] for later and counts
// the routine ones as dropped. marks nil: every record is important.
func (l *Log) hold(batch []byte, marks []mark, from int) {
	keep := func(rec []byte) {
		if len(l.pending)+len(rec) > maxPending {
			l.lost++
			return
		}
		l.pending = append(l.pending, rec...)
	}
	if marks == nil {
		start := from
		for i := from; i < len(batch); i++ {
			if batch[i] == '\n' {
				keep(batch[start : i+1])
				start = i + 1
			}
		}
		return
	}
	start := 0
	for _, m := range marks {
		if m.end > from {
			if m.important {
				keep(batch[max(start, from):m.end])
			} else {
				l.unwritten++
			}
		}
		start = m.end
	}
}

func (l *Log) failed(err error) {
	l.errMu.Lock()
	if l.err == nil {
		l.err = fmt.Errorf("review log: %w", err)
	}
	l.errMu.Unlock()
	if !l.failing {
		l.failing = true
		where := "the review log"
		if l.path != "" {
			where += " " + l.path
		}
		l.say("write", "cannot write "+where+": "+errText(err)+"; permwrap goes on enforcing, holds asks and denials for it and drops routine records (counted) until it can write again")
	}
}

// errText is err without the *PathError's "write /path:" the message
// already names.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.Is(err, io.ErrShortWrite) {
		return "short write (the disk is full?)"
	}
	return err.Error()
}

// SetNotice sets how the person is told about trouble with the log (the
// supervisor's notice line, never inside the command's screen); what
// happened before it was set is said now. nil: nobody is told (what is
// said later waits for the next SetNotice, or Close's error).
func (l *Log) SetNotice(fn func(string)) {
	if l == nil {
		return
	}
	l.noticeMu.Lock()
	l.notice = fn
	var now []string
	if fn != nil {
		now, l.unsaid = l.unsaid, nil
	}
	l.noticeMu.Unlock()
	for _, text := range now {
		fn("permwrap: " + text)
	}
}

// say tells the person about the log, once per kind of trouble and run
// ("write": the file refuses records; "removed": it was removed).
func (l *Log) say(kind, text string) {
	l.noticeMu.Lock()
	if l.said[kind] {
		l.noticeMu.Unlock()
		return
	}
	if l.said == nil {
		l.said = map[string]bool{}
	}
	l.said[kind] = true
	fn := l.notice
	if fn == nil {
		l.unsaid = append(l.unsaid, text)
	}
	l.noticeMu.Unlock()
	if fn != nil {
		fn("permwrap: " + text)
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

// Close drains queued records, writes the summaries, closes the file and
// returns an error when records could not be written (how many, and
// why; the person was told when it began, if SetNotice was set) or the
// file could not be closed. Records sent after Close are discarded.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.done
		return l.closeErr()
	}
	l.closed = true
	close(l.ch)
	l.wake()
	l.mu.Unlock()
	<-l.done
	if err := l.sink.close(); err != nil {
		l.errMu.Lock()
		if l.err == nil {
			l.err = fmt.Errorf("review log: %w", err)
		}
		l.errMu.Unlock()
	}
	return l.closeErr()
}

// ErrUnwritten marks Close's error when records were left unwritten.
var ErrUnwritten = errors.New("records were not written")

// closeErr is Close's error: records left unwritten (ErrUnwritten, with
// the first write error), or else the first write or close error.
func (l *Log) closeErr() error {
	err := l.Err()
	held := int64(bytes.Count(l.pending, []byte{'\n'})) + l.lost
	if held == 0 && l.unwritten == 0 {
		return err
	}
	where := "review log"
	if l.path != "" {
		where += " " + l.path
	}
	msg := fmt.Sprintf("%s: %d ask, answer or denial record(s) and %d routine record(s) were not written", where, held, l.unwritten)
	if err != nil {
		msg += ": " + errText(err)
	}
	return unwrittenError(msg)
}

type unwrittenError string

func (e unwrittenError) Error() string { return string(e) }
func (e unwrittenError) Unwrap() error { return ErrUnwritten }

func (l *Log) send(line []byte, droppable bool) {
	l.sendLazy(func(dst []byte) []byte { return append(dst, line...) }, droppable, true, true)
}

// sendLazy queues a record whose encoding the writer goroutine does: the
// caller (a supervisor worker with a process waiting on it) pays only for
// the queueing. urgent: the writer writes it now (with everything queued
// before it); otherwise it may wait routineDelay for company. A queue
// half full is written at once too.
func (l *Log) sendLazy(enc func([]byte) []byte, droppable, urgent, important bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return
	}
	e := logEntry{enc: enc, important: important}
	if droppable {
		select {
		case l.ch <- e:
		default:
			l.dropped.Add(1)
		}
	} else {
		l.ch <- e
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
