package procfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
)

// SocketHolders lists the processes of the proc mounted at root that
// hold an fd to the socket whose sockfs inode is ino (a link
// /proc/PID/fd/N reading "socket:[ino]"), in pid order, at most limit of
// them (limit <= 0: no limit). A process that is gone by the time it is
// read is passed over; one whose fds cannot be read (another user's,
// without CAP_SYS_PTRACE) is passed over and counted in unreadable, so a
// caller can tell "nobody holds it" from "nobody we could see". err is
// only for root itself. Threads share their process's fd table and are
// not read again.
func SocketHolders(root string, ino uint32, limit int) (pids []int, unreadable int, err error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, 0, err
	}
	want := "socket:[" + strconv.FormatUint(uint64(ino), 10) + "]"
	for _, e := range ents {
		pid, ok := parsePid(e.Name())
		if !ok {
			continue
		}
		held, err := holds(root+"/"+e.Name()+"/fd", want)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // gone
		case err != nil:
			unreadable++
			continue
		case held:
			pids = append(pids, pid)
			if limit > 0 && len(pids) >= limit {
				return pids, unreadable, nil
			}
		}
	}
	return pids, unreadable, nil
}

// holds reports whether a link of the fd directory dir reads want. A
// link that vanishes between the listing and its reading (an fd closed)
// is passed over.
func holds(dir, want string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return false, err
	}
	for _, n := range names {
		l, err := os.Readlink(dir + "/" + n)
		if err == nil && l == want {
			return true, nil
		}
	}
	return false, nil
}

// Program is a person's view of a process: what it runs.
type Program struct {
	// Exe is the executable (/proc/PID/exe: " (deleted)" when the file
	// was removed since), or, when that cannot be read (another user's
	// process), the command line's first word: then ExeFromArgv.
	Exe         string
	ExeFromArgv bool
	// Args is the command line (the process may have rewritten it),
	// at most MaxCmdline bytes of it: Truncated says some was left off.
	Args      []string
	Truncated bool
}

// MaxCmdline is how much of a command line ReadProgram reads.
const MaxCmdline = 4096

// ReadProgram reads process pid's executable and command line from the
// proc mounted at root. An error only when neither can be read (the
// process is gone: fs.ErrNotExist, or ESRCH).
func ReadProgram(root string, pid int) (Program, error) {
	var p Program
	dir := root + "/" + strconv.Itoa(pid)
	exe, exeErr := os.Readlink(dir + "/exe")
	b, err := readAtMost(dir+"/cmdline", MaxCmdline+1)
	if err != nil && exeErr != nil {
		return p, exeErr
	}
	p.Args, p.Truncated = ParseCmdline(b, MaxCmdline)
	p.Exe = exe
	if exeErr != nil && len(p.Args) > 0 {
		p.Exe, p.ExeFromArgv = p.Args[0], true
	}
	return p, nil
}

// ParseCmdline splits a /proc/PID/cmdline (NUL-terminated words) into
// its words, reading at most max bytes of it; truncated says b was
// longer. A last word without its NUL (cut off, or a process that
// rewrote its command line) is kept.
func ParseCmdline(b []byte, max int) (args []string, truncated bool) {
	if max >= 0 && len(b) > max {
		b, truncated = b[:max], true
	}
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil, truncated
	}
	for w := range bytes.SplitSeq(b, []byte{0}) {
		args = append(args, string(w))
	}
	return args, truncated
}

// readAtMost reads at most n bytes of a file.
func readAtMost(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}
