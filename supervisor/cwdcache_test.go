package supervisor_test

import (
	"strings"
	"testing"
)

// The resolution cache keeps each thread's cwd between its calls
// (notify/pin/cwd.go); chdir and fchdir are notified so it is dropped
// before they run. A cached cwd used after a change would open the same
// name in the old directory: these programs change directory (by path
// and by fd, from the opening thread and from another thread sharing its
// cwd) between opens of one relative name, and every read must come from
// the directory in force. The denied twin: a cwd change into the secret
// directory must not let its file be read as the old directory's.
const cwdChurn = `
import os, sys, threading
base = os.getcwd()
out = []
def read(name="f"):
    try:
        with open(name) as f:
            return f.read()
    except PermissionError:
        return "EACCES"
fds = [os.open(base + "/d1", os.O_RDONLY | os.O_DIRECTORY), os.open(base + "/d2", os.O_RDONLY | os.O_DIRECTORY)]
for i in range(60):
    n = i % 2
    if i % 3 == 0:
        os.fchdir(fds[n])
    else:
        os.chdir(base + "/d" + str(n + 1))
    out.append(read())
# Another thread changes the cwd this thread resolves against.
for i in range(40):
    n = i % 2
    t = threading.Thread(target=os.chdir, args=(base + "/d" + str(n + 1),))
    t.start(); t.join()
    out.append(read())
# Into the secret directory: its key is denied, d1's key is not.
os.chdir(base + "/d1"); out.append(read("key"))
os.chdir(base + "/secret"); out.append(read("key"))
os.chdir(base + "/d1"); out.append(read("key"))
print(" ".join(out))
`

func cwdChurnWant() string {
	var w []string
	for i := range 60 {
		w = append(w, []string{"1", "2"}[i%2])
	}
	for i := range 40 {
		w = append(w, []string{"1", "2"}[i%2])
	}
	return strings.Join(append(w, "k1", "EACCES", "k1"), " ")
}

func TestCwdCacheFollowsChdir(t *testing.T) {
	s := newSandbox(t, denyPolicy)
	s.write("d1/f", "1")
	s.write("d2/f", "2")
	s.write("d1/key", "k1")
	s.write("secret/key", "TOPSECRET")
	// Bare, the program reads what the directory in force holds (the
	// secret too: nothing denies it there).
	want := cwdChurnWant()
	if r := s.bare("python3", "-c", cwdChurn); strings.TrimSpace(r.stdout) != strings.Replace(want, "EACCES", "TOPSECRET", 1) {
		t.Fatalf("bare: %q %s", r.stdout, r.stderr)
	}
	r := s.run("python3", "-c", cwdChurn)
	if got := strings.TrimSpace(r.stdout); got != want {
		t.Errorf("under permwrap:\n got %s\nwant %s\n%s", got, want, r.stderr)
	}
}

// The same cache keeps each thread's umask for the calls that create
// (pin.Thread.Umask); umask(2) is notified so it is dropped before a
// change runs. A cached umask used after a change would give a new file
// the old mode — more open than the program asked for when it moved to
// 077. This program changes its umask (from the creating thread and from
// another thread sharing it) between creates, and runs a shell that does
// the same; every file must get the mode it gets bare.
const umaskChurn = `
import os, stat, subprocess, sys, threading
d = sys.argv[1]
os.mkdir(d)
out = []
def mode(name):
    return oct(stat.S_IMODE(os.stat(name).st_mode))
for i, m in enumerate([0o022, 0o077, 0o002, 0o027] * 4):
    if i % 2:
        t = threading.Thread(target=os.umask, args=(m,))
        t.start(); t.join()
    else:
        os.umask(m)
    name = d + "/f%d" % i
    if i % 3 == 0:
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT, 0o666))
    else:
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o777))
    out.append(mode(name))
    os.mkdir(name + ".d", 0o777)
    out.append(mode(name + ".d"))
os.umask(0o022)
subprocess.run(["sh", "-c", "umask 077; : > c1; umask 002; : > c2; umask 027; : > c3"], cwd=d, check=True)
out += [mode(d + "/c" + n) for n in "123"]
print(" ".join(out))
`

func TestUmaskCacheFollowsUmask(t *testing.T) {
	s := newSandbox(t, denyPolicy)
	bare := s.bare("python3", "-c", umaskChurn, s.path("bare"))
	if bare.code != 0 || strings.Count(bare.stdout, "0o") != 35 {
		t.Fatalf("bare: %q %s", bare.stdout, bare.stderr)
	}
	r := s.run("python3", "-c", umaskChurn, s.path("wrapped"))
	if r.stdout != bare.stdout {
		t.Errorf("modes under permwrap:\n got %s\nwant %s\n%s", r.stdout, bare.stdout, r.stderr)
	}
}
