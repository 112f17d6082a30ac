package authority

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
)

// RequestID names one permission request from the moment it is created to
// its last review-log record. It is a UUIDv7: the leading 48 bits are the
// Unix time in milliseconds, so ids sort by creation time in the log.
type RequestID string

var idClock struct {
	sync.Mutex
	lastMs  int64
	counter uint16 // 12 bits used: orders ids minted in the same millisecond
}

// NewRequestID mints a fresh time-ordered id. Within one process, ids are
// strictly increasing even when minted in the same millisecond (RFC 9562
// method 1: a counter in rand_a), so log order and id order agree.
func NewRequestID() RequestID {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux ≥ 3.17; a broken one would
		// make ids guessable, which is not a safety property we rely on.
		panic("authority: crypto/rand failed: " + err.Error())
	}
	ms := time.Now().UnixMilli()
	idClock.Lock()
	if ms <= idClock.lastMs {
		idClock.counter++
		if idClock.counter > 0x0fff { // counter exhausted: borrow the next millisecond
			idClock.lastMs++
			idClock.counter = 0
		}
		ms = idClock.lastMs
	} else {
		idClock.lastMs = ms
		idClock.counter = uint16(b[6]&0x03)<<8 | uint16(b[7]) // random start, room to count up
	}
	seq := idClock.counter
	idClock.Unlock()

	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(ms))
	copy(b[0:6], ts[2:8])
	b[6] = 0x70 | byte(seq>>8)&0x0f
	b[7] = byte(seq)
	b[8] = 0x80 | b[8]&0x3f

	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return RequestID(out[:])
}

// Valid reports whether id has the shape of a UUID (any version). Ids read
// back from untrusted places (a log, the forwarding wire) are checked
// before they name anything.
func (id RequestID) Valid() bool {
	s := string(id)
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// Time returns the creation time encoded in a UUIDv7 id, and false for
// anything else.
func (id RequestID) Time() (time.Time, bool) {
	if !id.Valid() || id[14] != '7' {
		return time.Time{}, false
	}
	var b [8]byte
	if _, err := hex.Decode(b[2:6], []byte(id[0:8])); err != nil {
		return time.Time{}, false
	}
	if _, err := hex.Decode(b[6:8], []byte(id[9:13])); err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(b[:]))), true
}
