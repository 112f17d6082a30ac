package supervisor

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/forwarding"
	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/host"
	"github.com/permwrap/permwrap/notify/pin"
)

// The supervisor's adapter to the forwarding package, which owns all of
// nesting (forwarding/doc.go, docs/nesting.md): the root's side of it is
// a *forwarding.Root (s.nest), and what is here is only what touches the
// supervisor's own types — a request's placement in its node, the chain
// judging of a call (judgeBy per layer, combined by forwarding.Strictest),
// the review log's records, session rules on the root's own policy when
// nesting is unavailable, the knock as a decoded call answered on the
// listener — and the nested exec stage, which shares the sandbox stage's
// Landlock floor and command look-up (init.go).

// startNesting sets nesting up for a run whose processes are the
// children of top (the watchdog, see watchdog.go: the command's parent
// and the subreaper every orphan of the tree is re-parented to). On
// failure the run goes on without nesting (forwarding.NewRoot).
func (s *supervisor) startNesting(top int) error {
	log, _ := s.cfg.Log.(*authority.Log)
	n, err := forwarding.NewRoot(s.cfg.Policy, top, forwarding.RootOptions{
		Notice: func(line string) { s.notices.Line(line) },
		Log:    log,
	})
	if err != nil {
		return err
	}
	s.nest = n
	return nil
}

// nodeLabel names the node of tid for records that are not judged
// (forwarding.Root.LabelOf): "" for this permwrap's own processes.
func (s *supervisor) nodeLabel(tid int) string { return s.nest.LabelOf(tid) }

// placeRequest finds the request's node; false when the call has been
// answered already (its thread is gone, or its node cannot be known and
// the call was denied).
func (s *supervisor) placeRequest(r *request) bool {
	m, nested, err := s.nest.NodeOf(r.tid)
	if err == nil {
		r.m, r.nested = m, nested
		return true
	}
	if errors.Is(err, forwarding.ErrGone) {
		s.respondErr(r.id, unix.EACCES) // the target is gone; the answer goes nowhere
		return false
	}
	if s.l.IDValid(r.id) != nil {
		return false
	}
	// Judged by the root alone for what it is about; the answer is a deny.
	v := r.call.judge(s.cfg.Policy)
	v.result = engine.Result{Action: engine.Deny, Check: v.result.Check, Layer: engine.LayerBuiltin,
		Rule: engine.Rule{Surface: v.result.Check.Surface, Action: engine.Deny, Origin: engine.OriginBuiltin, Reason: err.Error()}}
	r.nested = true // recorded as a nested process's, node "?"
	s.deny(r, v, false, authority.Denied(authority.ByError{Reason: err.Error()}, err.Error()))
	return false
}

func verdictResult(v verdict) engine.Result { return v.result }

// describeNode adds to a request what it says about the node it came
// from, for a nested process (forwarding.Membership.Describe).
func (s *supervisor) describeNode(r *request, req *authority.Request, ask bool) {
	if r.nested {
		r.m.Describe(req, ask)
	}
}

// addSessionRules adds what "allow for this session" or "always deny"
// asked for where it holds: this permwrap's policy for its own processes,
// the chain of the node for a nested one (every layer of it and of the
// nodes below, forwarding.Root.AddSessionRule). Nothing is remembered for a process
// that may belong to several nodes. Rules that could not be added are
// said; the answer to this request stands.
func (s *supervisor) addSessionRules(r *request, d authority.Decision) authority.Decision {
	d, err := d.AddSessionRulesBy(func(allow bool, sp authority.SessionPattern) error {
		if s.nest == nil && !r.nested {
			if allow {
				_, err := s.cfg.Policy.AddSessionRule(sp.Surface, sp.Pattern)
				return err
			}
			_, err := s.cfg.Policy.AddSessionDeny(sp.Surface, sp.Pattern)
			return err
		}
		return s.nest.AddSessionRule(r.m, r.nested, allow, sp.Surface, sp.Pattern)
	})
	if err != nil {
		s.notices.Line("permwrap: could not add " + strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return d
}

// Records. This permwrap's log has every record; a nested node's are
// also written, with decidedBy wrapped as forwarded, to the log of the
// inner permwrap of that node and of every node above it that asked for
// its subtree's records (forwarding.Server.Sink).

// wantsRecord reports whether any log would keep a record of this kind.
func (s *supervisor) wantsRecord(r *request, ev authority.Event, surface engine.Surface) bool {
	if s.cfg.Log != nil {
		if l, ok := s.cfg.Log.(*authority.Log); !ok || l.Wants(ev, surface) {
			return true
		}
	}
	for _, l := range s.nodeLogs(r) {
		if l.Wants(ev, surface) {
			return true
		}
	}
	return false
}

func (s *supervisor) logAsked(r *request, req authority.Request) {
	if s.cfg.Log != nil {
		s.cfg.Log.Asked(req)
	}
	for _, l := range s.nodeLogs(r) {
		l.Asked(req)
	}
}

func (s *supervisor) logDecided(r *request, req authority.Request, asked bool, d authority.Decision) {
	if s.cfg.Log != nil {
		s.cfg.Log.Decided(req, asked, d)
	}
	for _, l := range s.nodeLogs(r) {
		l.Decided(req, asked, d)
	}
}

// nodeLogs lists the logs of the inner permwraps a nested request's
// record goes to (forwarding.Root.Logs).
func (s *supervisor) nodeLogs(r *request) []*authority.Log {
	if !r.nested {
		return nil
	}
	return s.nest.Logs(r.m)
}

// The knock.

// knockCall is an open of forwarding.KnockPath with the knock's flags:
// an inner permwrap (or `permwrap doctor`) asking whether a permwrap
// supervises it. It is answered with one end of a socketpair whose other
// end the nesting server serves for peer; nothing is judged or recorded
// (the server records the registration).
type knockCall struct {
	peer forwarding.Peer
}

// answerDirect answers the knock, once the knocker is known to be the
// caller (ID_VALID after what decoding read).
func (c *knockCall) answerDirect(s *supervisor, n *notify.Notif) {
	if s.l.IDValid(n.ID) != nil {
		return
	}
	id := n.ID
	if s.nest == nil {
		s.respondErr(id, unix.ENOTDIR) // nobody listens: what the open does bare
		return
	}
	f, err := s.nest.Accept(c.peer)
	if err != nil {
		if errors.Is(err, forwarding.ErrBusy) {
			s.respondErr(id, unix.EUSERS)
		} else {
			s.notices.Line("permwrap: nesting: " + err.Error())
			s.respondErr(id, unix.EAGAIN)
		}
		return
	}
	s.installFD(id, f, true, false, nil) // a socket: installed and answered in one step
}

// knock recognises a knock from the path as read from the target and
// the open's flags, before anything is resolved, and says who knocked:
// the calling thread's process and its start time. The notification is
// checked to be still valid after this (handle), so the process read
// here is the one that knocked.
func (d *decoder) knock(path string, flags int) (decoded, error) {
	if !forwarding.IsKnock(path, uint64(uint32(flags))) {
		return nil, nil
	}
	tgid, err := pin.Tgid(d.tid)
	if err != nil {
		return nil, &refusal{errno: pin.Errno(err), why: "identifying the process that knocked", err: err}
	}
	st, err := forwarding.ProcFS{}.Stat(tgid)
	if err != nil {
		return nil, &refusal{errno: unix.ESRCH, why: "identifying the process that knocked", err: err}
	}
	return &knockCall{peer: forwarding.Peer{PID: tgid, Start: st.Start}}, nil
}

// ExecNested is the last stage of a nested permwrap (cmd/permwrap's
// __nest-exec, a child of the node's keeper): it finds the command as
// the root's sandbox stage does, enters a new Landlock domain — the inner
// policy's static floor, and the signal scope, so nothing in the node's
// subtree can signal the node's keeper or the inner permwrap, which stay
// outside it — and executes the command. It returns only on failure,
// with the exit code to use (126/127 as env(1), 125 for permwrap's own)
// having said why on stderr. The root's filter judges every call of the
// subtree either way; the floor is the second layer, as for the root's
// own command.
func ExecNested(argv, env []string, floor engine.Floor, requireLandlock bool) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "permwrap: nested exec stage: no command")
		return initExitInternal
	}
	path, code, err := lookCommand(argv[0], env)
	if err != nil {
		fmt.Fprintln(os.Stderr, "permwrap:", err)
		return code
	}
	spec := initSpec{WriteDirs: floor.WriteDirs, WriteAnywhere: floor.WriteAnywhere, RequireLandlock: requireLandlock}
	if err := applyLandlock(spec); err != nil {
		fmt.Fprintln(os.Stderr, "permwrap: landlock:", err)
		return initExitInternal
	}
	err = host.Exec(path, argv, env)
	fmt.Fprintf(os.Stderr, "permwrap: %s: %v\n", argv[0], err)
	if errors.Is(err, unix.ENOENT) {
		return initExitNotFound
	}
	return initExitNoExec
}
