package supervisor

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
)

// execve cannot be emulated: the kernel must load the new image into the
// calling process. So an allowed exec is continued, and because the
// kernel then reads the path and argv again (a second thread may have
// changed them since the check), the result is verified: the process's
// /proc/PID/exe must be the file that was checked (or, for a #! script,
// its interpreter) and its argv the one that was checked. A process that
// fails is killed with SIGKILL.
//
// Verification happens at the first of: the process's next notification
// (held until verified) — normally arch_prctl(ARCH_SET_FS), which every
// libc and the Go runtime make before main and before any constructor, so
// argv is checked before the program can rewrite it (mkdir -p does) — or
// a poller that watches /proc right after the continue, for images that
// never make that call. The residual window is in docs/security.md.

type devIno struct{ dev, ino uint64 }

func statDevIno(path string) (devIno, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return devIno{}, false
	}
	return devIno{st.Dev, st.Ino}, true
}

type pendingExec struct {
	tgid      int
	preExe    devIno
	preCmd    []byte
	wantExe   []devIno // any of these (the binary, or the chain of #! interpreters)
	anyExe    bool     // not ELF nor #!: binfmt_misc may pick the interpreter; argv is still checked
	wantTail  [][]byte // the checked argv; for scripts only argv[1:] is compared (as a suffix)
	script    bool
	command   string // for messages
	verified  atomic.Bool
	startedAt time.Time
}

type execVerifier struct {
	s       *supervisor
	mu      sync.Mutex
	pending map[int]*pendingExec // by the exec'ing thread's id (the leader after exec)
	count   atomic.Int32
}

func (v *execVerifier) init(s *supervisor) {
	v.s = s
	v.pending = map[int]*pendingExec{}
}

// continueExec lets an allowed exec run and arranges its verification.
func (s *supervisor) continueExec(r *request) {
	p := &pendingExec{startedAt: time.Now(), command: engine.RenderArgv(displayArgv(r))}
	tgid, err := notify.Tgid(r.tid)
	if err != nil {
		s.respondErr(r.n.ID, unix.EACCES)
		return
	}
	p.tgid = tgid
	base := "/proc/" + strconv.Itoa(tgid)
	p.preExe, _ = statDevIno(base + "/exe")
	p.preCmd, _ = os.ReadFile(base + "/cmdline")

	// What the kernel must end up running (identified when judged).
	if !r.haveImage {
		s.respondErr(r.n.ID, unix.EACCES)
		return
	}
	p.wantExe = []devIno{r.image}
	switch r.imageKind {
	case imageScript:
		p.script = true
		p.wantExe = p.wantExe[:0]
		for _, in := range r.interps {
			p.wantExe = append(p.wantExe, in.id)
		}
	case imageOther:
		p.anyExe = true
	}
	for _, a := range r.argv {
		p.wantTail = append(p.wantTail, []byte(a))
	}
	if p.script && len(p.wantTail) > 0 {
		p.wantTail = p.wantTail[1:]
	}

	// The exec'ing thread becomes the leader: key by the thread that
	// called, and by the group, so the first notification of the new
	// image finds it either way.
	v := &s.execs
	v.mu.Lock()
	v.pending[r.tid] = p
	if tgid != r.tid {
		v.pending[tgid] = p
	}
	v.count.Store(int32(len(v.pending)))
	v.mu.Unlock()

	if err := s.l.Continue(r.n.ID); err != nil {
		v.forget(p, r.tid)
		return
	}
	go v.poll(p, r.tid)
}

func (v *execVerifier) forget(p *pendingExec, tid int) {
	v.mu.Lock()
	if v.pending[tid] == p {
		delete(v.pending, tid)
	}
	if v.pending[p.tgid] == p {
		delete(v.pending, p.tgid)
	}
	v.count.Store(int32(len(v.pending)))
	v.mu.Unlock()
}

type execState int

const (
	execUnchanged execState = iota // still the old image: not yet exec'd, or the exec failed
	execGood
	execBad
	execGone
)

func (v *execVerifier) state(p *pendingExec) execState {
	base := "/proc/" + strconv.Itoa(p.tgid)
	// exe and cmdline are two reads; an exec can land between them. Both
	// come from the process's mm, so reading exe again and retrying when
	// it changed gives a consistent pair.
	var exe devIno
	var cmd []byte
	for try := 0; ; try++ {
		e1, ok := statDevIno(base + "/exe")
		if !ok {
			return execGone
		}
		c, err := os.ReadFile(base + "/cmdline")
		if err != nil {
			return execGone
		}
		e2, ok := statDevIno(base + "/exe")
		if !ok {
			return execGone
		}
		if e1 == e2 {
			exe, cmd = e1, c
			break
		}
		if try == 10 {
			return execUnchanged // still moving; look again later
		}
	}
	if exe == p.preExe && bytes.Equal(cmd, p.preCmd) {
		return execUnchanged
	}
	if len(cmd) == 0 {
		// Mid-exec: the new image's exe is set before its argv area
		// (begin_new_exec, then the loader's create_elf_tables). A
		// finished exec always has at least one byte (an empty argv[0]).
		return execUnchanged
	}
	exeOK := p.anyExe
	for _, w := range p.wantExe {
		if exe == w {
			exeOK = true
		}
	}
	if !exeOK {
		return execBad
	}
	args := bytes.Split(bytes.TrimSuffix(cmd, []byte{0}), []byte{0})
	if len(cmd) == 0 {
		args = nil
	}
	if p.script || p.anyExe {
		if len(args) < len(p.wantTail) {
			return execBad
		}
		args = args[len(args)-len(p.wantTail):]
	}
	if len(args) != len(p.wantTail) {
		return execBad
	}
	for i := range args {
		if !bytes.Equal(args[i], p.wantTail[i]) {
			return execBad
		}
	}
	return execGood
}

// check is called for every notification before it is handled; it
// returns false when the notification's process failed verification (it
// is killed and the notification refused).
func (v *execVerifier) check(n *notify.Notif) bool {
	if v.count.Load() == 0 {
		return true
	}
	tid := int(n.Pid)
	v.mu.Lock()
	p := v.pending[tid]
	v.mu.Unlock()
	if p == nil {
		return true
	}
	switch v.state(p) {
	case execGood:
		p.verified.Store(true)
		v.forget(p, tid)
	case execBad:
		v.fail(p, tid)
		v.s.respondErr(n.ID, unix.EACCES)
		return false
	case execGone:
		v.forget(p, tid)
	}
	return true
}

// poll watches a continued exec until it is verified, fails, or the old
// image is still running after a while (the exec failed in the kernel).
func (v *execVerifier) poll(p *pendingExec, tid int) {
	delay := 20 * time.Microsecond
	for time.Since(p.startedAt) < 5*time.Second {
		if p.verified.Load() {
			return
		}
		switch v.state(p) {
		case execGood:
			p.verified.Store(true)
			v.forget(p, tid)
			return
		case execBad:
			v.fail(p, tid)
			return
		case execGone:
			v.forget(p, tid)
			return
		}
		time.Sleep(delay)
		delay = min(delay*2, 10*time.Millisecond)
	}
	v.forget(p, tid)
}

func (v *execVerifier) fail(p *pendingExec, tid int) {
	if !p.verified.CompareAndSwap(false, true) {
		return
	}
	_ = unix.Kill(p.tgid, unix.SIGKILL)
	v.forget(p, tid)
	s := v.s
	s.notices.line("permwrap: killed process " + strconv.Itoa(p.tgid) + ": what it executed is not what was checked (" + p.command + ")")
	if s.cfg.Log != nil {
		req := authority.NewRequest(engine.Check{Surface: engine.SurfaceExec, Value: p.command})
		req.Access = "exec"
		req.Process = authority.Process{PID: p.tgid}
		s.cfg.Log.Decided(req, false, authority.Denied(authority.ByError{Reason: "exec verification failed"}, "the executed image or argv differs from the checked one"))
	}
}

type imageKind int

const (
	imageELF imageKind = iota
	imageScript
	imageOther
)

// interpreterChain reads the head of the executable the request
// resolved: for a #! script it returns each interpreter of the chain (up
// to the kernel's depth of 4), resolved the way the kernel will (from the
// exec'ing thread's root and cwd, symlinks followed), with the identity
// /proc/PID/exe will show; for ELF nothing; anything else is left to
// binfmt_misc, which permwrap cannot predict (imageOther).
func interpreterChain(tid int, first *os.File) ([]interpreter, imageKind) {
	var out []interpreter
	cur := "/proc/self/fd/" + strconv.Itoa(int(first.Fd()))
	for depth := 0; depth < 5; depth++ {
		head := make([]byte, 256)
		fd, err := unix.Open(cur, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
		if err != nil {
			return out, imageOther
		}
		n, _ := unix.Read(fd, head)
		unix.Close(fd)
		head = head[:max(n, 0)]
		switch {
		case bytes.HasPrefix(head, []byte("\x7fELF")):
			if depth == 0 {
				return nil, imageELF
			}
			return out, imageScript
		case bytes.HasPrefix(head, []byte("#!")):
			line := head[2:]
			if i := bytes.IndexByte(line, '\n'); i >= 0 {
				line = line[:i]
			}
			fields := bytes.Fields(line)
			if len(fields) == 0 {
				return out, imageOther
			}
			res, err := notify.Resolve(tid, unix.AT_FDCWD, string(fields[0]), notify.FollowLast)
			if err != nil {
				return out, imageOther
			}
			var st unix.Stat_t
			ok := res.Exists && res.Dir != nil && unix.Fstatat(int(res.Dir.Fd()), res.Name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
			path := res.Path
			res.Close()
			if !ok {
				return out, imageOther
			}
			out = append(out, interpreter{path: path, id: devIno{st.Dev, st.Ino}})
			cur = path
		default:
			return out, imageOther
		}
	}
	return out, imageOther
}

type interpreter struct {
	path string
	id   devIno
}
