package supervisor

import (
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/display"
	"github.com/permwrap/permwrap/notify"
)

// refuse fails the call with EACCES and says why: one line for the
// person (the Noticer; on a relayed terminal the relay decides when it
// may be shown, see terminal.Relay's Write) and one for the agent on the
// denied process's own stderr when a program reads that back
// (tellsAgent). An exec is refused by refuseExec.
func (s *supervisor) refuse(r *request, v verdict, d authority.Decision, id authority.RequestID) {
	program := ""
	if v.exec != nil && len(v.argv) > 0 {
		program = v.argv[0]
	}
	dn := newDenial(v, d, id, program)
	s.notices.Line(dn.forPerson())
	if _, ok := d.DecidedBy().(authority.ByUser); ok && d.Reason() == authority.ReasonInterrupted {
		s.awaitInterrupt(r.id)
	}
	if c, ok := r.call.(*execCall); ok && v.exec != nil {
		s.refuseExec(r, c, v, dn)
		return
	}
	if s.tellsAgent() {
		_ = notify.TellFd(r.tid, 2, dn.agentLine(), s.cfg.Stderr)
	}
	s.respondErr(r.id, unix.EACCES)
}

// awaitInterrupt lets the Ctrl-C typed at the prompt reach the job
// before its call is answered: the relay sends the key once the person's
// line is out (terminal.Relay's Interrupt), and a job that takes the
// signal is ended, or its call interrupted, while it waits, so the
// refusal never runs its next line. It waits until the call is no longer
// pending, at most interruptGrace (a job that ignores SIGINT, an agent
// that reads the key itself), and then the call is answered as refused.
func (s *supervisor) awaitInterrupt(id uint64) {
	deadline := time.Now().Add(interruptGrace)
	for s.l.IDValid(id) == nil && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// interruptGrace bounds awaitInterrupt: longer than the relay's own wait
// for the line (250 ms) before it sends the key anyway.
const interruptGrace = 500 * time.Millisecond

// tellsAgent: the agent's line is written at all (denialNotice: "off"
// turns it off). The line goes to the denied process's stderr when that
// is a pipe, a FIFO, a regular file or a local socket — the output of a
// tool subprocess, which the agent reads and the model sees, so it learns
// why instead of retrying. Never the person's terminal (notify.TellFd
// checks), never the command body.
func (s *supervisor) tellsAgent() bool {
	return s.cfg.Policy.Settings().DenialNotice != "off"
}

// refuseExec refuses an exec so that its line reaches the agent without
// breaking it. Whatever the agent is told must arrive in a stream it
// still reads, before the call that failed returns, or not be written at
// all:
//   - the caller's stderr is its parent's too (a shell's child, make's,
//     xargs'): the line goes there and the exec fails with EACCES; the
//     parent lives on, reports the failure on that same stream, and its
//     reader reads on.
//   - the caller's stderr is a stream its spawner made for it (Node's
//     child_process, Python's subprocess, Go's os/exec, Rust's Command:
//     the agents' bash tools): a spawn that fails is reported from its
//     errno, and the stream is then dropped unread (Python, Go, Rust) or
//     its data arrives after the spawn was declared failed (Node: pi
//     crashed on it). So the program is started and stopped before it
//     runs a line of its own: the exec is continued, and at the new
//     image's first call (or the verifier's first look) the line is
//     written to its stderr and it is killed (execverify.go). The spawner
//     sees a process that ran and died by SIGKILL, with the reason on its
//     stderr. Only when the image itself may be mapped (ExecDecision.Image
//     allows it): a binary the policy refuses to run or read is never
//     loaded, its exec fails with EACCES, and its line goes to the
//     spawner's own stderr when that is a different stream
//     (notify.TellSpawner), never into the child's.
//   - otherwise (a terminal, /dev/null): EACCES, and the person's line.
func (s *supervisor) refuseExec(r *request, c *execCall, v verdict, dn denial) {
	if s.tellsAgent() {
		switch notify.StderrOf(r.tid, s.cfg.Stderr) {
		case notify.StderrInherited:
			_ = notify.TellFd(r.tid, 2, dn.agentLine(), s.cfg.Stderr)
		case notify.StderrOwn:
			if v.exec.Image.Action == engine.Allow {
				s.continueExec(r.id, c, dn.agentLine())
				return
			}
			_ = notify.TellSpawner(r.tid, dn.agentLine(), s.cfg.Stderr)
		}
	}
	s.respondErr(r.id, unix.EACCES)
}

// denial is one refused request, as the person and the agent are told.
type denial struct {
	id      authority.RequestID // "" when no request id was minted
	access  string              // "write", "exec", ...
	value   string              // the path, or for an exec the command line (the person's line only)
	program string              // for an exec: the program's name, what the agent's line shows instead
	part    string              // for an exec: the part of the command line that decided (the person's line only)
	reason  string              // the rule's, the reviewer's or the person's reason
	by      string              // who decided, for people: a rule, the prompt, a reviewer, "asked by …"
}

// newDenial describes a refusal; program is an exec's program name.
func newDenial(v verdict, d authority.Decision, id authority.RequestID, program string) denial {
	dn := denial{id: id, access: v.access, value: v.value, reason: d.Reason(), program: program}
	if v.exec != nil {
		if v.exec.Decider != "" && v.exec.Decider != v.value {
			dn.part = v.exec.Decider
		}
	}
	dn.by = decidedByLine(d.DecidedBy(), v.result.Rule)
	switch by := d.DecidedBy().(type) {
	case authority.ByRule:
		if dn.reason == "" {
			dn.reason = v.result.Rule.Reason
		}
	case authority.ByUser:
		switch dn.reason {
		case authority.ReasonDeniedByUser:
			dn.reason = "" // "— by the person at the prompt" says it
		case authority.ReasonDismissed:
			dn.reason, dn.by = "", "dismissed at the prompt"
		case authority.ReasonInterrupted:
			dn.reason, dn.by = "", "interrupted at the prompt (Ctrl-C)"
		}
	case authority.ByUnavailable:
		if dn.reason == "" {
			dn.reason = by.Reason
		}
	}
	return dn
}

// decidedByLine names who refused, for people. An ask nobody could answer
// (headless, timed out, the prompt unavailable) names the rule that
// asked: that is the line a person edits to change the outcome.
func decidedByLine(by authority.DecidedBy, asked engine.Rule) string {
	switch b := by.(type) {
	case authority.ByRule:
		if asked.Pattern != "" || asked.Origin != engine.OriginBuiltin {
			return asked.String() // the full rule, with its action
		}
		return b.String()
	case authority.ByUser:
		if b.Via == authority.AlwaysDenyVia {
			return `by the person's "always deny" earlier in this run`
		}
		return "by the person at the prompt"
	case authority.ByAuthorizer:
		return "reviewer " + b.Name
	case authority.ByUnavailable, authority.ByError:
		if asked.Action == engine.Ask {
			if asked.Pattern == "" {
				return "asked because no rule matched (the built-in answer is ask)"
			}
			return "asked by " + asked.String()
		}
		return by.String()
	}
	return by.String()
}

// forPerson is the line on the person's terminal:
//
//	permwrap: denied write /etc/hosts: system files — rule write:/etc/** (deny, policy.jsonc:12:5); request 0190…
//	permwrap: denied exec bash -c 'rm -rf x' (rm -rf x): no deleting — rule bash:rm * (deny, policy.jsonc:3:5); request 0190…
func (dn denial) forPerson() string {
	what := dn.access
	if dn.value != "" {
		what += " " + dn.value
	}
	if dn.part != "" {
		what += " (" + dn.part + ")"
	}
	return dn.line(what)
}

// forAgent is the line on the denied process's stderr. It names the
// request and the rule or the reviewer's or person's reason, never the
// command body: for an exec only the program's name.
//
//	permwrap: denied exec of bash: no deleting — rule bash:rm * (deny, policy.jsonc:3:5); request 0190…
func (dn denial) forAgent() string {
	what := dn.access
	switch {
	case dn.program != "":
		what += " of " + dn.program
	case dn.value != "":
		what += " " + dn.value
	}
	s := dn.line(what)
	if len(s) > maxAgentLine {
		cut := maxAgentLine - len("…")
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// agentLine is forAgent as written: one line, newline-terminated.
func (dn denial) agentLine() []byte { return []byte(dn.forAgent() + "\n") }

// maxAgentLine bounds the agent's line: it goes into a pipe or socket in
// one write, whole or not at all (PIPE_BUF is 4096).
const maxAgentLine = 1024

func (dn denial) line(what string) string {
	var b strings.Builder
	b.WriteString("permwrap: denied ")
	b.WriteString(what)
	if dn.reason != "" {
		b.WriteString(": ")
		b.WriteString(dn.reason)
	}
	if dn.by != "" {
		b.WriteString(" — ")
		b.WriteString(dn.by)
	}
	if dn.id != "" {
		b.WriteString("; request ")
		b.WriteString(string(dn.id))
	}
	return display.Printable(b.String())
}
