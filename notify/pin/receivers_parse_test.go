package pin

import (
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// nlmsg is a netlink message of type typ around body, with its length
// field set to the message's length plus delta.
func nlmsg(typ uint16, body []byte, delta int) []byte {
	m := make([]byte, sizeofNlmsghdr, sizeofNlmsghdr+len(body)+3)
	binary.LittleEndian.PutUint32(m[0:], uint32(sizeofNlmsghdr+len(body)+delta))
	binary.LittleEndian.PutUint16(m[4:], typ)
	m = append(m, body...)
	for len(m)%4 != 0 {
		m = append(m, 0)
	}
	return m
}

func inetMsgBody() []byte {
	b := make([]byte, sizeofInetMsg)
	b[0], b[1] = unix.AF_INET, tcpListen
	binary.BigEndian.PutUint16(b[4:], 8080)
	copy(b[8:], []byte{127, 0, 0, 1})
	binary.LittleEndian.PutUint32(b[44:], 7)
	binary.LittleEndian.PutUint32(b[48:], 1)
	binary.LittleEndian.PutUint32(b[64:], 1000)
	binary.LittleEndian.PutUint32(b[68:], 99)
	return b
}

func errBody(errno unix.Errno) []byte {
	b := make([]byte, 4+16)
	binary.LittleEndian.PutUint32(b, uint32(-int32(errno)))
	return b
}

func TestParseInetAnswer(t *testing.T) {
	r, ok, err := parseInetAnswer(nlmsg(sockDiagByFamily, inetMsgBody(), 0))
	if err != nil || !ok || r.Cookie != 1<<32|7 || r.Ino != 99 || r.UID != 1000 || r.Local.String() != "127.0.0.1:8080" || !r.Listening {
		t.Errorf("a good answer: %+v %v %v", r, ok, err)
	}
	if _, ok, err := parseInetAnswer(nlmsg(unix.NLMSG_ERROR, errBody(unix.ENOENT), 0)); ok || err != nil {
		t.Errorf("ENOENT: %v %v, want none and no error", ok, err)
	}
	if _, _, err := parseInetAnswer(nlmsg(unix.NLMSG_ERROR, errBody(unix.EINVAL), 0)); err != unix.EINVAL {
		t.Errorf("EINVAL: %v", err)
	}
	bad := map[string][]byte{
		"empty":           nil,
		"short header":    make([]byte, 15),
		"length short":    nlmsg(sockDiagByFamily, inetMsgBody(), -sizeofInetMsg-1),
		"length past end": nlmsg(sockDiagByFamily, inetMsgBody(), 1),
		"body short":      nlmsg(sockDiagByFamily, inetMsgBody()[:sizeofInetMsg-1], 0),
		"short error":     nlmsg(unix.NLMSG_ERROR, []byte{1, 2}, 0),
		"family":          nlmsg(sockDiagByFamily, append([]byte{unix.AF_UNIX}, inetMsgBody()[1:]...), 0),
		"type":            nlmsg(unix.NLMSG_DONE, inetMsgBody(), 0),
	}
	for name, m := range bad {
		if r, ok, err := parseInetAnswer(m); ok || err == nil {
			t.Errorf("%s: %+v %v %v, want an error", name, r, ok, err)
		}
	}
}

// unixBody is a unix_diag_msg with attributes.
func unixBody(attrs ...[]byte) []byte {
	b := make([]byte, sizeofUnixMsg)
	b[0], b[1], b[2] = unix.AF_UNIX, unix.SOCK_STREAM, tcpListen
	binary.LittleEndian.PutUint32(b[4:], 5)
	binary.LittleEndian.PutUint32(b[8:], 6)
	for _, a := range attrs {
		b = append(b, a...)
	}
	return b
}

func attr(typ uint16, v []byte, delta int) []byte {
	a := make([]byte, 4, 4+len(v)+3)
	binary.LittleEndian.PutUint16(a[0:], uint16(4+len(v)+delta))
	binary.LittleEndian.PutUint16(a[2:], typ)
	a = append(a, v...)
	for len(a)%4 != 0 {
		a = append(a, 0)
	}
	return a
}

func TestParseUnixMsg(t *testing.T) {
	vfs := make([]byte, 8)
	binary.LittleEndian.PutUint32(vfs[0:], 1234)
	binary.LittleEndian.PutUint32(vfs[4:], 8<<20|3)
	uid := []byte{0xe8, 3, 0, 0}
	r, hasFile, err := parseUnixMsg(unixBody(attr(unixDiagName, []byte("\x00ab\x00c"), 0), attr(unixDiagVFS, vfs, 0), attr(unixDiagUID, uid, 0)))
	if err != nil || !hasFile || !r.Abstract || r.Name != "ab\x00c" || r.File != (FileID{Dev: unix.Mkdev(8, 3), Ino: 1234}) || r.UID != 1000 || !r.HasUID || r.Ino != 5 || r.Cookie != 6 || !r.Listening {
		t.Errorf("%+v %v %v", r, hasFile, err)
	}
	r, _, err = parseUnixMsg(unixBody(attr(unixDiagName, []byte("/run/x.sock\x00"), 0)))
	if err != nil || r.Abstract || r.Name != "/run/x.sock" {
		t.Errorf("a path: %+v %v", r, err)
	}
	for name, b := range map[string][]byte{
		"short":              unixBody()[:sizeofUnixMsg-1],
		"attribute past end": unixBody(attr(unixDiagVFS, vfs, 4)),
		"attribute < 4":      unixBody(attr(unixDiagVFS, vfs, -6)),
	} {
		if r, _, err := parseUnixMsg(b); err == nil {
			t.Errorf("%s: %+v, want an error", name, r)
		}
	}
	// A dump's datagram: messages, then DONE; a bad length anywhere
	// is an error.
	one := nlmsg(sockDiagByFamily, unixBody(), 0)
	var n int
	done, err := unixDumpPart(append(append(append([]byte(nil), one...), one...), nlmsg(unix.NLMSG_DONE, []byte{0, 0, 0, 0}, 0)...), func(Receiver) bool { n++; return true })
	if !done || err != nil || n != 2 {
		t.Errorf("a dump: done %v err %v, %d sockets", done, err, n)
	}
	for name, m := range map[string][]byte{
		"length past end": nlmsg(sockDiagByFamily, unixBody(), 4),
		"length short":    nlmsg(sockDiagByFamily, unixBody(), -sizeofUnixMsg-1),
		"trailing":        append(append([]byte(nil), one...), 1, 2, 3),
		"error":           nlmsg(unix.NLMSG_ERROR, errBody(unix.EPERM), 0),
		"ack":             nlmsg(unix.NLMSG_ERROR, errBody(0), 0),
		"type":            nlmsg(99, unixBody(), 0),
	} {
		if _, err := unixDumpPart(m, func(Receiver) bool { return true }); err == nil {
			t.Errorf("%s: no error", name)
		} else if name == "error" && !errors.Is(err, unix.EPERM) {
			t.Errorf("error answer: %v", err)
		}
	}
}

// The parsers take any bytes without a panic.
func FuzzParseDiag(f *testing.F) {
	f.Add(nlmsg(sockDiagByFamily, inetMsgBody(), 0))
	f.Add(nlmsg(sockDiagByFamily, unixBody(attr(unixDiagName, []byte("\x00x"), 0)), 0))
	f.Add(nlmsg(unix.NLMSG_ERROR, errBody(unix.ENOENT), 0))
	f.Fuzz(func(t *testing.T, m []byte) {
		parseInetAnswer(m)
		parseUnixDiag(m)
		unixDumpPart(m, func(Receiver) bool { return true })
		if len(m) >= sizeofNlmsghdr {
			parseUnixMsg(m[sizeofNlmsghdr:])
			parseInetMsg(m[sizeofNlmsghdr:])
		}
	})
}
