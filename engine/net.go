package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// NetProto is the transport of a connection. Rules do not tell TCP from
// UDP (a host and port are the same destination either way); the
// protocol is carried for the log and the prompt.
type NetProto uint8

const (
	ProtoTCP NetProto = iota + 1
	ProtoUDP
	ProtoUnix
	// ProtoICMP is an unprivileged ICMP ("ping") socket: a datagram to
	// an address, port 0.
	ProtoICMP
)

var protoNames = [...]string{"", "tcp", "udp", "unix", "icmp"}

func (p NetProto) String() string {
	if int(p) < len(protoNames) && p != 0 {
		return protoNames[p]
	}
	return fmt.Sprintf("proto(%d)", p)
}

// NetIntent is one outbound connection (or datagram with a destination)
// as permwrap saw it: by the proxy, named by the host the program asked
// for; by the kernel, an address, with the names permwrap itself
// resolved to that address for this process tree, when there are any.
type NetIntent struct {
	Proto NetProto
	// Host is the DNS name the program asked for (a proxy request), in
	// lower case without a trailing dot; "" when the program gave only
	// an address.
	Host string
	// Addr is the address connected to; the zero Addr when it is not
	// known yet (a proxy request before its name is resolved).
	Addr netip.Addr
	Port uint16
	// Names are names permwrap resolved to Addr for this process tree
	// recently (the proxy's DNS cache). Only these let a name rule speak
	// for a bare address.
	Names []string
	// Nameserver says Addr is one of the system's configured name
	// servers, so the spelling `<nameserver>:PORT` is judged too.
	Nameserver bool
	// Path is a Unix socket's resolved path, or "@name" for an abstract
	// socket (NUL bytes in the name shown as '@', as ss(8) does).
	Path string
	// PID is the process that asked, for people and the log. It is never
	// used to decide.
	PID int
	// Service is who serves the destination on this machine, when it is
	// on this machine (a Unix socket, a loopback or local address) and
	// permwrap looked; nil otherwise.
	Service *NetService
}

// NetService is what serves a destination on this machine: a socket the
// sandboxed tree itself bound, or a process outside the sandbox, which
// may act for whoever connects (a tmux server runs commands, a database
// hands out data), so the spelling `<outside:PROGRAM>` is judged too.
type NetService struct {
	// Tree: a socket the tree bound (permwrap performed the bind or
	// listen) receives the connection.
	Tree bool
	// Exe is the executable of a process holding the receiving socket
	// ("" when no holder could be read: another user's process, another
	// namespace).
	Exe string
	// PID is that process, Cmdline its command line, for people; neither
	// decides.
	PID     int
	Cmdline string
}

// OutsideValue is the spelling of a destination a process outside the
// sandbox serves: `<outside:/usr/bin/tmux>`, `<outside:/usr/bin/redis-server>:6379`,
// `<outside>:5432` when the program is unknown.
func (in NetIntent) OutsideValue() string {
	s := OutsideHost
	if e := in.Service.Exe; e != "" && e[0] == '/' && !strings.ContainsAny(e, "<>\x00") && len(e) <= 4096 {
		s = "<outside:" + e + ">"
	}
	if in.Proto != ProtoUnix {
		s += ":" + strconv.Itoa(int(in.Port))
	}
	return s
}

// outside reports whether a process outside the sandbox serves the
// destination.
func (in NetIntent) outside() bool { return in.Service != nil && !in.Service.Tree }

// maxNetNames bounds how many cached names are judged for one address.
const maxNetNames = 8

// normalized returns the address as the kernel uses it: IPv4-mapped
// IPv6 is the IPv4 address, a zone is dropped (rules have none), and the
// unspecified address (connect to 0.0.0.0 or ::) is the loopback address
// it reaches.
func normalizeAddr(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if a.IsUnspecified() {
		if a.Is4() {
			return netip.AddrFrom4([4]byte{127, 0, 0, 1})
		}
		return netip.IPv6Loopback()
	}
	return a
}

// Validate reports what makes the intent undecidable: an unknown
// protocol, no destination, a malformed name or path.
func (in NetIntent) Validate() error {
	switch in.Proto {
	case ProtoUnix:
		if in.Path == "" || in.Path[0] != '/' && in.Path[0] != '@' {
			return errors.New("a Unix socket needs an absolute path or an @abstract name")
		}
		if strings.IndexByte(in.Path, 0) >= 0 {
			return errors.New("socket path holds a NUL byte")
		}
		return nil
	case ProtoTCP, ProtoUDP, ProtoICMP:
	default:
		return fmt.Errorf("unknown protocol %v", in.Proto)
	}
	if in.Host == "" && !in.Addr.IsValid() {
		return errors.New("no host and no address")
	}
	if in.Host != "" {
		if n, err := normalizeName(in.Host, 0); err != nil || n != in.Host {
			return fmt.Errorf("host %q is not a normalized host name", in.Host)
		}
	}
	for _, n := range in.Names {
		if c, err := normalizeName(n, 0); err != nil || c != n {
			return fmt.Errorf("resolved name %q is not a normalized host name", n)
		}
	}
	if len(in.Names) > 0 && !in.Addr.IsValid() {
		return errors.New("resolved names without an address")
	}
	return nil
}

// Spellings returns the values the intent is judged on, each a check on
// the net surface: the host asked for, the cached names, the address
// (for a loopback address, also the other family's loopback: loopback
// is one host), `<nameserver>` for a configured name server, and last,
// for a service outside the sandbox, `<outside:PROGRAM>` (OutsideValue).
func (in NetIntent) Spellings() []Check {
	if in.Proto == ProtoUnix {
		out := []Check{{SurfaceNet, "unix:" + in.Path}}
		if in.outside() {
			out = append(out, Check{SurfaceNet, in.OutsideValue()})
		}
		return out
	}
	port := ":" + strconv.Itoa(int(in.Port))
	var out []Check
	seen := map[string]bool{}
	addName := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, Check{SurfaceNet, n + port})
		}
	}
	addName(in.Host)
	for i, n := range in.Names {
		if i == maxNetNames {
			break
		}
		addName(n)
	}
	if in.Addr.IsValid() {
		a := normalizeAddr(in.Addr)
		out = append(out, Check{SurfaceNet, netip.AddrPortFrom(a, in.Port).String()})
		if a.IsLoopback() {
			for _, l := range [...]netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()} {
				if l != a {
					out = append(out, Check{SurfaceNet, netip.AddrPortFrom(l, in.Port).String()})
				}
			}
		}
	}
	if in.Nameserver {
		out = append(out, Check{SurfaceNet, NameserverHost + port})
	}
	if in.outside() {
		out = append(out, Check{SurfaceNet, in.OutsideValue()})
	}
	return out
}

// Target is the destination as a person reads it: `github.com:443`,
// `140.82.112.3:443`, `unix:/run/docker.sock`.
func (in NetIntent) Target() string {
	switch {
	case in.Proto == ProtoUnix:
		return "unix:" + in.Path
	case in.Host != "":
		return in.Host + ":" + strconv.Itoa(int(in.Port))
	case in.Addr.IsValid():
		return netip.AddrPortFrom(in.Addr.WithZone(""), in.Port).String()
	}
	return "(no destination)"
}

// String is one line for logs and prompts: "tcp github.com:443 (140.82.112.3)",
// "tcp 140.82.112.3:443 (no name known)", "unix /run/docker.sock".
func (in NetIntent) String() string {
	if in.Proto == ProtoUnix {
		return "unix " + in.Path + in.Service.String()
	}
	s := in.Proto.String() + " " + in.Target()
	switch {
	case in.Host != "" && in.Addr.IsValid():
		s += " (" + in.Addr.WithZone("").String() + ")"
	case in.Host == "" && len(in.Names) > 0:
		s += " (resolved from " + strings.Join(in.Names, ", ") + ")"
	case in.Host == "":
		s += " (no name known)"
	}
	return s + in.Service.String()
}

// maxCmdlineShown bounds the command line a service is shown with.
const maxCmdlineShown = 120

// String is what serves the destination, in one short clause for the
// denial line and the log: ", served by this session", ", served
// outside the sandbox by /usr/bin/tmux (pid 812)"; "" for nil.
func (s *NetService) String() string {
	switch {
	case s == nil:
		return ""
	case s.Tree:
		return ", served by this session"
	case s.Exe == "" && s.PID == 0:
		return ", served outside the sandbox by a process permwrap cannot see"
	}
	var b strings.Builder
	b.WriteString(", served outside the sandbox by ")
	if s.Exe != "" {
		b.WriteString(s.Exe)
	} else {
		b.WriteString("a process")
	}
	if s.PID > 0 {
		fmt.Fprintf(&b, " (pid %d)", s.PID)
	}
	return b.String()
}

// Detail is the serving process's command line for the prompt, bounded;
// "" when there is none. Like the path and the host, it is escaped where
// it is shown (display.Printable).
func (s *NetService) Detail() string {
	if s == nil || s.Tree || s.Cmdline == "" {
		return ""
	}
	if c := []rune(s.Cmdline); len(c) > maxCmdlineShown {
		return string(c[:maxCmdlineShown]) + "…"
	}
	return s.Cmdline
}

// NetSpelling is how one spelling of a connection was judged.
type NetSpelling struct {
	Result Result
	// Part says the spelling took part in the composition: a hard guard
	// decided it, or a rule that names a host (or socket). A spelling
	// only `*`-host rules or the fallback matched abstains, unless every
	// spelling does.
	Part bool
}

// NetDecision is the answer to a NetIntent.
type NetDecision struct {
	Result    Result
	Spellings []NetSpelling
}

// Reason is one line for a person and the agent: what was decided, on
// which spelling, by which rule, and — for an address with no known name
// that was not allowed — how to get it judged by name.
func (d NetDecision) Reason(in NetIntent) string {
	var b strings.Builder
	b.WriteString(d.Result.Action.String())
	b.WriteString(": ")
	b.WriteString(in.String())
	b.WriteString(" — ")
	b.WriteString(d.Result.Rule.String())
	if d.Result.Rule.Reason != "" {
		b.WriteString(": ")
		b.WriteString(d.Result.Rule.Reason)
	}
	if d.Result.Action != Allow && in.Proto != ProtoUnix && in.Host == "" && len(in.Names) == 0 {
		b.WriteString(" — use a host name through the proxy")
	}
	return b.String()
}

// DecideNet decides a connection. A destination the sandboxed tree
// itself serves (Service.Tree) is allowed where the policy would ask.
// Each spelling (the host asked for, the
// names permwrap resolved to the address, the address, `<nameserver>`)
// is evaluated through the usual layers; a name rule matches only names
// and an address rule only addresses. The spellings then compose
// most-restrictive-wins among those that take part: those decided by a
// hard guard or by a rule naming a host. A spelling matched only by a
// `*` host rule (or the fallback) abstains, so `github.com:443: allow`
// is not overruled by `*: ask` on the address the name resolved to,
// while `169.254.169.254: deny` holds whatever name led there. When
// every spelling abstains they all take part.
func (p *Policy) DecideNet(in NetIntent) NetDecision {
	if err := in.Validate(); err != nil {
		c := Check{SurfaceNet, in.Target()}
		r := Result{Action: Deny, Check: c, Layer: LayerBuiltin,
			Rule: Rule{Surface: SurfaceNet, Action: Deny, Origin: OriginBuiltin, Reason: "undecidable destination: " + err.Error()}}
		return NetDecision{Result: r, Spellings: []NetSpelling{{Result: r, Part: true}}}
	}
	checks := in.Spellings()
	evals := make([]evaluation, len(checks))
	d := NetDecision{Spellings: make([]NetSpelling, len(checks))}
	// The `<outside…>` spelling is last, and a tier below the others: it
	// speaks only through a rule that names it (`*` does not), and only
	// when no rule naming the destination itself (its address, name or
	// socket path) does, which is more specific than one about who
	// serves it.
	n := len(checks)
	if in.outside() {
		n--
	}
	anyPart := false
	for i, c := range checks {
		evals[i] = p.evaluate(c, assumeSecret)
		part := takesPart(&evals[i])
		if i < n {
			anyPart = anyPart || part
		}
		d.Spellings[i] = NetSpelling{Result: evals[i].Result, Part: part}
	}
	if n < len(checks) {
		if d.Spellings[n].Part && !anyPart {
			d.Result = evals[n].Result // served outside: never the tree's own
			return d
		}
		d.Spellings[n].Part = false
	}
	best := -1
	for i := range evals[:n] {
		if anyPart && !d.Spellings[i].Part {
			continue
		}
		if !anyPart {
			d.Spellings[i].Part = true
		}
		if best < 0 || stronger(&evals[i], &evals[best]) {
			best = i
		}
	}
	d.Result = evals[best].Result
	return d.ownServer(in)
}

// ownServer allows a connection to a server the session itself started
// where the policy would ask: nothing outside the sandbox acts on it. A
// deny still holds.
func (d NetDecision) ownServer(in NetIntent) NetDecision {
	if d.Result.Action == Ask && in.Service != nil && in.Service.Tree {
		c := Check{Surface: SurfaceNet, Value: in.Target()}
		d.Result = Result{Action: Allow, Check: c, Layer: LayerBuiltin,
			Rule: Rule{Surface: SurfaceNet, Action: Allow, Origin: OriginBuiltin, Reason: "a socket this session's own processes bound"}}
	}
	return d
}

func takesPart(e *evaluation) bool {
	switch e.Layer {
	case LayerHardGuard, LayerProtectedWrite:
		return true
	case LayerSession, LayerPolicy:
		return e.cr != nil && e.cr.net != nil && e.cr.net.namesHost()
	}
	return false
}

// ExplainNet explains DecideNet(in): every spelling with its deciding
// rule and runner-ups, whether it took part, and the composed answer.
func (p *Policy) ExplainNet(in NetIntent) DecisionExplanation {
	d := p.DecideNet(in)
	var b strings.Builder
	fmt.Fprintf(&b, "connection: %s\n", in)
	if in.Validate() != nil {
		fmt.Fprintf(&b, "  %s\n", d.Result.Rule.Reason)
		return DecisionExplanation{Result: d.Result, Extra: b.String()}
	}
	for i, c := range in.Spellings() {
		ex := p.Explain(c)
		text := ex.String()
		if !d.Spellings[i].Part {
			why := "only a rule for any host matched; a rule naming a host decides"
			if strings.HasPrefix(c.Value, "<outside") {
				why = "only an <outside…> rule speaks for who serves it, and only when no rule names the destination itself"
			}
			text = strings.Replace(text, "\n", "\n  abstains: "+why+"\n", 1)
		}
		b.WriteString(text)
	}
	if len(d.Spellings) > 1 {
		fmt.Fprintf(&b, "composed (most restrictive of the spellings that name this destination): %s, from %s\n", d.Result.Action, d.Result.Check.Value)
	}
	if in.Host == "" && len(in.Names) == 0 && in.Proto != ProtoUnix {
		b.WriteString("note: no name is known for this address: name rules cannot apply (a program that uses the proxy is judged by the name it asks for)\n")
	}
	return DecisionExplanation{Result: d.Result, Extra: b.String()}
}

// ParseNetTarget reads a destination as a person writes it for `permwrap
// explain net`: `github.com:443`, `140.82.112.3:443`, `[::1]:22`,
// `unix:/run/docker.sock`, `unix:@name`. also are further names (for an
// address: names permwrap resolved to it) or addresses (for a name: what
// it resolved to). The protocol is TCP unless the target starts `udp:`.
func ParseNetTarget(target string, also []string) (NetIntent, error) {
	in := NetIntent{Proto: ProtoTCP}
	if rest, ok := strings.CutPrefix(target, "unix:"); ok && rest != "" && (rest[0] == '/' || rest[0] == '@') {
		in.Proto, in.Path = ProtoUnix, rest
		if len(also) > 0 {
			return in, errors.New("a Unix socket takes no further names")
		}
		return in, in.Validate()
	}
	if rest, ok := strings.CutPrefix(target, "udp:"); ok {
		in.Proto, target = ProtoUDP, rest
	} else if rest, ok := strings.CutPrefix(target, "tcp:"); ok {
		target = rest
	}
	ap, err := netip.ParseAddrPort(target)
	if err == nil {
		in.Addr, in.Port = ap.Addr(), ap.Port()
		for _, n := range also {
			name, err := normalizeName(n, 0)
			if err != nil {
				return in, fmt.Errorf("resolved name %q: %v", n, err)
			}
			in.Names = append(in.Names, name)
		}
		return in, in.Validate()
	}
	i := strings.LastIndexByte(target, ':')
	if i <= 0 {
		return in, fmt.Errorf("%q: want HOST:PORT, [IPV6]:PORT, unix:/path or unix:@name", target)
	}
	port, err := strconv.ParseUint(target[i+1:], 10, 16)
	if err != nil {
		return in, fmt.Errorf("%q: port %q is not a number from 0 to 65535", target, target[i+1:])
	}
	in.Port = uint16(port)
	name, err := normalizeName(target[:i], 0)
	if err != nil {
		return in, fmt.Errorf("%q: %v", target, err)
	}
	in.Host = name
	switch len(also) {
	case 0:
	case 1:
		a, err := netip.ParseAddr(also[0])
		if err != nil {
			return in, fmt.Errorf("resolved address %q: %v", also[0], err)
		}
		in.Addr = a
	default:
		return in, errors.New("a host name takes at most one address it resolved to")
	}
	return in, in.Validate()
}

// SuggestNetPattern proposes the pattern for "allow for this session":
// the spelling that decided, exactly (the host or address and its port,
// or the socket path). A person approves one destination, not a domain.
func SuggestNetPattern(r Result) string {
	v := r.Check.Value
	if path, ok := strings.CutPrefix(v, "unix:"); ok && path != "" && path[0] == '/' {
		return "unix:" + QuoteGlob(path)
	}
	if strings.HasPrefix(v, "unix:@") {
		return "unix:@" + QuoteGlob(v[len("unix:@"):])
	}
	if d, ok := parseOutsideValue(v); ok && d.path != "" {
		s := "<outside:" + QuoteGlob(d.path) + ">"
		if d.port != 0 {
			s += ":" + strconv.Itoa(int(d.port))
		}
		return s
	}
	return v
}
