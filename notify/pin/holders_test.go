package pin

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// Holders finds the process holding a listener, here a child that
// inherited it: not the parent, whose fd is closed.
func TestHolders(t *testing.T) {
	needInetDiag(t, unix.IPPROTO_TCP)
	fd, p := inetSock(t, unix.SOCK_STREAM, "127.0.0.1:0")
	_, ino := idOf(t, fd)
	dup, err := unix.Dup(fd)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(dup), "listener")
	sleep := kerneltest.Tool(t, "sleep")
	cmd := exec.Command(sleep, "30")
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	f.Close()
	pids, _, err := Holders(ino, 0)
	if err != nil || !slices.Contains(pids, cmd.Process.Pid) || !slices.Contains(pids, os.Getpid()) {
		t.Fatalf("Holders = %v %v, want the child %d and us %d", pids, err, cmd.Process.Pid, os.Getpid())
	}
	unix.Close(fd)
	r, ok, err := InetReceiver(unix.IPPROTO_TCP, ap("127.0.0.1", p))
	if err != nil || !ok || r.Ino != ino {
		t.Fatalf("the child's listener: %s %v %v", r, ok, err)
	}
	pids, _, err = Holders(r.Ino, 0)
	if err != nil || !slices.Equal(pids, []int{cmd.Process.Pid}) {
		t.Errorf("Holders = %v %v, want only the child %d", pids, err, cmd.Process.Pid)
	}
	if pids, _, _ := Holders(r.Ino, 1); len(pids) != 1 {
		t.Errorf("limit 1: %v", pids)
	}
	prog, err := Program(cmd.Process.Pid)
	if err != nil || prog.ExeFromArgv || filepath.Base(prog.Exe) == "" || !slices.Equal(prog.Args, []string{sleep, "30"}) {
		t.Errorf("Program = %+v %v", prog, err)
	}
	if want, _ := filepath.EvalSymlinks(sleep); prog.Exe != want {
		t.Logf("exe %q, the program %q", prog.Exe, want) // a multi-call binary may differ
	}
	if pids, _, err := Holders(^uint32(0), 0); len(pids) != 0 || err != nil {
		t.Errorf("a socket nobody holds: %v %v", pids, err)
	}
}
