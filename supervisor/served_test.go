package supervisor

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify"
)

// TestServedTableFacts: what the benchmark tools read of the table
// (served.go) is the table's: an open's argument positions (creat has no
// dirfd and no flags), nothing for a call that is no open, and the
// receiving role's use of an exec and its stop.
func TestServedTableFacts(t *testing.T) {
	for _, c := range []struct {
		nr                       int32
		dirfd, path, flags, mode int
		ok                       bool
	}{
		{unix.SYS_OPEN, ArgNone, 0, 1, 2, true},
		{unix.SYS_OPENAT, 0, 1, 2, 3, true},
		{unix.SYS_CREAT, ArgNone, 0, ArgNone, 1, true},
		{unix.SYS_OPENAT2, ArgNone, ArgNone, ArgNone, ArgNone, false},
		{unix.SYS_EXECVE, ArgNone, ArgNone, ArgNone, ArgNone, false},
	} {
		d, p, f, m, ok := OpenArgs(c.nr)
		if d != c.dirfd || p != c.path || f != c.flags || m != c.mode || ok != c.ok {
			t.Errorf("OpenArgs(%d) = %d %d %d %d %v, want %d %d %d %d %v", c.nr, d, p, f, m, ok, c.dirfd, c.path, c.flags, c.mode, c.ok)
		}
	}
	if KeepsRole(&notify.Notif{Nr: unix.SYS_EXECVE}) || KeepsRole(&notify.Notif{Nr: unix.SYS_ARCH_PRCTL}) || !KeepsRole(&notify.Notif{Nr: unix.SYS_OPENAT}) {
		t.Error("KeepsRole: an exec or its stop kept, or an open handed on")
	}
	if !IsExecStop(unix.SYS_ARCH_PRCTL) || IsExecStop(unix.SYS_EXECVE) {
		t.Error("IsExecStop: the stop is not arch_prctl")
	}
}
