package supervisor

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// statsKind names a notification's kind from what its decoder made of it:
// an open by what it grants and whether it creates, the direct answers,
// an exec, a refusal, and any other call by its syscall's name.
func TestStatsKind(t *testing.T) {
	openat, creat, unlink := rowOf(unix.SYS_OPENAT), rowOf(unix.SYS_CREAT), rowOf(unix.SYS_UNLINK)
	if openat == nil || creat == nil || unlink == nil {
		t.Fatal("no row for openat, creat or unlink")
	}
	open := func(flags int, exists bool) *openCall {
		return &openCall{path: &pin.Resolved{Path: "/w/f", Exists: exists}, flags: flags, access: openAccess(flags, exists)}
	}
	anon := &openCall{path: &pin.Resolved{Path: "pipe:[1]", Kind: pin.KindAnon, Exists: true}, flags: unix.O_WRONLY | unix.O_CREAT, access: openAccess(unix.O_WRONLY|unix.O_CREAT, true)}
	for _, tt := range []struct {
		name string
		row  *sysRow
		d    decoded
		err  error
		want string
	}{
		{"read-only", openat, open(unix.O_RDONLY, true), nil, kindOpenRead},
		{"O_CREAT of an existing file, read-only", openat, open(unix.O_RDONLY|unix.O_CREAT, true), nil, kindOpenRead},
		{"directory", openat, open(unix.O_RDONLY|unix.O_DIRECTORY, true), nil, kindOpenDir},
		{"write", openat, open(unix.O_WRONLY, true), nil, kindOpenWrite},
		{"truncate an existing file", openat, open(unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, true), nil, kindOpenWrite},
		{"read-write", openat, open(unix.O_RDWR, true), nil, kindOpenWrite},
		{"create", openat, open(unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, false), nil, kindOpenCreate},
		{"create read-only", openat, open(unix.O_RDONLY|unix.O_CREAT, false), nil, kindOpenCreate},
		{"creat", creat, open(unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, false), nil, kindOpenCreate},
		{"O_TMPFILE", openat, open(unix.O_TMPFILE|unix.O_RDWR, true), nil, kindOpenCreate},
		{"a pipe reopened for writing", openat, anon, nil, kindOpenWrite},
		{"a missing file", openat, nil, unix.ENOENT, kindOpenFailed},
		{"a refused open", openat, nil, &refusal{errno: unix.EACCES, why: "x"}, kindOpenFailed},
		{"O_PATH", openat, continued{}, nil, kindContinued},
		{"settled", unlink, settled{}, nil, kindSettled},
		{"knock", openat, &knockCall{}, nil, kindKnock},
		{"exec", rowOf(unix.SYS_EXECVE), &execCall{}, nil, kindExec},
		{"unlink", unlink, &unlinkCall{}, nil, "unlink"},
		{"a failed unlink", unlink, nil, errors.New("x"), "unlink-failed"},
	} {
		if got := statsKind(tt.row, tt.d, tt.err); got != tt.want {
			t.Errorf("%s: kind %q, want %q", tt.name, got, tt.want)
		}
	}
}

// The handler counts each notification under the kind handle noted for
// it, under "early" when handle noted none, and write totals them.
func TestCallStatsCounts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "stats.json")
	c := newCallStats(file)
	if newCallStats("") != nil {
		t.Fatal("statistics without a file")
	}
	openat := rowOf(unix.SYS_OPENAT)
	h := c.handler(func(n *notify.Notif, _ *notify.Quiet) {
		switch n.ID % 3 {
		case 0:
			c.note(n.ID, openat, &openCall{path: &pin.Resolved{Exists: true}, access: openAccess(unix.O_RDONLY, true)}, nil)
		case 1:
			c.note(n.ID, openat, nil, unix.ENOENT)
		}
	})
	for id := uint64(0); id < 10; id++ {
		h(&notify.Notif{ID: id}, nil)
	}
	if err := c.write(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var got statsFile
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	want := map[string]uint64{kindOpenRead: 4, kindOpenFailed: 3, kindEarly: 3}
	if got.Calls != 10 || len(got.Kinds) != len(want) {
		t.Fatalf("stats %s, want 10 calls of %v", b, want)
	}
	for k, n := range want {
		if got.Kinds[k] == nil || got.Kinds[k].Count != n {
			t.Errorf("kind %s: %+v, want %d", k, got.Kinds[k], n)
		}
	}
	if len(c.pending) != 0 {
		t.Errorf("%d kinds left pending", len(c.pending))
	}
}
