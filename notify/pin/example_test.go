package pin_test

import (
	"fmt"
	"os"

	"github.com/permwrap/permwrap/notify/pin"
	"golang.org/x/sys/unix"
)

// The supervisor's path for an allowed openat(dirfd, path, flags, mode):
// resolve once, judge r.Path, then open exactly what was resolved and
// install the result in the target with ADDFD.
func ExampleResolve() {
	tid := os.Getpid() // in the supervisor: the notification's pid
	flags := unix.O_RDONLY

	r, err := pin.Resolve(tid, unix.AT_FDCWD, "/etc/../etc/./hostname", pin.OpenResolveFlags(flags))
	if err != nil {
		fmt.Println("answer with errno", pin.Errno(err))
		return
	}
	defer r.Close()
	fmt.Println(r.Path, r.Kind, r.Exists)

	// ... the policy judges r.Path; if allowed:
	umask := uint32(0)
	if flags&unix.O_CREAT != 0 {
		umask, _ = pin.Umask(tid) // only creation needs it
	}
	f, err := pin.Open(r, flags, 0, umask)
	if err != nil {
		fmt.Println("answer with errno", pin.Errno(err))
		return
	}
	defer f.Close()
	// ... listener.AddFD(id, int(f.Fd()), flags&unix.O_CLOEXEC != 0)

	// Output: /etc/hostname path true
}
