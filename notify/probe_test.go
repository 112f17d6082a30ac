package notify

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

func TestProbeAgreesWithInstall(t *testing.T) {
	f := Probe()
	t.Logf("%+v", f)
	if f.Kernel == "" {
		t.Error("no kernel release")
	}
	// The probe must never leave this process filtered.
	if st, err := os.ReadFile("/proc/self/status"); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(string(st), "\nSeccomp:\t0\n") {
		t.Fatalf("Probe left the test process under seccomp:\n%s", st)
	}
	if f.UserNotif != Yes {
		kerneltest.Skipf(t, "seccomp user notification: %v (%v)", f.UserNotif, f.Notes)
	}
	c := startFilteredChild(t, "exit", "")
	if got := f.WaitKillable == Yes; got != c.Used.WaitKillable {
		t.Errorf("Probe().WaitKillable = %v but Install used it: %v", f.WaitKillable, c.Used.WaitKillable)
	}
	if f.TsyncESRCH != Yes {
		t.Errorf("TsyncESRCH = %v, but Install (which needs it) worked", f.TsyncESRCH)
	}
	err := c.L.SetSyncWakeUp()
	if got := err == nil; got != (f.SyncWakeUp == Yes) {
		t.Errorf("Probe().SyncWakeUp = %v, SetSyncWakeUp: %v", f.SyncWakeUp, err)
	}
}

func TestProbeFlagsSaysNo(t *testing.T) {
	// A flag bit no kernel defines must probe as unknown-to-the-kernel, or
	// the probe could not tell a missing feature from a present one.
	if err := sysSeccompProbeFlags(1 << 30); !errors.Is(err, unix.EINVAL) {
		t.Errorf("probing an undefined flag: %v, want EINVAL", err)
	}
	var f Features
	if got := probeFilterFlags(&f, "bogus", 1<<30); got != No {
		t.Errorf("probeFilterFlags(bogus) = %v, want no", got)
	}
}

func TestParseKernelVersion(t *testing.T) {
	for in, want := range map[string][3]int{"6.18.44-fc-v1045": {6, 18, 1}, "5.4": {5, 4, 1}, "6.6rc1": {6, 6, 1}, "garbage": {0, 0, 0}, "": {0, 0, 0}, "x.1": {0, 0, 0}} {
		ma, mi, ok := parseKernelVersion(in)
		if ok != (want[2] == 1) || (ok && (ma != want[0] || mi != want[1])) {
			t.Errorf("parseKernelVersion(%q) = %d, %d, %v", in, ma, mi, ok)
		}
	}
}
