package supervisor

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify"
)

// readTimes reads the timestamps of utime/utimes/futimesat/utimensat from
// the target and converts them to utimensat's form. A NULL pointer means
// "now" for both, as in the kernel.
func (s *supervisor) readTimes(r *request) (*[2]unix.Timespec, error) {
	var addr uint64
	switch r.n.Nr {
	case unix.SYS_UTIME, unix.SYS_UTIMES:
		addr = r.n.Args[1]
	default: // futimesat, utimensat
		addr = r.n.Args[2]
	}
	if addr == 0 {
		return nil, nil
	}
	le := binary.LittleEndian
	switch r.n.Nr {
	case unix.SYS_UTIME: // struct utimbuf { time_t actime, modtime; }
		b, err := notify.ReadBytes(r.tid, addr, 16)
		if err != nil {
			return nil, err
		}
		return &[2]unix.Timespec{
			{Sec: int64(le.Uint64(b[0:8]))},
			{Sec: int64(le.Uint64(b[8:16]))},
		}, nil
	case unix.SYS_UTIMES, unix.SYS_FUTIMESAT: // struct timeval[2]
		b, err := notify.ReadBytes(r.tid, addr, 32)
		if err != nil {
			return nil, err
		}
		var ts [2]unix.Timespec
		for i := range ts {
			sec, usec := int64(le.Uint64(b[i*16:])), int64(le.Uint64(b[i*16+8:]))
			if usec < 0 || usec >= 1_000_000 {
				return nil, unix.EINVAL
			}
			ts[i] = unix.Timespec{Sec: sec, Nsec: usec * 1000}
		}
		return &ts, nil
	default: // struct timespec[2], UTIME_NOW/UTIME_OMIT passed through
		b, err := notify.ReadBytes(r.tid, addr, 32)
		if err != nil {
			return nil, err
		}
		var ts [2]unix.Timespec
		for i := range ts {
			ts[i] = unix.Timespec{Sec: int64(le.Uint64(b[i*16:])), Nsec: int64(le.Uint64(b[i*16+8:]))}
		}
		return &ts, nil
	}
}
