package events

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/testutil"
)

// blackHole accepts connections and never answers (nor reads).
func blackHole(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "http://" + ln.Addr().String()
}

// refused is an address nothing listens on.
func refused(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestDeadCollectorExitBound: with a collector that never answers, or
// refuses, Close gives up after the flush bound and counts every record
// as dropped. A bound check (generous, scaled), not a performance
// assertion.
func TestDeadCollectorExitBound(t *testing.T) {
	line := denialLine(t)
	for name, url := range map[string]string{"black hole": blackHole(t), "refused": refused(t)} {
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			c := testOTLPConfig(url, ProtoProtobuf)
			c.Timeout = DefaultOTLPTimeout // longer than the bound: the bound must cut it
			d := newDispatcher([]deliverer{newOTLP(c)}, QueueSize, FlushBound)
			var said []string
			var mu sync.Mutex
			d.SetSay(func(_, text string) { mu.Lock(); said = append(said, text); mu.Unlock() })
			const n = 100
			for range n {
				d.Records(append(line, '\n'))
			}
			start := time.Now()
			got := d.Close()
			took := time.Since(start)
			if limit := FlushBound + testutil.Scale(5*time.Second); took > limit {
				t.Errorf("Close took %v, bound %v", took, limit)
			}
			if got["otlp"] != n {
				t.Errorf("dropped %v, want otlp: %d", got, n)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(said) != 1 || strings.Contains(said[0], "sekrit") {
				t.Errorf("told %q", said)
			}
		})
	}
}

// BenchmarkDecisionPath: what a decision pays to record a denial in the
// review log (authority.Log.Record, queued for the writer goroutine),
// with no event sink and with an OTLP sink whose collector accepts
// connections and never answers. Compare the ns/op medians of
//
//	go test -run '^$' -bench DecisionPath -count 6 ./events
func BenchmarkDecisionPath(b *testing.B) {
	r := authority.NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: "/etc/hosts"})
	r.Process.PID = 4242
	by := authority.ByRule{Surface: engine.SurfaceWrite, Pattern: "/etc/**", Origin: engine.OriginGlobal, Pos: engine.Position{File: "policy.jsonc", Line: 12, Column: 5}}
	dec := authority.Denied(by, "system files")
	run := func(b *testing.B, tee authority.Tee) {
		l := authority.NewLogWriter(discardW{}, authority.LogOptions{Tee: tee})
		b.ReportAllocs()
		for b.Loop() {
			l.Record(authority.EventDenied, r, dec)
		}
		b.StopTimer()
		l.Close()
	}
	b.Run("events=off", func(b *testing.B) { run(b, nil) })
	b.Run("events=otlp-black-hole", func(b *testing.B) {
		c := testOTLPConfig(blackHole(b), ProtoProtobuf)
		d := newDispatcher([]deliverer{newOTLP(c)}, QueueSize, 100*time.Millisecond)
		run(b, d)
	})
	b.Run("events=otlp-refused", func(b *testing.B) {
		c := testOTLPConfig(refused(b), ProtoProtobuf)
		d := newDispatcher([]deliverer{newOTLP(c)}, QueueSize, 100*time.Millisecond)
		run(b, d)
	})
}

type discardW struct{}

func (discardW) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkTeeRecords: what the tee adds to the review log's writer
// goroutine per record (a copy and a non-blocking send per sink), with
// an OTLP sink whose collector never answers (the queue fills, then
// every record is dropped and counted) — the decision itself never
// runs this.
func BenchmarkTeeRecords(b *testing.B) {
	line := append(denialLine(b), '\n')
	d := newDispatcher([]deliverer{newOTLP(testOTLPConfig(blackHole(b), ProtoProtobuf))}, QueueSize, 100*time.Millisecond)
	b.ReportAllocs()
	for b.Loop() {
		d.Records(line)
	}
	b.StopTimer()
	d.Close()
}
