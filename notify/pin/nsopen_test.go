package pin

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestIsIDMapFile(t *testing.T) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_CLOEXEC, 0)
	obj := newFile(fd, "/")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	for p, want := range map[string]bool{
		"/proc/42/uid_map":           true,
		"/proc/42/gid_map":           true,
		"/proc/42/setgroups":         true,
		"/proc/42/projid_map":        true,
		"/proc/42/task/43/uid_map":   true,
		"/proc/42/oom_score_adj":     false,
		"/proc/42/task/43/x/uid_map": false,
		"/proc/self/uid_map":         false, // resolution names the pid
		"/tmp/uid_map":               false,
		"/proc/42":                   false,
	} {
		r := &Resolved{Path: p, Kind: KindPath, Object: obj}
		if got := isIDMapFile(r); got != want {
			t.Errorf("isIDMapFile(%s) = %v, want %v", p, got, want)
		}
	}
}
