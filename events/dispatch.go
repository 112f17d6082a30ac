package events

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of the dispatcher.
const (
	// QueueSize is how many records wait for a sink; past it they are
	// dropped and counted.
	QueueSize = 4096
	// FlushBound bounds Close: what is not sent by then is dropped and
	// counted, so a dead collector delays permwrap's exit by at most this.
	FlushBound = 2 * time.Second
)

// deliverer is one sink's delivery: send a batch (retrying as the sink
// sees fit, giving up when ctx is done), and say how many were lost.
type deliverer interface {
	name() string
	// batching: the largest batch and how long to wait to fill it (0:
	// take what is queued, do not wait).
	batching() (int, time.Duration)
	// deliver sends recs; it returns how many were not delivered and why.
	deliver(ctx context.Context, recs []Record) (lost int, err error)
	close()
}

// Dispatcher is the review log's tee (authority.Tee): it queues each
// record for every sink without blocking and sends from one goroutine
// per sink.
type Dispatcher struct {
	workers []*worker
	ctx     context.Context // cancelled when the flush bound has passed
	cancel  context.CancelFunc
	bound   time.Duration
	closed  bool

	sayMu sync.Mutex
	say   func(kind, text string)
}

type worker struct {
	d       *Dispatcher
	del     deliverer
	q       chan []byte
	dropped atomic.Int64
	done    chan struct{}
	told    atomic.Bool
}

// New starts a dispatcher for the sinks cfg configures; nil when it
// configures none. An error: a sink could not be set up (its address).
func New(cfg Config) (*Dispatcher, error) {
	var dels []deliverer
	if cfg.Journald != nil {
		dels = append(dels, newJournald(*cfg.Journald))
	}
	if cfg.Syslog != nil {
		s, err := newSyslog(*cfg.Syslog)
		if err != nil {
			return nil, err
		}
		dels = append(dels, s)
	}
	if cfg.OTLP != nil {
		dels = append(dels, newOTLP(*cfg.OTLP))
	}
	return newDispatcher(dels, QueueSize, FlushBound), nil
}

func newDispatcher(dels []deliverer, queue int, bound time.Duration) *Dispatcher {
	if len(dels) == 0 {
		return nil
	}
	d := &Dispatcher{bound: bound}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	for _, del := range dels {
		w := &worker{d: d, del: del, q: make(chan []byte, queue), done: make(chan struct{})}
		d.workers = append(d.workers, w)
		go w.run()
	}
	return d
}

// SetSay sets how the person is told, once per sink, that records are
// being dropped (authority.Log.SayOnce).
func (d *Dispatcher) SetSay(fn func(kind, text string)) {
	if d == nil {
		return
	}
	d.sayMu.Lock()
	d.say = fn
	d.sayMu.Unlock()
}

// Records queues each line of b for every sink; a sink whose queue is
// full drops it and counts. It never blocks.
func (d *Dispatcher) Records(b []byte) {
	if d == nil || d.closed {
		return
	}
	// One copy of the batch, its lines shared by the sinks (never written).
	splitLines(append([]byte(nil), b...), func(line []byte) {
		for _, w := range d.workers {
			select {
			case w.q <- line:
			default:
				w.drop(1, errQueueFull)
			}
		}
	})
}

var errQueueFull = errors.New("its queue is full (the sink is slower than the decisions)")

// Close sends what is queued, for at most the flush bound, and returns
// what each sink dropped (sinks that dropped nothing are left out).
func (d *Dispatcher) Close() map[string]int64 {
	if d == nil || d.closed {
		return nil
	}
	d.closed = true
	for _, w := range d.workers {
		close(w.q)
	}
	timer := time.AfterFunc(d.bound, d.cancel)
	defer timer.Stop()
	for _, w := range d.workers {
		<-w.done
	}
	d.cancel()
	out := map[string]int64{}
	for _, w := range d.workers {
		w.del.close()
		if n := w.dropped.Load(); n > 0 {
			out[w.del.name()] += n
		}
	}
	return out
}

// Dropped is what each sink has dropped so far.
func (d *Dispatcher) Dropped() map[string]int64 {
	out := map[string]int64{}
	if d == nil {
		return out
	}
	for _, w := range d.workers {
		out[w.del.name()] += w.dropped.Load()
	}
	return out
}

// Sinks names the dispatcher's sinks, sorted.
func (d *Dispatcher) Sinks() []string {
	var out []string
	if d != nil {
		for _, w := range d.workers {
			out = append(out, w.del.name())
		}
	}
	sort.Strings(out)
	return out
}

func (w *worker) drop(n int, why error) {
	if n <= 0 {
		return
	}
	w.dropped.Add(int64(n))
	if w.told.Swap(true) {
		return
	}
	w.d.sayMu.Lock()
	say := w.d.say
	w.d.sayMu.Unlock()
	if say != nil {
		say("events-"+w.del.name(), "events: "+w.del.name()+": dropping records: "+why.Error()+"; decisions go on, the records stay in the review log, and the count is written there at exit (events.dropped)")
	}
}

func (w *worker) run() {
	defer close(w.done)
	max, wait := w.del.batching()
	batch := make([]Record, 0, max)
	var timer *time.Timer
	for {
		line, ok := <-w.q
		if !ok {
			return
		}
		batch = w.add(batch[:0], line)
		open := true
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
		fill:
			for len(batch) < max {
				select {
				case l, more := <-w.q:
					if !more {
						open = false
						break fill
					}
					batch = w.add(batch, l)
				case <-timer.C:
					break fill
				}
			}
			timer.Stop()
		} else {
		take:
			for len(batch) < max {
				select {
				case l, more := <-w.q:
					if !more {
						open = false
						break take
					}
					batch = w.add(batch, l)
				default:
					break take
				}
			}
		}
		w.send(batch)
		if !open {
			return
		}
	}
}

func (w *worker) add(batch []Record, line []byte) []Record {
	r, err := ParseRecord(line)
	if err != nil {
		w.drop(1, errors.New("a record did not parse: "+err.Error()))
		return batch
	}
	return append(batch, r)
}

func (w *worker) send(batch []Record) {
	if len(batch) == 0 {
		return
	}
	if w.d.ctx.Err() != nil {
		w.drop(len(batch), errors.New("not sent within the exit bound"))
		return
	}
	if lost, err := w.del.deliver(w.d.ctx, batch); lost > 0 {
		if err == nil {
			err = errors.New("not delivered")
		}
		w.drop(lost, err)
	}
}
