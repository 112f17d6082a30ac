package authority

import (
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
	// Run, when set, is written as "run" in every record: one id per
	// permwrap run, so a reader can take one run's records
	// (`permwrap policy suggest` takes the last --audit run's).
	Run string
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
