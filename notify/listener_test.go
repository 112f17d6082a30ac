package notify

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	stdsync "sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
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
					kerneltest.Skipf(b, "%v", err)
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

// BenchmarkRoundTripParallel: 4 target threads opening at once, served by
// a pool of 4 receivers answering CONTINUE; the case where synchronous
// wake-up is expected to lose (docs/kernel.md, "Measured kernel facts the
// design rests on").
//
//	go test -run '^$' -bench RoundTripParallel -benchtime 20000x ./notify
func BenchmarkRoundTripParallel(b *testing.B) {
	path := filepath.Join(b.TempDir(), "file")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, sync := range []bool{false, true} {
		name := "continue"
		if sync {
			name += "-syncwake"
		}
		b.Run(name, func(b *testing.B) {
			c := startFilteredChild(b, "bench", "", envChildPath+"="+path,
				"PERMWRAP_NOTIFY_BENCH_N="+strconv.Itoa(b.N), "PERMWRAP_NOTIFY_BENCH_THREADS=4")
			if sync {
				if err := c.L.SetSyncWakeUp(); err != nil {
					kerneltest.Skipf(b, "%v", err)
				}
			}
			b.ResetTimer()
			var served atomic.Int64
			var wg stdsync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						var n Notif
						err := c.L.Receive(&n)
						if err == ErrGone {
							continue
						}
						if err != nil {
							return
						}
						if n.Nr == unix.SYS_OPENAT {
							served.Add(1)
						}
						c.L.Continue(n.ID)
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			if _, err := c.Wait(); err != nil {
				b.Fatalf("child: %v", err)
			}
			if got := served.Load(); got != int64(b.N) {
				b.Fatalf("served %d openat notifications, want %d", got, b.N)
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

func (n *Notif) String() string {
	return fmt.Sprintf("#%d tid %d %s(%#x, %#x, %#x, %#x, %#x, %#x)", n.ID, n.Pid, SyscallName(n.Nr),
		n.Args[0], n.Args[1], n.Args[2], n.Args[3], n.Args[4], n.Args[5])
}
