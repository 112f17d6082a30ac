package authority

import (
	"encoding/json"
	"time"

	"github.com/permwrap/permwrap/engine"
)

// Process is the process that made the request, as the supervisor read it
// from /proc before deciding.
type Process struct {
	PID     int // the process (thread group id)
	TID     int // the thread that made the call, when it is not the process's main thread; 0 otherwise
	Comm    string
	Exe     string
	Cmdline []string
}

// Request is one ask, with everything a link, a person or the log needs
// to judge it. It is a value: the chain hands each link its own copy.
type Request struct {
	ID      RequestID
	Time    time.Time
	Process Process
	Agent   []string // the command permwrap was started with
	Node    string   // the nested permwrap node the request came from ("reviewer#3"); "" for this one
	// NodeCommand is the command that node's permwrap runs (what its
	// person typed after `permwrap --`), shown beside the node's name.
	NodeCommand []string

	Check  engine.Check      // surface and value (resolved path or rendered command line)
	Access string            // "read", "write", "create", "rename", "exec", ...
	Net    *engine.NetIntent // surface net: the whole destination (host, address, port, protocol)
	Runs   []string          // inner commands of wrappers (env, nice, sudo -u ...)
	Units  []string          // the units of a script the command line runs
	// Command is the command the model sent when an agent's shell tool
	// wrapped it (shell.RecognizeAgentShell), CommandBy the agent. Runs
	// then lists the command's own parts (and any part of the agent's
	// set-up that asked or was denied), and SetUp the rest of the
	// agent's set-up, which only the full request shows.
	Command   string
	CommandBy string
	SetUp     []string
	// Through is a save's temporary file: the program writes it and
	// renames it over the file the request is about (Check.Value).
	Through string
	// Paths are both names of a rename, exchange or link (from, to), the
	// one that decided being Check.Value.
	Paths []string
	// Covers says what else allowing an exec allows: the places its
	// commands' job is to write in (engine.Effect.String: "writes into
	// /srv/repo.git (the push's remote…)"), whose writes then follow
	// without asking.
	Covers []string

	// Rule is the rule whose answer was ask; Origin OriginBuiltin or an
	// empty pattern means no rule matched and ask is the built-in answer.
	Rule      engine.Rule
	HumanOnly bool // protectedWrites: no link, no session approval
	// Managed (always with HumanOnly) marks an ask of the managed policy:
	// the managed policy's own reviewers (ChainConfig.Managed) may answer
	// it before the person; the user's links never see it.
	Managed bool
	// Suggested is what "allow for this session" would add: one pattern
	// for each part of the request that asked (a script's commands and
	// the files they use; a path's file or directory), editable at the
	// prompt. "Always allow" and "always deny" offer the same list.
	Suggested []SessionPattern
}

// NewRequest mints an id and stamps the time: call it where the request
// is created so the id is the same in every record about it.
func NewRequest(c engine.Check) Request {
	return Request{ID: NewRequestID(), Time: time.Now(), Check: c}
}

// HasRule reports whether a configured rule (rather than the built-in
// default) produced the ask.
func (r Request) HasRule() bool {
	return r.Rule.Pattern != "" && r.Rule.Origin != engine.OriginBuiltin && r.Rule.Surface != engine.SurfaceInvalid
}

func (r Request) clone() Request {
	c := r
	c.Agent = append([]string(nil), r.Agent...)
	c.NodeCommand = append([]string(nil), r.NodeCommand...)
	c.Process.Cmdline = append([]string(nil), r.Process.Cmdline...)
	c.Runs = append([]string(nil), r.Runs...)
	c.Units = append([]string(nil), r.Units...)
	c.SetUp = append([]string(nil), r.SetUp...)
	c.Paths = append([]string(nil), r.Paths...)
	c.Covers = append([]string(nil), r.Covers...)
	c.Suggested = append([]SessionPattern(nil), r.Suggested...)
	if r.Net != nil {
		n := *r.Net
		n.Names = append([]string(nil), r.Net.Names...)
		c.Net = &n
	}
	return c
}

// Caps on what a request carries outward (to a judge program, to the
// log): a command line can be megabytes, and nothing downstream needs all
// of it to decide.
const (
	maxListItems = 64
	maxItemBytes = 4096
)

func capList(xs []string) []string {
	if len(xs) == 0 {
		return []string{}
	}
	out := make([]string, 0, min(len(xs), maxListItems+1))
	for i, x := range xs {
		if i == maxListItems {
			out = append(out, "…")
			break
		}
		out = append(out, elide(x, maxItemBytes))
	}
	return out
}

type ruleJSON struct {
	Surface  string `json:"surface"`
	Pattern  string `json:"pattern"`
	Action   string `json:"action,omitempty"`
	Origin   string `json:"origin"`
	Position string `json:"position,omitempty"`
}

// ruleSet reports whether r names a rule at all (the zero Rule does not):
// only then does a record or a request carry one.
func ruleSet(r engine.Rule) bool { return !(r.Surface == engine.SurfaceInvalid && r.Pattern == "") }

func ruleToJSON(r engine.Rule) *ruleJSON {
	if !ruleSet(r) {
		return nil
	}
	j := &ruleJSON{Surface: r.Surface.String(), Pattern: r.Pattern, Origin: r.Origin.String(), Position: r.Pos.String()}
	if r.Action != 0 {
		j.Action = r.Action.String()
	}
	return j
}

// requestJSON is the request as judge programs see it on stdin; its
// fields are documented in docs/authorizers.md.
type requestJSON struct {
	RequestID RequestID `json:"requestId"`
	Time      string    `json:"time"`
	Process   struct {
		PID     int      `json:"pid"`
		TID     int      `json:"tid,omitempty"`
		Comm    string   `json:"comm"`
		Exe     string   `json:"exe"`
		Cmdline []string `json:"cmdline"`
	} `json:"process"`
	Agent     []string  `json:"agent"`
	Node      string    `json:"node,omitempty"`
	NodeCmd   []string  `json:"nodeCommand,omitempty"`
	Surface   string    `json:"surface"`
	Access    string    `json:"access"`
	Value     string    `json:"value"`
	Net       *netJSON  `json:"net,omitempty"`
	Runs      []string  `json:"runs"`
	Units     []string  `json:"units"`
	Through   string    `json:"through,omitempty"`
	Paths     []string  `json:"paths,omitempty"`
	Covers    []string  `json:"covers,omitempty"`
	Command   string    `json:"command,omitempty"`
	CommandBy string    `json:"commandBy,omitempty"`
	SetUp     []string  `json:"setUp,omitempty"`
	Rule      *ruleJSON `json:"rule"`
	HumanOnly bool      `json:"humanOnly"`
	Managed   bool      `json:"managed,omitempty"`
	// Suggested is the first of Suggestions (the field as it was before
	// a request could suggest several).
	Suggested   *patternJSON  `json:"suggested,omitempty"`
	Suggestions []patternJSON `json:"suggestions,omitempty"`
	// Masked says that MaskSecrets replaced something in a command line
	// with "***": a reviewer must treat that part as unknown.
	Masked bool `json:"masked,omitempty"`
}

// MarshalJSON renders the request for judge programs: the fields of
// docs/authorizers.md and nothing else, with lists and strings capped and
// secret-looking values in command lines masked (MaskSecrets: the
// process's and the agent's argv, a bash value, its runs and units, the
// suggested pattern). Paths are sent as they are: they are what a
// reviewer of a read or a write decides on.
func (r Request) MarshalJSON() ([]byte, error) {
	var j requestJSON
	mask := func(s string) string {
		m := MaskSecrets(s)
		j.Masked = j.Masked || m != s
		return m
	}
	maskArgv := func(xs []string) []string {
		m := MaskArgv(xs)
		j.Masked = j.Masked || !sameSlice(m, xs)
		return m
	}
	maskAll := func(xs []string) []string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = mask(x)
		}
		return out
	}
	j.RequestID = r.ID
	j.Time = r.Time.UTC().Format(time.RFC3339Nano)
	j.Process.PID = r.Process.PID
	j.Process.TID = r.Process.TID
	j.Process.Comm = elide(r.Process.Comm, maxItemBytes)
	j.Process.Exe = elide(r.Process.Exe, maxItemBytes)
	j.Process.Cmdline = capList(maskArgv(r.Process.Cmdline))
	j.Agent = capList(maskArgv(r.Agent))
	j.Node = r.Node
	if len(r.NodeCommand) > 0 {
		j.NodeCmd = capList(maskArgv(r.NodeCommand))
	}
	j.Surface = r.Check.Surface.String()
	j.Access = r.Access
	value := r.Check.Value
	if r.Check.Surface == engine.SurfaceBash {
		value = mask(value)
	}
	j.Value = elide(value, 4*maxItemBytes)
	j.Net = netToJSON(r.Net)
	j.Runs = capList(maskAll(r.Runs))
	j.Units = capList(maskAll(r.Units))
	j.Through = elide(r.Through, maxItemBytes)
	for _, p := range r.Paths {
		j.Paths = append(j.Paths, elide(p, maxItemBytes))
	}
	if len(r.Covers) > 0 {
		j.Covers = capList(r.Covers)
	}
	if r.Command != "" {
		j.Command = elide(mask(r.Command), 4*maxItemBytes)
		j.CommandBy = r.CommandBy
		j.SetUp = capList(maskAll(r.SetUp))
	}
	j.Rule = ruleToJSON(r.Rule)
	j.HumanOnly = r.HumanOnly
	j.Managed = r.Managed
	if !r.HumanOnly {
		for i, sp := range r.Suggested {
			if i == maxListItems {
				break
			}
			pattern := sp.Pattern
			if sp.Surface == engine.SurfaceBash {
				pattern = mask(pattern)
			}
			j.Suggestions = append(j.Suggestions, patternJSON{sp.Surface.String(), elide(pattern, maxItemBytes)})
		}
		if len(j.Suggestions) > 0 {
			j.Suggested = &j.Suggestions[0]
		}
	}
	return json.Marshal(j)
}

type patternJSON struct {
	Surface string `json:"surface"`
	Pattern string `json:"pattern"`
}

// sameSlice reports whether a and b are the same slice (MaskArgv returns
// its argument when it masked nothing).
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// netJSON is a connection's destination in the judge request and the
// review log.
type netJSON struct {
	Proto string   `json:"proto"`
	Host  string   `json:"host,omitempty"`
	Addr  string   `json:"addr,omitempty"`
	Port  uint16   `json:"port,omitempty"`
	Names []string `json:"names,omitempty"`
	Path  string   `json:"path,omitempty"`
	// Service is what serves a destination on this machine.
	Service *serviceJSON `json:"service,omitempty"`
}

type serviceJSON struct {
	// Tree: the session's own server; otherwise a process outside.
	Tree    bool   `json:"tree"`
	Exe     string `json:"exe,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Cmdline string `json:"cmdline,omitempty"`
}

func netToJSON(n *engine.NetIntent) *netJSON {
	if n == nil {
		return nil
	}
	j := &netJSON{Proto: n.Proto.String(), Host: n.Host, Port: n.Port, Path: elide(n.Path, maxItemBytes)}
	if n.Addr.IsValid() {
		j.Addr = n.Addr.String()
	}
	if len(n.Names) > 0 {
		j.Names = capList(n.Names)
	}
	if s := n.Service; s != nil {
		j.Service = &serviceJSON{Tree: s.Tree, Exe: elide(s.Exe, maxItemBytes), PID: s.PID, Cmdline: elide(s.Cmdline, maxItemBytes)}
	}
	return j
}
