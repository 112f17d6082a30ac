package supervisor

import (
	"encoding/json"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
)

// Call statistics for performance work (PERMWRAP_STATS=FILE, Config.Stats;
// docs/kernel.md, "How it is measured"): how many notifications of each
// kind the supervisor handled, and the CPU time its receiving workers
// spent handling them, written as one JSON object when the run ends.
//
// Off (the default), the supervisor serves with handle itself and pays
// one nil check per notification (handle's note). On, every notification
// is handled through callStats.handler: the worker is locked to its OS thread
// for the call, so that CLOCK_THREAD_CPUTIME_ID read before and after
// measures this call alone (two clock reads per call: an open loop's CPU
// under the default policy moved by less than its noise). What a worker hands off is not in its time: an ask
// (answered on a goroutine of its own) and an open that may block (done
// off the pool, openCall.perform).

// Kinds of notified call. The rest are counted under their syscall's
// name (rename, unlinkat, mkdir, connect, sendto, ...), and those the
// decoder answered (the kernel's own error, a missing file) or refused
// under the name and "-failed" (unlink-failed).
const (
	kindOpenRead   = "open-read"   // a read-only open of an existing file (not O_DIRECTORY)
	kindOpenWrite  = "open-write"  // an open with write access to an existing file (O_TRUNC included)
	kindOpenCreate = "open-create" // an O_CREAT open of a missing file, or O_TMPFILE
	kindOpenDir    = "open-dir"    // a read-only O_DIRECTORY open
	kindOpenFailed = "open-failed" // an open the decoder answered: a missing file, a bad path (ENOENT mostly)
	kindExec       = "exec"        // execve, execveat: judged, continued, verified
	kindContinued  = "continued"   // continued without a decision (answer.go: O_PATH opens, exec stops, chdir, ...)
	kindSettled    = "settled"     // answered as the kernel would without resolving anything (kernel.go)
	kindKnock      = "knock"       // an inner permwrap's knock (forwarding.go)
	kindEarly      = "early"       // answered before decoding: a process that failed exec verification, an unwatched syscall
)

// callStats counts the notifications of one run by kind.
type callStats struct {
	file string
	mu   sync.Mutex
	// pending: the kind of each notification being handled, by its id,
	// noted by handle once decoded (note) and taken when it returns.
	pending map[uint64]string
	byKind  map[string]*kindStats
}

type kindStats struct {
	Count uint64 `json:"count"`
	CPUNs int64  `json:"cpu_ns"`
}

// newCallStats is nil (no statistics) when file is "".
func newCallStats(file string) *callStats {
	if file == "" {
		return nil
	}
	return &callStats{file: file, pending: map[uint64]string{}, byKind: map[string]*kindStats{}}
}

// handler wraps handle: each call is timed on its thread and counted
// under the kind handle noted for it (kindEarly when none).
func (c *callStats) handler(handle func(*notify.Notif, *notify.Quiet)) func(*notify.Notif, *notify.Quiet) {
	return func(n *notify.Notif, q *notify.Quiet) {
		runtime.LockOSThread()
		start := threadCPU()
		handle(n, q)
		end := threadCPU()
		runtime.UnlockOSThread()
		spent := int64(0)
		if start > 0 && end > start {
			spent = end - start
		}
		c.mu.Lock()
		kind, ok := c.pending[n.ID]
		delete(c.pending, n.ID)
		if !ok {
			kind = kindEarly
		}
		k := c.byKind[kind]
		if k == nil {
			k = &kindStats{}
			c.byKind[kind] = k
		}
		k.Count++
		k.CPUNs += spent
		c.mu.Unlock()
	}
}

// note records the kind of the notification id (handle, once decoded).
func (c *callStats) note(id uint64, row *sysRow, d decoded, err error) {
	kind := statsKind(row, d, err)
	c.mu.Lock()
	c.pending[id] = kind
	c.mu.Unlock()
}

// statsKind is the kind of a decoded notification: what its row's decoder
// made of it (d), or its error.
func statsKind(row *sysRow, d decoded, err error) string {
	open := row.name == "open" || row.name == "openat" || row.name == "openat2" || row.name == "creat"
	switch c := d.(type) {
	case nil:
		if err != nil && open {
			return kindOpenFailed
		}
		if err != nil {
			return row.name + "-failed"
		}
	case continued:
		return kindContinued
	case settled:
		return kindSettled
	case *knockCall:
		return kindKnock
	case *execCall:
		return kindExec
	case *openCall:
		switch {
		case c.flags&oTmpfileBit != 0 || c.creates():
			return kindOpenCreate
		case c.access&engine.AccessWrite != 0:
			return kindOpenWrite
		case c.flags&unix.O_DIRECTORY != 0:
			return kindOpenDir
		}
		return kindOpenRead
	}
	return row.name
}

// statsFile is what PERMWRAP_STATS's file holds.
type statsFile struct {
	// Calls and CPUNs are the totals over every kind.
	Calls uint64 `json:"calls"`
	CPUNs int64  `json:"cpu_ns"`
	// Kinds: per kind, its count and its handling CPU (nanoseconds).
	Kinds map[string]*kindStats `json:"kinds"`
	// ProcessCPUNs is the supervisor process's own CPU time (user and
	// system, every thread: the workers, the review log, the relay, the
	// runtime, start-up included) when the file was written.
	ProcessCPUNs int64 `json:"process_cpu_ns"`
	PID          int   `json:"pid"`
}

// write writes the statistics to their file (finish, at the end of the
// run). A failure is the caller's to report; the run's status does not
// change.
func (c *callStats) write() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	out := statsFile{Kinds: map[string]*kindStats{}, PID: os.Getpid()}
	for k, v := range c.byKind {
		cp := *v
		out.Kinds[k] = &cp
		out.Calls += v.Count
		out.CPUNs += v.CPUNs
	}
	c.mu.Unlock()
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) == nil {
		out.ProcessCPUNs = ru.Utime.Nano() + ru.Stime.Nano()
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(c.file, append(b, '\n'), 0o644)
}

// threadCPU is the calling thread's CPU time in nanoseconds (0 when the
// clock cannot be read: that call counts, with no time).
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
