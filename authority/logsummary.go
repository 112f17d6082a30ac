package authority

import (
	"cmp"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/permwrap/permwrap/engine"
)

// Summaries of routine reads. With readAllows "summary" (the default), a
// read a rule allowed without asking is not a record of its own: the
// serving thread hands the writer goroutine a readNote (a value on a
// channel: no allocation, no encoding), and the writer counts it under
// its program. One permission_request.allowed_reads record per program
// (and rule) says how many reads its processes made, how many processes
// (its first pid; each process's exec has its own record), where, and
// the first and last distinct paths (a program's first reads are its
// libraries, its last the files it was run for: the four it read most
// recently); it is written when the program has read nothing for
// summaryIdle (it ended or moved on), every summaryEvery while it keeps
// reading, and when permwrap exits. Scratch writes (EventAllowedWrites)
// are summed up the same way.

// EventAllowedReads is the summary of a process's allowed reads.
const EventAllowedReads Event = "permission_request.allowed_reads"

// EventAllowedWrites is the summary of a process's allowed writes in the
// scratch directories (LogOptions.ScratchWrites), counted the same way
// with the kinds of write ("accesses").
const EventAllowedWrites Event = "permission_request.allowed_writes"

const (
	summaryIdle    = time.Second
	summaryEvery   = 10 * time.Second
	summaryTick    = 500 * time.Millisecond
	summaryPaths   = 4    // the first and the last distinct paths kept, this many each
	summaryDirs    = 5    // top directories written
	summaryDirsMax = 256  // distinct directories counted; the rest are "other"
	summaryDirKeep = 3    // a directory is counted by its first 3 components: /usr/share/doc
	summaryPidsMax = 4096 // processes counted per summary; past it, "processes" is a floor
)

// readNote is one allowed read (or scratch write), as the writer needs
// it.
type readNote struct {
	pid     int
	exe     string
	value   string
	node    string
	rule    engine.Rule
	by      DecidedBy
	t       time.Time
	surface engine.Surface
	access  string // a write's kind (create, unlink, rename, …)
}

// summaryKey: one summary per program (executable), not per process: a
// build runs the same compiler a hundred times, and each of its
// processes is an exec record of its own already.
type summaryKey struct {
	exe, node string
	rule      engine.Rule
	surface   engine.Surface
}

type readSummary struct {
	by          DecidedBy
	first, last time.Time
	count       int64
	paths       []string // the first summaryPaths distinct paths
	lastPaths   []string // then the last summaryPaths (a ring from lastAt)
	lastAt      int
	dirs        map[string]int64
	other       int64 // reads in directories past summaryDirsMax
	accesses    map[string]int64
	pid         int              // the first process
	lastPid     int              // the last process other than pid seen (a fast path)
	pids        map[int]struct{} // the others, up to summaryPidsMax
}

// summaries is the writer goroutine's: nobody else touches it.
type summaries map[summaryKey]*readSummary

func (m summaries) add(n readNote) {
	k := summaryKey{exe: n.exe, node: n.node, rule: n.rule, surface: n.surface}
	s := m[k]
	if s == nil {
		s = &readSummary{by: n.by, first: n.t, dirs: map[string]int64{}, pid: n.pid}
		m[k] = s
	}
	if n.pid != s.pid && n.pid != s.lastPid {
		s.lastPid = n.pid
		if _, ok := s.pids[n.pid]; !ok && len(s.pids) < summaryPidsMax {
			if s.pids == nil {
				s.pids = map[int]struct{}{}
			}
			s.pids[n.pid] = struct{}{}
		}
	}
	if n.access != "" {
		if s.accesses == nil {
			s.accesses = map[string]int64{}
		}
		if _, ok := s.accesses[n.access]; ok || len(s.accesses) < summaryDirsMax {
			s.accesses[n.access]++
		}
	}
	s.count++
	s.last = n.t
	switch {
	case slices.Contains(s.paths, n.value) || slices.Contains(s.lastPaths, n.value):
	case len(s.paths) < summaryPaths:
		s.paths = append(s.paths, n.value)
	case len(s.lastPaths) < summaryPaths:
		s.lastPaths = append(s.lastPaths, n.value)
	default:
		s.lastPaths[s.lastAt] = n.value
		s.lastAt = (s.lastAt + 1) % summaryPaths
	}
	d := topDir(n.value)
	if _, ok := s.dirs[d]; ok || len(s.dirs) < summaryDirsMax {
		s.dirs[d]++
	} else {
		s.other++
	}
}

// topDir is the directory a read is counted under: the path's directory,
// cut to its first summaryDirKeep components.
func topDir(p string) string {
	d := path.Dir(p)
	if !strings.HasPrefix(d, "/") {
		return d
	}
	n := 0
	for i := 1; i < len(d); i++ {
		if d[i] == '/' {
			if n++; n == summaryDirKeep {
				return d[:i]
			}
		}
	}
	return d
}

// due appends the records of the summaries due at now (all of them with
// all) to b and forgets them.
func (l *Log) dueSummaries(b []byte, now time.Time, all bool) ([]byte, int) {
	n := 0
	for k, s := range l.sums {
		if all || now.Sub(s.last) >= summaryIdle || now.Sub(s.first) >= summaryEvery {
			ev := EventAllowedReads
			if k.surface == engine.SurfaceWrite {
				ev = EventAllowedWrites
			}
			b = l.appendRecord(b, s.last, ev, l.summaryFields(k, s))
			delete(l.sums, k)
			n++
		}
	}
	return b, n
}

func (l *Log) summaryFields(k summaryKey, s *readSummary) fields {
	dirs := make([]DirCount, 0, len(s.dirs))
	for d, c := range s.dirs {
		dirs = append(dirs, DirCount{d, c})
	}
	slices.SortFunc(dirs, func(a, b DirCount) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return strings.Compare(a.Dir, b.Dir)
	})
	var rest int64
	for _, d := range dirs[min(len(dirs), summaryDirs):] {
		rest += d.Count
	}
	dirs = dirs[:min(len(dirs), summaryDirs)]
	list := make([]any, 0, len(dirs)+1)
	for _, d := range dirs {
		list = append(list, map[string]any{"dir": d.Dir, "count": d.Count})
	}
	if rest += s.other; rest > 0 {
		list = append(list, map[string]any{"dir": "(elsewhere)", "count": rest})
	}
	paths := make([]any, 0, len(s.paths)+len(s.lastPaths))
	for _, p := range s.paths {
		paths = append(paths, p)
	}
	for i := range s.lastPaths {
		paths = append(paths, s.lastPaths[(s.lastAt+i)%len(s.lastPaths)])
	}
	f := fields{
		{"requestId", NewRequestID()},
		{"pid", s.pid},
		{"processes", len(s.pids) + 1},
		{"exe", k.exe},
		{"program", path.Base(k.exe)},
		{"surface", k.surface.String()},
		{"count", s.count},
		{"since", s.first.UTC().Format(time.RFC3339Nano)},
		{"dirs", list},
		{"paths", paths},
	}
	if len(s.accesses) > 0 {
		f = append(f, field{"accesses", s.accesses})
	}
	if k.node != "" {
		f = append(f, field{"node", k.node})
	}
	if ruleSet(k.rule) {
		f = append(f, field{"rule", k.rule})
	}
	return append(f, field{"action", engine.Allow.String()}, field{"decidedBy", s.by})
}
