package supervisor

import (
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/pin"
)

// A call is one decoded syscall: every argument read once, every path
// resolved and pinned. decide (loop.go) takes its steps in this order;
// every call has every step, and most take callDefaults' for the ones
// that do not concern them:
//
//  1. judge: one policy's answer to what was decoded. Pure: no I/O, no
//     target memory, no /proc.
//  2. lookAtContent, only when a policy's answer depends on what a file
//     holds (a content rule): the one step that reads a file, the very
//     file perform would hand over (content.go). Once per request.
//  3. judgeContent: one policy's answer again, knowing what step 2 found.
//     Pure.
//  4. kernelAnswer, only when the policies would not simply allow: the
//     kernel's own answer when it would refuse the call anyway, or when
//     the call could change nothing (kernel.go). Reads facts with the
//     target's credentials, changes nothing.
//  5. perform: an allowed call carried out using only what was decoded,
//     and the notification answered (q: the receiving goroutine's Quiet,
//     when the call is handled inline; nil elsewhere).
//  6. changed, right after perform: what the call was decided on changed
//     under it (a file that existed vanished before it was opened), and
//     perform answered nothing: decide decides it again, once.
//  7. close: the pinned fds released.
type call interface {
	judge(p *engine.Policy) verdict
	lookAtContent() contentFact
	judgeContent(p *engine.Policy, v verdict, f contentFact) verdict
	kernelAnswer() kernelAnswer
	perform(s *supervisor, id uint64, q *notify.Quiet)
	changed() bool
	close()
}

// callDefaults are the steps of a call that does not take them: its
// answer never depends on content, the kernel has nothing to say before
// perform, and perform never finds its object changed. (Every call closes what it pinned: close has no
// default.)
type callDefaults struct{}

func (callDefaults) lookAtContent() contentFact { return contentUnknown }
func (callDefaults) judgeContent(_ *engine.Policy, v verdict, _ contentFact) verdict {
	return v
}
func (callDefaults) kernelAnswer() kernelAnswer { return kernelAnswer{} }
func (callDefaults) changed() bool              { return false }

// direct is what a decoder makes of a notification that needs no
// decision: answered at once, nothing judged or logged (a continued call,
// a call the kernel settles without looking further, an inner permwrap's
// knock).
type direct interface {
	answerDirect(s *supervisor, n *notify.Notif)
}

// continued is a watched call let through without reading anything from
// memory (answer.go lists every continued call and why). It is continued
// before anything is judged or logged.
type continued struct{}

func (continued) answerDirect(s *supervisor, n *notify.Notif) { _ = s.l.Continue(n.ID) }

// object is what a metadata call changes: a pinned path, or, for the
// calls that name an fd (fchmod, fsetxattr, the attribute ioctls,
// utimensat with a NULL path), the target's own open file, resolved for
// judging and acted on as the open file it is.
type object struct {
	res *pin.Resolved
	tid int
	fd  int // -1: act on res
}

func (o object) byFd() bool { return o.fd >= 0 }

func (o object) handle() (*pin.Handle, error) { return pin.OpenHandle(o.tid, o.fd, o.res) }

// onObject performs a metadata call on the object: through its open file
// when the call named an fd, else on the pinned inode.
func onObject(o object, byFd func(h *pin.Handle) error, byPath func(r *pin.Resolved) error) error {
	if !o.byFd() {
		return byPath(o.res)
	}
	h, err := o.handle()
	if err != nil {
		return err
	}
	defer h.Close()
	return byFd(h)
}

func closeAll(rs ...*pin.Resolved) {
	for _, r := range rs {
		if r != nil {
			r.Close()
		}
	}
}

// writeVerdict judges a call that changes what path names.
func writeVerdict(p *engine.Policy, access string, path *pin.Resolved) verdict {
	return verdict{result: p.DecidePath(engine.AccessWrite, path.Path), access: access, value: path.Path,
		touched: [2]touch{{engine.AccessWrite, path.Path}}}
}
