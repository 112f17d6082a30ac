package supervisor_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/internal/kerneltest"
	"github.com/permwrap/permwrap/supervisor"
)

// refusalProbe makes each syscall named by number in argv with all-ones
// arguments, and prints "NR ERRNO" per line. All-ones arguments are
// invalid for every syscall the table refuses (bad fd, bad pointer, bad
// flags), so if the filter ever failed to apply the call could do nothing
// (zeros would mean "unload" to kexec).
const refusalProbe = `import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
bad = ctypes.c_long(-1)
for nr in sys.argv[1:]:
    ctypes.set_errno(0)
    libc.syscall(ctypes.c_long(int(nr)), bad, bad, bad, bad, bad, bad)
    print(nr, ctypes.get_errno())
`

// TestKernelRefusals: every syscall the table refuses whole fails in the
// real kernel, under permwrap, with the row's errno (TestFilterIsTheTable
// checks the program; this checks the kernel applies it). Bare, the same
// calls fail otherwise (with the errors of their bad arguments), so the
// answers are the filter's.
func TestKernelRefusals(t *testing.T) {
	s := newSandbox(t, "")
	kerneltest.Tool(t, "python3")
	var nrs []string
	var want strings.Builder
	table, errnos := supervisor.TableRefusals()
	for i, nr := range table {
		nrs = append(nrs, strconv.Itoa(int(nr)))
		fmt.Fprintf(&want, "%d %d\n", nr, int(errnos[i]))
	}
	argv := append([]string{"python3", "-c", refusalProbe}, nrs...)
	bare := s.bare(argv...)
	if bare.code != 0 {
		t.Fatalf("probe failed bare: %d %s", bare.code, bare.stderr)
	}
	if bare.stdout == want.String() {
		t.Fatal("bare, every call already fails with the table's errno: the probe proves nothing")
	}
	got := s.run(argv...)
	if got.code != 0 || got.stdout != want.String() {
		t.Errorf("under permwrap (exit %d, stderr %q) the probe printed:\n%s\nthe table says:\n%s", got.code, got.stderr, got.stdout, want.String())
	}
}
