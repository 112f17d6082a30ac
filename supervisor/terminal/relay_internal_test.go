package terminal

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/testutil"
)

// fakeTerminal is the person's terminal for a relay under test: the test
// reads what the relay shows on the master side.
type fakeTerminal struct {
	master, slave *os.File
	screen        *testutil.PTY
}

func newFakeTerminal(t *testing.T) *fakeTerminal {
	t.Helper()
	p := testutil.OpenPTY(t, 30, 100)
	return &fakeTerminal{master: p.Master, slave: p.Slave, screen: p}
}

func (ft *fakeTerminal) text() string { return ft.screen.Text() }

func (ft *fakeTerminal) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(ft.text(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q:\n%q", want, ft.text())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ptySize(t *testing.T, fd int) int {
	t.Helper()
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil {
		t.Fatal(err)
	}
	return int(ws.Col)
}

// The relay end to end in one process (and under -race): a full-screen
// command gets no notice in its screen, is narrowed by one column while
// a prompt is up and given its width back after, and the held notices
// are printed when it has exited.
func TestRelayFullScreenCommand(t *testing.T) {
	ft := newFakeTerminal(t)
	rl, err := NewRelay(ft.slave, ft.slave)
	if err != nil {
		t.Fatal(err)
	}
	// A full-screen command: the alternate screen, raw mode, then it
	// prints what it reads until it reads q.
	cmd := exec.Command("sh", "-c", `printf '\033[?1049h\033[?1000hREADY\r\n'; stty raw -echo; while :; do c=$(dd bs=1 count=1 2>/dev/null); [ "$c" = q ] && break; printf 'got-%s\r\n' "$c"; done; printf 'BYE\r\n'`)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = rl.pts, rl.pts, rl.pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := rl.Start(); err != nil {
		t.Fatal(err)
	}
	ft.waitFor(t, "READY")
	// Let the command reach raw mode before the notices come.
	time.Sleep(300 * time.Millisecond)

	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rl.Write([]byte("permwrap: denied read /secret\n"))
		}()
	}
	wg.Wait()
	if strings.Contains(ft.text(), "permwrap: denied") {
		t.Fatalf("a notice was written into a full-screen command's screen:\n%q", ft.text())
	}

	in, out, w, h, release, err := rl.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if in == nil || out == nil || w != 100 || h != 30 {
		t.Fatalf("Acquire: %v %v %dx%d", in, out, w, h)
	}
	if got := rl.HeldNotices(); len(got) != 4 {
		t.Fatalf("held notices: %q", got)
	}
	ft.waitFor(t, "\x1b[?1000l") // mouse reporting off for the prompt
	if c := ptySize(t, rl.ptmxFd); c != 99 {
		t.Fatalf("the command's terminal is %d columns during the prompt, want 99", c)
	}
	// Keys go to the prompt, not the command, while it is up.
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 1)
		n, _ := in.Read(b)
		got <- string(b[:n])
	}()
	ft.master.Write([]byte("x"))
	select {
	case k := <-got:
		if k != "x" {
			t.Fatalf("the prompt read %q", k)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the prompt never got the key")
	}
	release()
	ft.waitFor(t, "\x1b[?1000h") // and back on
	deadline := time.Now().Add(5 * time.Second)
	for ptySize(t, rl.ptmxFd) != 100 {
		if time.Now().After(deadline) {
			t.Fatal("the width was never given back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(ft.text(), "got-x") {
		t.Fatal("a key typed at the prompt reached the command")
	}
	ft.master.Write([]byte("yq"))
	ft.waitFor(t, "BYE")
	cmd.Wait()
	select {
	case <-rl.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the relay did not see the command's end")
	}
	rl.Stop()
	ft.waitFor(t, "permwrap: 4 notices were not shown while the command had the terminal:")
	if n := strings.Count(ft.text(), "permwrap: denied read /secret"); n != 4 {
		t.Fatalf("%d notices in the summary, want 4:\n%q", n, ft.text())
	}
}

// Another reader of the terminal (a prompt's terminal library, whose
// reading goroutine can outlive its prompt) may take the keys a poll
// announced to the relay: the relay must not then wait in a read, with
// the input lock held, so that the next prompt could never take the
// terminal (the second battery saw a prompt that never appeared).
func TestRelayInputTakenByAnotherReader(t *testing.T) {
	ft := newFakeTerminal(t)
	rl, err := NewRelay(ft.slave, ft.slave)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "cat >/dev/null")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = rl.pts, rl.pts, rl.pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := rl.Start(); err != nil {
		t.Fatal(err)
	}
	// The other reader: a blocking read of the same terminal, always
	// waiting, as a terminal library's input goroutine is.
	other, err := dupFile(ft.slave)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		b := make([]byte, 64)
		for {
			if _, err := other.Read(b); err != nil {
				return
			}
		}
	}()
	for i := 0; i < 200; i++ {
		ft.master.Write([]byte("k"))
		time.Sleep(time.Duration(i%3) * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	acquired := make(chan func(), 1)
	go func() {
		_, _, _, _, release, err := rl.Acquire(context.Background())
		if err != nil {
			t.Error(err)
			release = func() {}
		}
		acquired <- release
	}()
	select {
	case release := <-acquired:
		release()
	case <-time.After(testutil.Scale(10 * time.Second)):
		t.Fatal("Acquire waited for the relay's input lock: the relay is stuck in a read of keys another reader took")
	}
	// The end: the other reader let go (it reads one more key), the
	// command gone, the relay stopped, before the terminal closes.
	ft.master.Write([]byte("x"))
	// The whole group: sh's child cat also holds the terminal, and under
	// nohup (SIGHUP ignored, inherited) the hang-up of sh's session does
	// not end it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	select {
	case <-rl.done:
	case <-time.After(testutil.Scale(5 * time.Second)):
		t.Fatal("the relay did not see the command's end")
	}
	rl.Stop()
}
