package authority

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/permwrap/permwrap/internal/appendfile"
)

// Where the review log's records go: a file (fileSink), written whole
// records at a time under a lock shared with every other permwrap
// writing the same file, rotated by size; or any writer (writerSink), one
// record per Write.

// logSink takes whole records (each ending in a newline). write reports
// how many bytes of b, a prefix of whole records, reached the file; on an
// error a file sink has taken nothing (it cut back what a short write
// left), so every record is in the file whole or not at all. routine: b
// holds routine records, which a file sink refuses when they would eat
// into the room it keeps for the others (appendfile.CheckRoom).
type logSink interface {
	write(b []byte, routine bool) (int, error)
	close() error
}

// writerSink is NewLogWriter's: each record is one Write.
type writerSink struct {
	w io.Writer
	c io.Closer
}

func (s writerSink) write(b []byte, _ bool) (int, error) {
	done := 0
	for done < len(b) {
		end := len(b)
		for i := done; i < len(b); i++ {
			if b[i] == '\n' {
				end = i + 1
				break
			}
		}
		n, err := s.w.Write(b[done:end])
		if err == nil && n < end-done {
			err = io.ErrShortWrite
		}
		if err != nil {
			return done, err
		}
		done = end
	}
	return done, nil
}

func (s writerSink) close() error {
	if s.c == nil {
		return nil
	}
	return s.c.Close()
}

// Rotation defaults: at 10 MB the file becomes review.jsonl.1 (the
// older ones shift to .2 and .3, the oldest is removed).
const (
	DefaultLogRotateBytes = 10 << 20
	DefaultLogKeep        = 3
)

// lockWait bounds the wait for the log's lock: between permwraps it is
// held for one write; longer, someone else holds it.
const lockWait = 500 * time.Millisecond

// fileSink writes a review-log file. Every write holds an exclusive
// flock on path+".lock" (the file itself when that cannot be made), so
// permwrap processes sharing the log — nested wrappers, parallel runs —
// take turns: under the lock each checks that its descriptor is still
// the file at path (another may have rotated it, or a person removed
// it), rotates when the next write would pass rotateAt, writes, and
// cuts back a short write.
type fileSink struct {
	path     string
	f        *os.File
	lock     *os.File // nil: lock f
	rotateAt int64    // 0: never rotate
	keep     int
	// rawWrite is the write(2) of a batch; tests inject short writes.
	rawWrite func(f *os.File, b []byte) (int, error)
	// reserve makes room for a write before it is made (appendfile.Reserve);
	// noReserve: the filesystem cannot, so a short write is cut back.
	reserve   func(f *os.File, off, n int64) error
	noReserve bool
	// room refuses a routine write that would leave less free than the
	// headroom kept for asks and denials (appendfile.CheckRoom).
	room func(f *os.File, n int64) error
	// cutFailed: a short write could not be cut back; the next write
	// starts with a newline so the broken line stays alone.
	cutFailed bool
	// event, when set, is told what the sink did on its own: the file was
	// removed or replaced and a new one opened.
	event func(string)
}

func openFileSink(path string, rotateAt int64, keep int) (*fileSink, error) {
	f, err := OpenLogFile(path)
	if err != nil {
		return nil, err
	}
	s := &fileSink{path: path, f: f, rotateAt: rotateAt, keep: keep, rawWrite: func(f *os.File, b []byte) (int, error) { return f.Write(b) }, reserve: appendfile.Reserve, room: appendfile.CheckRoom}
	if lf, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, logFileMode); err == nil {
		s.lock = lf
	}
	return s, nil
}

func (s *fileSink) lockFile() *os.File {
	if s.lock != nil {
		return s.lock
	}
	return s.f
}

func (s *fileSink) write(b []byte, routine bool) (int, error) {
	// A lock that cannot be taken (a filesystem without flock, a lock held
	// too long — whoever can read the file can lock it) leaves the write
	// to O_APPEND alone, and the file is not rotated.
	unlock, lerr := appendfile.Lock(s.lockFile(), lockWait)
	defer unlock()
	locked := lerr == nil
	if err := s.follow(); err != nil {
		return 0, err
	}
	st, err := s.f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if s.rotateAt > 0 && size > 0 && size+int64(len(b)) > s.rotateAt && locked {
		if err := s.rotate(); err != nil {
			return 0, err
		}
		size = 0
	}
	if routine {
		if err := s.room(s.f, int64(len(b))); err != nil {
			return 0, err
		}
	}
	out := b
	if s.cutFailed {
		out = append([]byte{'\n'}, b...)
	}
	if locked && !s.noReserve {
		// Room first: where the filesystem can reserve it, a batch that
		// does not fit is refused before a byte of it is written, so not
		// even a reader at that moment sees part of a record.
		switch err := s.reserve(s.f, size, int64(len(out))); {
		case errors.Is(err, appendfile.ErrUnsupported):
			s.noReserve = true
		case err != nil:
			return 0, err
		}
	}
	n, err := s.rawWrite(s.f, out)
	if err == nil && n < len(out) {
		err = io.ErrShortWrite
	}
	if err != nil {
		if n > 0 {
			// Whole records or nothing: cut back what this write left.
			if terr := s.f.Truncate(size); terr != nil {
				s.cutFailed = true
			}
		}
		return 0, err
	}
	s.cutFailed = false
	return len(b), nil
}

// follow reopens path when the descriptor no longer names the file there:
// another permwrap rotated it, or it was removed or replaced.
func (s *fileSink) follow() error {
	cur, err := s.f.Stat()
	if err != nil {
		return err
	}
	now, err := os.Stat(s.path)
	if err == nil && os.SameFile(cur, now) {
		return nil
	}
	removed := err != nil
	nf, oerr := OpenLogFile(s.path)
	if oerr != nil {
		return oerr
	}
	s.f.Close()
	s.f = nf
	if removed && s.event != nil {
		s.event("review log " + s.path + " was removed while permwrap ran; writing a new one there")
	}
	return nil
}

// rotate shifts path.N-1 → path.N … path → path.1 and opens a new path.
func (s *fileSink) rotate() error {
	if s.keep <= 0 {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	} else {
		for i := s.keep - 1; i >= 1; i-- {
			from := s.path + "." + strconv.Itoa(i)
			if err := os.Rename(from, s.path+"."+strconv.Itoa(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("rotating: %w", err)
			}
		}
		if err := os.Rename(s.path, s.path+".1"); err != nil {
			return fmt.Errorf("rotating: %w", err)
		}
	}
	nf, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, logFileMode)
	if err != nil {
		return err
	}
	s.f.Close()
	s.f = nf
	return nil
}

func (s *fileSink) close() error {
	if s.lock != nil {
		s.lock.Close()
	}
	return s.f.Close()
}

// RotatedLogs lists the files of the log at path, oldest first: path.N …
// path.1 that exist, then path itself.
func RotatedLogs(path string) []string {
	var older []string
	for i := 1; i <= 99; i++ {
		p := path + "." + strconv.Itoa(i)
		if _, err := os.Stat(p); err != nil {
			break
		}
		older = append(older, p)
	}
	out := make([]string, 0, len(older)+1)
	for i := len(older) - 1; i >= 0; i-- {
		out = append(out, older[i])
	}
	return append(out, path)
}
