package forwarding

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
)

// Sink streams one node's review-log records to its inner permwrap. It is
// the io.Writer under that node's authority.Log (authority.NewLogWriter):
// every Write is one record line.
//
// Write never blocks: the supervisor worker that logs a decision must not
// wait on an inner permwrap that stopped reading (it may be stopped, or
// slow). Records queue up to a byte budget; past it they are dropped and
// counted, and the inner is told how many (a Dropped message, written to
// its log as a record). The root's own log keeps every record.
type Sink struct {
	mu      sync.Mutex
	q       [][]byte
	qBytes  int
	max     int
	dropped int64
	closed  bool
	wake    chan struct{}
	done    chan struct{}
	sent    atomic.Int64
}

// DefaultSinkBuffer is how many bytes of records may wait for the inner.
const DefaultSinkBuffer = 4 << 20

func newSink(max int) *Sink {
	if max <= 0 {
		max = DefaultSinkBuffer
	}
	return &Sink{max: max, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Write queues one record line (a trailing newline is removed). A line
// that cannot travel (too long, or holding a line break) is dropped and
// counted, as is everything written after the connection closed.
func (s *Sink) Write(p []byte) (int, error) {
	n := len(p)
	line := bytes.TrimSuffix(p, []byte("\n"))
	ok := len(line) > 0 && len(line) <= MaxLogLine && !bytes.ContainsAny(line, "\n\r")
	s.mu.Lock()
	switch {
	case s.closed:
	case !ok || s.qBytes+len(line) > s.max:
		s.dropped++
	default:
		s.q = append(s.q, append([]byte(nil), line...))
		s.qBytes += len(line)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return n, nil
}

// Dropped is how many records were dropped and not yet reported.
func (s *Sink) Dropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Sent is how many records were written to the connection.
func (s *Sink) Sent() int64 { return s.sent.Load() }

// run sends queued records on w until the sink is closed or a write
// fails, then drains (reporting what it could not send is the inner's
// loss; the root's log has it all).
func (s *Sink) run(w io.Writer) {
	defer close(s.done)
	for {
		s.mu.Lock()
		q, dropped, closed := s.q, s.dropped, s.closed
		s.q, s.qBytes, s.dropped = nil, 0, 0
		s.mu.Unlock()
		for _, line := range q {
			if err := WriteMessage(w, Log{Line: string(line)}); err != nil {
				s.close()
				return
			}
			s.sent.Add(1)
		}
		if dropped > 0 {
			if err := WriteMessage(w, Dropped{Count: dropped}); err != nil {
				s.close()
				return
			}
		}
		if closed {
			return
		}
		if len(q) == 0 && dropped == 0 {
			<-s.wake
		}
	}
}

// close stops the sink; queued records are still sent by run if it can.
func (s *Sink) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
