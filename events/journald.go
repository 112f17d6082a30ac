package events

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/permwrap/permwrap/notify/host"
)

// The journal's native protocol (systemd's journal-native(7)): one
// datagram per entry, fields NAME=value\n, or, for a value holding a
// newline, NAME\n, its length as 64-bit little-endian, the value, \n. An
// entry too large for a datagram is written to a sealed memfd whose
// descriptor is sent (SCM_RIGHTS) in an empty datagram, as
// sd_journal_send does. This is ~100 lines; go-systemd's journal package
// would bring the same with a temporary file in /dev/shm instead of a
// memfd.

// JournalFields is an entry's fields for a record: MESSAGE,
// PRIORITY, SYSLOG_IDENTIFIER, one PERMWRAP_<FIELD> per review-log
// field (strings as they are, the rest as compact JSON), and
// PERMWRAP_RECORD, the whole line.
func JournalFields(r Record) [][2]string {
	f := make([][2]string, 0, len(r.Fields)+4)
	f = append(f,
		[2]string{"MESSAGE", r.Summary()},
		[2]string{"PRIORITY", strconv.Itoa(int(SeverityOf(r.Event)))},
		[2]string{"SYSLOG_IDENTIFIER", "permwrap"},
	)
	for _, fl := range r.Fields {
		name := journalName(fl.Key)
		if name == "" {
			continue
		}
		f = append(f, [2]string{name, fl.Text})
	}
	return append(f, [2]string{"PERMWRAP_RECORD", string(r.Line)})
}

// journalName is PERMWRAP_ and the key in upper snake case; "" when it
// cannot be a journal field name (at most 64 of A-Z, 0-9, _).
func journalName(k string) string {
	n := "PERMWRAP_" + strings.ToUpper(SnakeKey(k))
	if len(n) > 64 {
		return ""
	}
	return n
}

// EncodeJournal is an entry's datagram.
func EncodeJournal(fields [][2]string) []byte {
	var b []byte
	for _, f := range fields {
		if strings.IndexByte(f[1], '\n') < 0 {
			b = append(b, f[0]...)
			b = append(b, '=')
			b = append(b, f[1]...)
			b = append(b, '\n')
			continue
		}
		b = append(b, f[0]...)
		b = append(b, '\n')
		b = binary.LittleEndian.AppendUint64(b, uint64(len(f[1])))
		b = append(b, f[1]...)
		b = append(b, '\n')
	}
	return b
}

// DecodeJournal reads an entry back (tests, and a fake journal).
func DecodeJournal(b []byte) ([][2]string, error) {
	var out [][2]string
	for len(b) > 0 {
		nl := strings.IndexByte(string(b), '\n')
		if nl < 0 {
			return out, errors.New("field without a newline")
		}
		line := string(b[:nl])
		if k, v, ok := strings.Cut(line, "="); ok {
			out = append(out, [2]string{k, v})
			b = b[nl+1:]
			continue
		}
		b = b[nl+1:]
		if len(b) < 8 {
			return out, errors.New("binary field without its length")
		}
		n := binary.LittleEndian.Uint64(b)
		b = b[8:]
		if uint64(len(b)) < n+1 || b[n] != '\n' {
			return out, errors.New("binary field cut short")
		}
		out = append(out, [2]string{line, string(b[:n])})
		b = b[n+1:]
	}
	return out, nil
}

type journald struct {
	socket string
	conn   *net.UnixConn
}

func newJournald(c JournaldConfig) *journald {
	return &journald{socket: first(c.Socket, DefaultJournalSocket)}
}

func (j *journald) name() string                   { return "journald" }
func (j *journald) batching() (int, time.Duration) { return 64, 0 }

func (j *journald) close() {
	if j.conn != nil {
		j.conn.Close()
	}
}

func (j *journald) deliver(ctx context.Context, recs []Record) (int, error) {
	for i, r := range recs {
		if err := j.send(ctx, EncodeJournal(JournalFields(r))); err != nil {
			return len(recs) - i, fmt.Errorf("journal socket %s: %v", j.socket, err)
		}
	}
	return 0, nil
}

func (j *journald) send(ctx context.Context, b []byte) error {
	if j.conn == nil {
		c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: j.socket, Net: "unixgram"})
		if err != nil {
			return err
		}
		j.conn = c
	}
	// A journal that does not read blocks the socket: 5 s at most, and
	// no longer than the exit bound (ctx cancelled) allows.
	j.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	conn := j.conn
	stop := context.AfterFunc(ctx, func() { conn.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	_, err := j.conn.Write(b)
	if errors.Is(err, syscall.EMSGSIZE) || errors.Is(err, syscall.ENOBUFS) {
		return j.sendMemfd(b)
	}
	if err != nil {
		j.conn.Close() // journald restarted? dial again next time
		j.conn = nil
	}
	return err
}

// sendMemfd passes an entry too large for a datagram as a sealed memfd
// (notify/host.SendSealedMemfd: the system calls stay in notify/host).
func (j *journald) sendMemfd(b []byte) error {
	return host.SendSealedMemfd(j.conn, "journal-message", b)
}
