package supervisor

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/display"
	"github.com/permwrap/permwrap/notify"
)

// refuse fails the call with EACCES and says why: one line for the
// person (the noticer; on a relayed terminal the relay decides when it
// may be shown, see relay.Write) and one for the agent on the denied
// process's own stderr when a program reads that back (tellAgent).
func (s *supervisor) refuse(r *request, v verdict, d authority.Decision, id authority.RequestID) {
	program := ""
	if v.exec != nil && len(v.argv) > 0 {
		program = v.argv[0]
	}
	dn := newDenial(v, d, id, program)
	s.notices.line(dn.forPerson())
	s.tellAgent(r, v, dn)
	s.respondErr(r.id, unix.EACCES)
}

// tellAgent appends the agent's line to the denied process's stderr when
// that is a pipe, a FIFO, a regular file or a local socket: the output of
// a tool subprocess, which the agent reads and the model sees, so it
// learns why instead of retrying. For a refused exec the line goes to the
// process that called exec (the child a spawn forked), so a program whose
// spawn fails with EACCES still finds the reason on the child's stderr
// (Node's child_process delivers it before the 'error' event), and to the
// stderr of that child's parent when it is a different file (see
// notify.TellSpawner). Never the person's terminal (notify.TellFd
// checks), never the command body.
// denialNotice: "off" turns it off.
func (s *supervisor) tellAgent(r *request, v verdict, dn denial) {
	if s.cfg.Policy.Settings().DenialNotice == "off" {
		return
	}
	line := []byte(dn.forAgent() + "\n")
	_ = notify.TellFd(r.tid, 2, line, s.cfg.Stderr)
	if v.exec != nil {
		// Python, Go and Rust spawners drop the child's pipes when its
		// exec fails; their own stderr may be what the agent reads.
		_ = notify.TellSpawner(r.tid, line, s.cfg.Stderr)
	}
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

// noticer writes the one-line notices a person sees, rate-limited (a
// token bucket) so that a program looping on a denied path cannot flood
// the terminal. Suppressed lines are counted and the count is reported
// with the next line that gets through.
type noticer struct {
	mu         sync.Mutex
	w          io.Writer
	tokens     float64
	last       time.Time
	suppressed int
}

const (
	noticeBurst = 10  // lines at once
	noticeRate  = 2.0 // lines per second after the burst
	noticeWidth = 300 // characters of one line at most
)

func newNoticer(w io.Writer) *noticer {
	return &noticer{w: w, tokens: noticeBurst, last: time.Now()}
}

func (n *noticer) line(s string) {
	s = display.Printable(s)
	if len([]rune(s)) > noticeWidth {
		s = string([]rune(s)[:noticeWidth-1]) + "…"
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	n.tokens = min(noticeBurst, n.tokens+now.Sub(n.last).Seconds()*noticeRate)
	n.last = now
	if n.tokens < 1 {
		n.suppressed++
		return
	}
	n.tokens--
	if n.suppressed > 0 {
		fmt.Fprintf(n.w, "permwrap: (%d more denials not shown; see the review log)\n", n.suppressed)
		n.suppressed = 0
	}
	fmt.Fprintln(n.w, s)
}

func (n *noticer) flush() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.suppressed > 0 {
		fmt.Fprintf(n.w, "permwrap: (%d more denials not shown; see the review log)\n", n.suppressed)
		n.suppressed = 0
	}
}
