package supervisor

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// timesForm is the struct a utime-family call passes its times in.
type timesForm uint8

const (
	timesUtimbuf  timesForm = iota + 1 // utime: struct utimbuf { time_t actime, modtime; }
	timesTimeval                       // utimes, futimesat: struct timeval[2]
	timesTimespec                      // utimensat: struct timespec[2], UTIME_NOW/UTIME_OMIT passed through
)

// times reads a utime-family call's timestamps (pointer argument i) once
// and converts them to utimensat's form. A NULL pointer means "now" for
// both, as in the kernel.
func (d *decoder) times(i int, form timesForm) (*[2]unix.Timespec, error) {
	if d.arg(i) == 0 {
		return nil, nil
	}
	size := 32
	if form == timesUtimbuf {
		size = 16
	}
	b, err := d.bytes(i, size, "times")
	if err != nil {
		return nil, err
	}
	return parseTimes(b, form)
}

func parseTimes(b []byte, form timesForm) (*[2]unix.Timespec, error) {
	le := binary.LittleEndian
	var ts [2]unix.Timespec
	switch form {
	case timesUtimbuf:
		ts[0] = unix.Timespec{Sec: int64(le.Uint64(b[0:8]))}
		ts[1] = unix.Timespec{Sec: int64(le.Uint64(b[8:16]))}
	case timesTimeval:
		for i := range ts {
			sec, usec := int64(le.Uint64(b[i*16:])), int64(le.Uint64(b[i*16+8:]))
			if usec < 0 || usec >= 1_000_000 {
				return nil, kernelErr(unix.EINVAL, "tv_usec out of range")
			}
			ts[i] = unix.Timespec{Sec: sec, Nsec: usec * 1000}
		}
	default:
		for i := range ts {
			ts[i] = unix.Timespec{Sec: int64(le.Uint64(b[i*16:])), Nsec: int64(le.Uint64(b[i*16+8:]))}
		}
	}
	return &ts, nil
}
