package notify

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkRoundTrip measures one notified openat answered by a single
// serving goroutine: the child loops b.N opens (plus an unwatched close),
// so ns/op is the cost of one notified syscall as the target sees it.
//
//	go test -run '^$' -bench RoundTrip -benchtime 20000x ./notify
func BenchmarkRoundTrip(b *testing.B) {
	path := filepath.Join(b.TempDir(), "file")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name  string
		addfd bool
		sync  bool
	}{
		{"continue", false, false},
		{"continue-syncwake", false, true},
		{"addfd", true, false},
		{"addfd-syncwake", true, true},
	} {
		b.Run(mode.name, func(b *testing.B) {
			c := startFilteredChild(b, "bench", "",
				envChildPath+"="+path, "PERMWRAP_NOTIFY_BENCH_N="+strconv.Itoa(b.N))
			if mode.sync {
				if err := c.L.SetSyncWakeUp(); err != nil {
					requireKernel(b, "%v", err)
				}
			}
			b.ResetTimer()
			served := 0
			for {
				var n Notif
				err := c.L.Receive(&n)
				if err == ErrGone {
					continue
				}
				if err != nil {
					break // io.EOF when the child is done
				}
				if n.Nr != unix.SYS_OPENAT {
					c.L.Continue(n.ID)
					continue
				}
				served++
				if !mode.addfd {
					if err := c.L.Continue(n.ID); err != nil {
						b.Fatal(err)
					}
					continue
				}
				fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.L.AddFD(n.ID, fd, true); err != nil {
					b.Fatal(err)
				}
				unix.Close(fd)
			}
			b.StopTimer()
			if _, err := c.Wait(); err != nil {
				b.Fatalf("child: %v: %s", err, c.stdout.String())
			}
			if served != b.N {
				b.Fatalf("served %d openat notifications, want %d", served, b.N)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/notified-syscall")
		})
	}
}

// BenchmarkReadString is the per-path cost of reading an argument.
func BenchmarkReadString(b *testing.B) {
	buf := heapString("/home/user/project/src/some/deeper/path/file.go\x00")
	addr := addrOf(buf)
	pid := os.Getpid()
	for b.Loop() {
		if _, err := ReadString(pid, addr, PathMax); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleSyscallName() {
	fmt.Println(SyscallName(257), SyscallName(59))
	// Output: openat execve
}
