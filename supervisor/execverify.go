package supervisor

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
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

// execCall is an execve/execveat as decoded: the binary as invoked and as
// resolved, argv, the caller's cwd, and the image the kernel will run.
type execCall struct {
	tid   int
	path  *pin.Resolved
	raw   string // the path as the target passed it
	argv  []string
	cwd   string
	image pin.Image
}

// judge: the command line meets the bash rules and the binary the exec
// rules; a #! script runs its interpreter, so each one of the chain is an
// exec too, judged like the script itself.
func (c *execCall) judge(p *engine.Policy) verdict {
	d := p.DecideExec(engine.ExecIntent{Path: c.raw, Resolved: c.path.Path, Argv: c.argv, Cwd: c.cwd})
	argv := displayArgv(c.raw, c.path.Path, c.argv)
	v := verdict{result: d.Result, access: "exec", value: engine.RenderArgv(argv), exec: &d, argv: argv}
	for _, in := range c.image.Interps {
		v.result = moreRestrictive(v.result, p.DecidePath(engine.AccessExec, in.Path))
	}
	return v
}

func (c *execCall) perform(s *supervisor, id uint64) { s.continueExec(id, c) }
func (c *execCall) close()                           { c.path.Close() }

type pendingExec struct {
	tgid      int
	pre       pin.Running  // what the process ran before the exec
	wantExe   []pin.FileID // any of these (the binary, or the chain of #! interpreters)
	anyExe    bool         // not ELF nor #!: binfmt_misc may pick the interpreter; argv is still checked
	wantTail  [][]byte     // the checked argv; for scripts only argv[1:] is compared (as a suffix)
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
func (s *supervisor) continueExec(id uint64, c *execCall) {
	p := &pendingExec{startedAt: time.Now(), command: engine.RenderArgv(displayArgv(c.raw, c.path.Path, c.argv))}
	tgid, err := pin.Tgid(c.tid)
	if err != nil {
		s.respondErr(id, unix.EACCES)
		return
	}
	p.tgid = tgid
	p.pre, _, _ = pin.ReadRunning(tgid)

	// What the kernel must end up running (identified when decoded).
	p.wantExe = []pin.FileID{c.image.ID}
	switch c.image.Kind {
	case pin.ImageScript:
		p.script = true
		p.wantExe = p.wantExe[:0]
		for _, in := range c.image.Interps {
			p.wantExe = append(p.wantExe, in.ID)
		}
	case pin.ImageOther:
		p.anyExe = true
	}
	for _, a := range c.argv {
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
	v.pending[c.tid] = p
	if tgid != c.tid {
		v.pending[tgid] = p
	}
	v.count.Store(int32(len(v.pending)))
	v.mu.Unlock()

	if err := s.l.Continue(id); err != nil {
		v.forget(p, c.tid)
		return
	}
	go v.poll(p, c.tid)
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
	run, ok, err := pin.ReadRunning(p.tgid)
	if err != nil {
		return execGone
	}
	if !ok {
		return execUnchanged // still moving; look again later
	}
	exe, cmd := run.Exe, run.Cmdline
	if exe == p.pre.Exe && bytes.Equal(cmd, p.pre.Cmdline) {
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
	_ = pin.Kill(p.tgid)
	v.forget(p, tid)
	s := v.s
	s.notices.line("permwrap: killed process " + strconv.Itoa(p.tgid) + ": what it executed is not what was checked (" + p.command + ")")
	if s.cfg.Log != nil {
		req := authority.NewRequest(engine.Check{Surface: engine.SurfaceExec, Value: p.command})
		req.Access = "exec"
		req.Process = authority.Process{PID: p.tgid}
		req.Node = s.nodeLabel(p.tgid)
		s.cfg.Log.Decided(req, false, authority.Denied(authority.ByError{Reason: "exec verification failed"}, "the executed image or argv differs from the checked one"))
	}
}
