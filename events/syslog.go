package events

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

// Syslog, RFC 5424: <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID - MSG,
// the MSG being the summary line and the record's JSON. The standard
// library's log/syslog writes the older BSD format (RFC 3164) and
// cannot set the severity per message without a writer per severity,
// so this is a small writer of its own. Over tcp and unix stream
// sockets each message is framed by octet counting (RFC 6587); over
// datagrams it is one datagram.

// EncodeSyslog is a record's RFC 5424 message (no framing).
func EncodeSyslog(r Record, facility int, host string, pid int) []byte {
	pri := facility*8 + int(SeverityOf(r.Event))
	b := []byte("<" + strconv.Itoa(pri) + ">1 ")
	b = r.Time.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	b = append(b, ' ')
	b = append(b, header(host, 255)...)
	b = append(b, " permwrap "...)
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, ' ')
	b = append(b, header(r.Event, 32)...)
	b = append(b, " - "...)
	b = append(b, r.Summary()...)
	b = append(b, ' ')
	return append(b, r.Line...)
}

// header is s as an RFC 5424 header field: printable US-ASCII, at most n
// characters, "-" when empty.
func header(s string, n int) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(out) < n; i++ {
		if c := s[i]; c > 32 && c < 127 {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return string(out)
}

type syslogSink struct {
	c    SyslogConfig
	host string
	pid  int
	conn net.Conn
}

func newSyslog(c SyslogConfig) (*syslogSink, error) {
	h, _ := os.Hostname()
	return &syslogSink{c: c, host: h, pid: os.Getpid()}, nil
}

func (s *syslogSink) name() string                   { return "syslog" }
func (s *syslogSink) batching() (int, time.Duration) { return 64, 0 }

func (s *syslogSink) close() {
	if s.conn != nil {
		s.conn.Close()
	}
}

func (s *syslogSink) stream() bool { return s.c.Network == "tcp" || s.c.Network == "unix" }

func (s *syslogSink) deliver(ctx context.Context, recs []Record) (int, error) {
	for i, r := range recs {
		msg := EncodeSyslog(r, s.c.Facility, s.host, s.pid)
		if s.stream() {
			msg = append([]byte(strconv.Itoa(len(msg))+" "), msg...)
		}
		if err := s.send(ctx, msg); err != nil {
			return len(recs) - i, fmt.Errorf("%s://%s: %v", s.c.Network, s.c.Addr, err)
		}
	}
	return 0, nil
}

func (s *syslogSink) send(ctx context.Context, msg []byte) error {
	if s.conn == nil {
		d := net.Dialer{Timeout: 3 * time.Second}
		c, err := d.DialContext(ctx, s.c.Network, s.c.Addr)
		if err != nil {
			return err
		}
		s.conn = c
	}
	// A receiver that does not read blocks the write: 5 s at most, and
	// no longer than the exit bound (ctx cancelled) allows.
	s.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	conn := s.conn
	stop := context.AfterFunc(ctx, func() { conn.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := s.conn.Write(msg); err != nil {
		s.conn.Close()
		s.conn = nil
		return err
	}
	return nil
}
