package supervisor

import "github.com/permwrap/permwrap/notify/pin"

// chdir, fchdir, umask and unshare(CLONE_NEWNS): continued, only
// announced to the cwd cache (notify/pin/cwd.go).

// decodeAnnounced: chdir, fchdir and umask are continued as they are
// (they were allowed in BPF before they were watched, and umask's
// argument is a register); the thread cache is told first, while the
// thread waits in the call, so no cached cwd or umask is used across the
// change (notify/pin/cwd.go). A creating call then needs no read of
// /proc/TID/status for the umask.
func decodeAnnounced(d *decoder) (decoded, error) {
	pin.CwdChanging(d.tid, d.n.ID)
	return continued{}, nil
}

// decodeUnshare: unshare(CLONE_NEWNS) changes the calling thread's root
// to a copy of the mount tree. The thread waits in the call now, so
// telling the resolution cache before continuing leaves no window in which
// a lookup for it could use the old root.
func decodeUnshare(d *decoder) (decoded, error) {
	pin.RootChanged(d.tid)
	// The new tree's copy of the cwd becomes the thread's cwd too.
	pin.CwdChanging(d.tid, d.n.ID)
	return continued{}, nil
}
