package engine

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/permwrap/permwrap/engine/shell"
)

// Net patterns name destinations of outbound connections:
//
//	*                        every destination (Unix sockets included)
//	*:443                    any host on port 443
//	github.com  github.com:443  github.com:*
//	*.npmjs.org              any name below npmjs.org (not npmjs.org itself)
//	140.82.112.3  10.0.0.0/8  10.0.0.0/8:22
//	::1  fd00::/8  [::1]:22  [fd00::/8]:*   (brackets when a port follows)
//	<nameserver>:53          a name server the system is configured with
//	unix:/run/docker.sock    a Unix socket by path (path patterns as on
//	unix:~/.ssh/agent/*      the path surfaces; a name without '/' is its
//	unix:*.sock              last component anywhere)
//	unix:@/tmp/.X11-unix/*   an abstract Unix socket by name
//	<outside>  <outside>:6379  a service on this machine that a process
//	<outside:tmux>             outside the sandbox serves (by the serving
//	<outside:/usr/bin/redis-server>:*  program: a path pattern as for unix:)
//
// No port (or `:*`) means any port. A name pattern matches only names, an
// address pattern only addresses; see net.go for how the names and the
// address of one connection are judged together.

// netHostKind is what the host part of a net pattern names. The order
// is part of the specificity order (see netMoreSpecific): it only
// separates kinds that never match the same value.
type netHostKind uint8

const (
	hostAny        netHostKind = iota // `*`
	hostName                          // one DNS name
	hostNameSuffix                    // `*.example.com`
	hostAddr                          // one IP address
	hostPrefix                        // a CIDR prefix
	hostNameserver                    // `<nameserver>`
	hostUnix                          // `unix:PATH` or `unix:@NAME`
	hostOutside                       // `<outside>` or `<outside:PROGRAM>`
)

// NameserverHost is the host that stands for the name servers the
// system is configured with (/etc/resolv.conf).
const NameserverHost = "<nameserver>"

// OutsideHost is the host that stands for a service on this machine
// served by a process outside the sandbox; `<outside:PROGRAM>` names the
// serving program's executable.
const OutsideHost = "<outside>"

// netPattern is a compiled net-surface pattern.
type netPattern struct {
	kind   netHostKind
	name   string       // hostName: the name; hostNameSuffix: ".example.com"
	labels int          // hostNameSuffix: labels after `*.`
	prefix netip.Prefix // hostAddr (full length) and hostPrefix
	port   uint16       // 0: any port
	// hostUnix: a path pattern, or (abstract) a glob over the name after '@'.
	unixPath *pathPattern
	abstract *globMatcher
	absSpec  specificity
	// hostOutside: the serving program's executable (nil: any program).
	served *pathPattern
}

// NetPatternError is a net pattern that does not compile, with the byte
// offset in the pattern where the problem is, so a configuration error
// can point at it.
type NetPatternError struct {
	Offset int
	Msg    string
}

func (e *NetPatternError) Error() string { return e.Msg }

func netErr(off int, format string, args ...any) *NetPatternError {
	return &NetPatternError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// compileNetPattern compiles a net pattern as written; env expands `~`
// and ${VAR} in Unix socket paths. Errors are *NetPatternError.
func compileNetPattern(raw string, env Env) (*netPattern, error) {
	if raw == "" {
		return nil, netErr(0, "empty pattern")
	}
	if t := strings.TrimSpace(raw); t != raw {
		off := 0
		if strings.HasPrefix(raw, t) {
			off = len(t) // the white space trails
		}
		return nil, netErr(off, "pattern has leading or trailing white space")
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c < 0x20 || c == 0x7f {
			return nil, netErr(i, "pattern contains a control character")
		}
	}
	if rest, ok := strings.CutPrefix(raw, "unix:"); ok {
		return compileUnixPattern(rest, 5, env)
	}
	if strings.HasPrefix(raw, "<outside") {
		return compileOutsidePattern(raw, env)
	}
	if err := urlShaped(raw); err != nil {
		return nil, err
	}
	host, hostOff, portStr, portOff, err := splitHostPort(raw)
	if err != nil {
		return nil, err
	}
	np := &netPattern{}
	if portStr != "" && portStr != "*" {
		port, err := parsePort(portStr, portOff)
		if err != nil {
			return nil, err
		}
		np.port = port
	}
	if err := np.parseHost(host, hostOff); err != nil {
		return nil, err
	}
	return np, nil
}

// urlSchemePorts are the ports of the URL schemes a person is likely to
// write where a net pattern goes.
var urlSchemePorts = map[string]string{
	"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21",
	"ssh": "22", "git": "9418", "git+ssh": "22", "ssh+git": "22",
}

// urlShaped reports a pattern written as a URL (https://github.com/foo)
// or with a path (github.com/foo) with the spelling a net rule takes:
// a connection is judged by host and port, never by a URL's path.
func urlShaped(raw string) *NetPatternError {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		// host/path, where the host is a name: an address before the
		// slash is a CIDR prefix, right or wrong.
		host, path, ok := strings.Cut(raw, "/")
		if !ok || host == "" || strings.HasPrefix(host, "[") {
			return nil
		}
		if _, err := netip.ParseAddr(strings.Split(host, ":")[0]); err == nil || strings.Count(host, ":") > 1 {
			return nil
		}
		return netErr(len(host), "a net pattern names a host and port, not a path: write %q (a connection cannot tell /%s apart)", host, path)
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:] // user@ or user:password@
	}
	if authority == "" {
		return netErr(0, "%q is a URL, and a net pattern names a host and port: write HOST:PORT", raw)
	}
	want := authority
	hasPort := strings.HasPrefix(authority, "[") && strings.Contains(authority, "]:") ||
		!strings.HasPrefix(authority, "[") && strings.Count(authority, ":") == 1
	if !hasPort {
		port, known := urlSchemePorts[strings.ToLower(scheme)]
		if !known {
			return netErr(0, "%q is a URL, and a net pattern names a host and port: write %s:PORT (the port %s:// uses)", raw, authority, scheme)
		}
		want = authority + ":" + port
	}
	return netErr(0, "%q is a URL, and a net pattern names a host and port: write %q", raw, want)
}

// splitHostPort separates `host`, `host:port`, `[v6]`, `[v6]:port` and a
// bare IPv6 address or prefix (which takes no port).
func splitHostPort(raw string) (host string, hostOff int, port string, portOff int, err error) {
	if strings.HasPrefix(raw, "[") {
		end := strings.IndexByte(raw, ']')
		if end < 0 {
			return "", 0, "", 0, netErr(0, "missing ] after an IPv6 address")
		}
		host, hostOff = raw[1:end], 1
		rest := raw[end+1:]
		switch {
		case rest == "":
		case rest[0] == ':':
			port, portOff = rest[1:], end+2
			if port == "" {
				return "", 0, "", 0, netErr(end+1, "missing port after ':'")
			}
		default:
			return "", 0, "", 0, netErr(end+1, "unexpected %q after ]: want :PORT or nothing", rest)
		}
		if host == "" {
			return "", 0, "", 0, netErr(1, "empty IPv6 address in brackets")
		}
		if strings.Contains(host, ".") && !strings.Contains(host, ":") {
			return "", 0, "", 0, netErr(0, "brackets are for IPv6 addresses: write %s without them", host)
		}
		if !strings.Contains(host, ":") {
			return "", 0, "", 0, netErr(1, "%q in brackets is not an IPv6 address", host)
		}
		return host, hostOff, port, portOff, nil
	}
	switch n := strings.Count(raw, ":"); {
	case n == 0:
		return raw, 0, "", 0, nil
	case n == 1:
		i := strings.IndexByte(raw, ':')
		if i+1 == len(raw) {
			return "", 0, "", 0, netErr(i, "missing port after ':'")
		}
		return raw[:i], 0, raw[i+1:], i + 1, nil
	default:
		// A bare IPv6 address or prefix: it takes no port.
		if _, e := netip.ParseAddr(raw); e == nil {
			return raw, 0, "", 0, nil
		}
		if _, e := netip.ParsePrefix(raw); e == nil {
			return raw, 0, "", 0, nil
		}
		if i := strings.LastIndexByte(raw, ':'); i > 0 && looksLikePort(raw[i+1:]) {
			if _, e := netip.ParseAddr(raw[:i]); e == nil {
				return "", 0, "", 0, netErr(0, "an IPv6 address with a port needs brackets: [%s]:%s", raw[:i], raw[i+1:])
			}
			if _, e := netip.ParsePrefix(raw[:i]); e == nil {
				return "", 0, "", 0, netErr(0, "an IPv6 prefix with a port needs brackets: [%s]:%s", raw[:i], raw[i+1:])
			}
		}
		return "", 0, "", 0, netErr(0, "%q is not an IPv6 address or prefix (and a host takes one :PORT)", raw)
	}
}

// looksLikePort reports whether s is written as a port: digits, or "*".
func looksLikePort(s string) bool { return s == "*" || shell.IsDigits(s) }

func parsePort(s string, off int) (uint16, error) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			if s[i] == '-' || s[i] == ',' {
				return 0, netErr(off+i, "port ranges and lists are not supported: write one rule per port")
			}
			return 0, netErr(off+i, "port %q is not a number from 1 to 65535 (or *)", s)
		}
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n < 1 || n > 65535 || len(s) > 5 {
		return 0, netErr(off, "port %q is not a number from 1 to 65535 (or *)", s)
	}
	return uint16(n), nil
}

func (np *netPattern) parseHost(host string, off int) error {
	switch {
	case host == "":
		return netErr(off, "empty host")
	case host == "*":
		np.kind = hostAny
		return nil
	case host == NameserverHost:
		np.kind = hostNameserver
		return nil
	case strings.HasPrefix(host, "<"):
		return netErr(off, "unknown special host %q (want %s, %s or <outside:PROGRAM>)", host, NameserverHost, OutsideHost)
	case strings.Contains(host, "/"):
		p, err := netip.ParsePrefix(host)
		if err != nil {
			if strings.Contains(host, "%") {
				return netErr(off+strings.IndexByte(host, '%'), "zones (%%eth0) are not supported in rules")
			}
			return netErr(off, "%q is not a CIDR prefix (want e.g. 10.0.0.0/8 or fd00::/8)", host)
		}
		if m := p.Masked(); m != p {
			return netErr(off, "%s has address bits set beyond /%d: write %s", host, p.Bits(), m)
		}
		np.kind, np.prefix = hostPrefix, unmapPrefix(p)
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return netErr(off+strings.IndexByte(host, '%'), "zones (%%eth0) are not supported in rules")
		}
		a = a.Unmap()
		np.kind, np.prefix = hostAddr, netip.PrefixFrom(a, a.BitLen())
		return nil
	}
	start := 0
	if strings.HasPrefix(host, "*.") {
		start = 2
	}
	if i := strings.IndexByte(host[start:], '*'); i >= 0 {
		return netErr(off+start+i, "a * in a host name stands for whole labels at the start only: *.example.com")
	}
	if start == 2 {
		name, err := normalizeName(host[2:], off+2)
		if err != nil {
			return err
		}
		np.kind, np.name, np.labels = hostNameSuffix, "."+name, strings.Count(name, ".")+1
		return nil
	}
	name, err := normalizeName(host, off)
	if err != nil {
		return err
	}
	np.kind, np.name = hostName, name
	return nil
}

// unmapPrefix turns an IPv4-mapped IPv6 prefix (::ffff:10.0.0.0/104) into
// the IPv4 prefix it covers: values are unmapped before matching, so a
// rule must be too.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p
}

// Limits of DNS names (RFC 1035).
const (
	maxNameLen  = 253
	maxLabelLen = 63
)

// NormalizeHostName checks a host name as a program gave it (to the
// proxy, in a URL) and returns the form the net surface judges: lower
// case, no trailing dot. Only what DNS carries is accepted (letters,
// digits, '-', '_'); an international name must arrive in its xn-- form.
func NormalizeHostName(s string) (string, error) { return normalizeName(s, 0) }

// normalizeName checks a DNS name and returns it in lower case without
// a trailing dot. off is the name's offset in the pattern, for errors.
func normalizeName(s string, off int) (string, error) {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return "", netErr(off, "empty host name")
	}
	if len(s) > maxNameLen {
		return "", netErr(off, "host name longer than %d characters", maxNameLen)
	}
	start := 0
	allDigits := true
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if i == start {
				return "", netErr(off+i, "empty label in host name %q", s)
			}
			if i-start > maxLabelLen {
				return "", netErr(off+start, "label longer than %d characters in host name", maxLabelLen)
			}
			if i < len(s) {
				start, allDigits = i+1, true
			}
			continue
		}
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-', c == '_':
			allDigits = false
		case c >= 0x80:
			return "", netErr(off+i, "non-ASCII host name: write international names in their ASCII form (xn--…)")
		default:
			return "", netErr(off+i, "character %q is not allowed in a host name", c)
		}
	}
	if allDigits {
		// 10.0.0.256, 1.2.3: meant as an address, but not one.
		return "", netErr(off, "%q is neither an IP address nor a host name", s)
	}
	return strings.ToLower(s), nil
}

// compileUnixPattern compiles the part after `unix:` (at offset off).
func compileUnixPattern(rest string, off int, env Env) (*netPattern, error) {
	np := &netPattern{kind: hostUnix}
	if rest == "" {
		return nil, netErr(off, "missing socket path after unix: (want unix:/path, unix:@abstract-name or unix:*)")
	}
	if name, ok := strings.CutPrefix(rest, "@"); ok {
		if name == "" {
			return nil, netErr(off+1, "empty abstract socket name after unix:@")
		}
		g, spec, err := compileGlob(name)
		if err != nil {
			return nil, netErr(off+1, "%v", err)
		}
		np.abstract, np.absSpec = &g, spec
		return np, nil
	}
	exp, err := expandPattern(rest, env)
	if err != nil {
		return nil, netErr(off, "%v", err)
	}
	if !strings.HasPrefix(exp, "/") && !strings.HasPrefix(exp, "*") && strings.Contains(exp, "/") {
		return nil, netErr(off, "socket path %q is relative: write an absolute path (or a name without '/', which matches that name anywhere)", rest)
	}
	pp, err := compilePathPattern(exp)
	if err != nil {
		return nil, netErr(off, "%v", err)
	}
	np.unixPath = pp
	return np, nil
}

// compileOutsidePattern compiles `<outside>`, `<outside:PROGRAM>`, each
// with an optional `:PORT` (no port, or `:*`, is any port; a Unix socket
// has none). PROGRAM is a path pattern over the serving program's
// executable, as for unix: (a name without '/' is that name anywhere).
func compileOutsidePattern(raw string, env Env) (*netPattern, error) {
	np := &netPattern{kind: hostOutside}
	end := strings.LastIndexByte(raw, '>')
	if end < 0 {
		return nil, netErr(0, "missing > after %s", raw)
	}
	host, rest := raw[:end+1], raw[end+1:]
	switch {
	case rest == "":
	case rest[0] != ':':
		return nil, netErr(end+1, "unexpected %q after >: want :PORT or nothing", rest)
	case rest == ":":
		return nil, netErr(end+1, "missing port after ':'")
	case rest != ":*":
		port, err := parsePort(rest[1:], end+2)
		if err != nil {
			return nil, err
		}
		np.port = port
	}
	if host == OutsideHost {
		return np, nil
	}
	prog, ok := strings.CutPrefix(host, "<outside:")
	if !ok {
		return nil, netErr(0, "unknown special host %q (want %s or <outside:PROGRAM>)", host, OutsideHost)
	}
	prog = prog[:len(prog)-1]
	if prog == "" {
		return nil, netErr(len("<outside:"), "empty program after <outside: (write <outside> for any program)")
	}
	exp, err := expandPattern(prog, env)
	if err != nil {
		return nil, netErr(len("<outside:"), "%v", err)
	}
	if !strings.HasPrefix(exp, "/") && !strings.HasPrefix(exp, "*") && strings.Contains(exp, "/") {
		return nil, netErr(len("<outside:"), "program %q is relative: write an absolute path (or a name without '/', which matches that name anywhere)", prog)
	}
	pp, err := compilePathPattern(exp)
	if err != nil {
		return nil, netErr(len("<outside:"), "%v", err)
	}
	np.served = pp
	return np, nil
}

// netDestKind is what one spelling of a destination is.
type netDestKind uint8

const (
	destInvalid netDestKind = iota
	destName
	destAddr
	destNameserver
	destUnix
	destOutside // a service outside the sandbox; path is its program ("" unknown)
)

// netDest is one spelling of a destination, parsed from its value.
type netDest struct {
	kind netDestKind
	name string // destName
	addr netip.Addr
	port uint16
	path string // destUnix: "/path" or "@abstract"; destOutside: the program
}

// parseNetValue reads a value of the net surface as the engine writes
// them (NetIntent.Spellings): `name:port`, `1.2.3.4:port`,
// `[v6]:port`, `<nameserver>:port`, `unix:/path`, `unix:@name`.
func parseNetValue(v string) (netDest, bool) {
	if rest, ok := strings.CutPrefix(v, "unix:"); ok && rest != "" && (rest[0] == '/' || rest[0] == '@') {
		if strings.IndexByte(rest, 0) >= 0 {
			return netDest{}, false
		}
		return netDest{kind: destUnix, path: rest}, true
	}
	if strings.HasPrefix(v, "<outside") {
		return parseOutsideValue(v)
	}
	i := strings.LastIndexByte(v, ':')
	if i <= 0 {
		return netDest{}, false
	}
	p, err := strconv.ParseUint(v[i+1:], 10, 16)
	if err != nil || len(v)-i-1 > 5 {
		return netDest{}, false
	}
	d := netDest{port: uint16(p)}
	host := v[:i]
	switch {
	case host == NameserverHost:
		d.kind = destNameserver
	case strings.HasPrefix(host, "["):
		a, err := netip.ParseAddr(strings.TrimSuffix(host[1:], "]"))
		if err != nil || !strings.HasSuffix(host, "]") || !a.Is6() {
			return netDest{}, false
		}
		d.kind, d.addr = destAddr, a.Unmap().WithZone("")
	default:
		if a, err := netip.ParseAddr(host); err == nil {
			if !a.Is4() {
				return netDest{}, false
			}
			d.kind, d.addr = destAddr, a
			break
		}
		name, err := normalizeName(host, 0)
		if err != nil {
			return netDest{}, false
		}
		d.kind, d.name = destName, name
	}
	return d, true
}

// parseOutsideValue reads `<outside>`, `<outside:/usr/bin/tmux>`, each
// with an optional `:PORT` (OutsideValue writes them).
func parseOutsideValue(v string) (netDest, bool) {
	d := netDest{kind: destOutside}
	end := strings.LastIndexByte(v, '>')
	if end < 0 {
		return netDest{}, false
	}
	if rest := v[end+1:]; rest != "" {
		p, err := strconv.ParseUint(strings.TrimPrefix(rest, ":"), 10, 16)
		if err != nil || rest[0] != ':' || len(rest) > 6 {
			return netDest{}, false
		}
		d.port = uint16(p)
	}
	host := v[:end+1]
	if host == OutsideHost {
		return d, true
	}
	prog, ok := strings.CutPrefix(host, "<outside:")
	if !ok || len(prog) < 2 || prog[0] != '/' {
		return netDest{}, false
	}
	d.path = prog[:len(prog)-1]
	return d, true
}

// match reports whether the pattern matches the destination.
func (np *netPattern) match(d *netDest) bool {
	switch np.kind {
	case hostAny:
		// The services outside the sandbox are named only by
		// `<outside…>` rules: `*` stands for any host, not for who
		// serves it.
		return d.kind != destOutside && (np.port == 0 || d.kind != destUnix && d.port == np.port)
	case hostUnix:
		if d.kind != destUnix {
			return false
		}
		if name, ok := strings.CutPrefix(d.path, "@"); ok {
			if np.unixPath != nil {
				return np.unixPath.anyValue
			}
			return np.abstract.match(name)
		}
		return np.unixPath != nil && np.unixPath.match(d.path)
	case hostOutside:
		if d.kind != destOutside || np.port != 0 && d.port != np.port {
			return false
		}
		return np.served == nil || d.path != "" && np.served.match(d.path)
	}
	if d.kind == destUnix || d.kind == destOutside || np.port != 0 && d.port != np.port {
		return false
	}
	switch np.kind {
	case hostName:
		return d.kind == destName && d.name == np.name
	case hostNameSuffix:
		return d.kind == destName && len(d.name) > len(np.name) && strings.HasSuffix(d.name, np.name)
	case hostAddr, hostPrefix:
		return d.kind == destAddr && np.prefix.Contains(d.addr)
	case hostNameserver:
		return d.kind == destNameserver
	}
	return false
}

func (np *netPattern) matchValue(v string) bool {
	d, ok := parseNetValue(v)
	return ok && np.match(&d)
}

// namesHost reports whether the pattern names a host (or a socket, or
// the services outside the sandbox), rather than standing for every
// host: only such rules take part when several spellings of one
// connection are composed (see DecideNet). `unix:*` and `unix:**` stand
// for every Unix socket, as `*` does for every host.
func (np *netPattern) namesHost() bool {
	return np.kind != hostAny && !(np.kind == hostUnix && np.unixPath != nil && np.unixPath.anyValue)
}

// netRank is the first key of the specificity order: exact hosts, then
// partial ones (wildcard names, CIDR prefixes, socket path patterns),
// then any host.
func (np *netPattern) netRank() int {
	switch np.kind {
	case hostAny:
		return 0
	case hostNameSuffix, hostPrefix:
		return 1
	case hostUnix:
		if np.unixPath != nil && np.unixPath.exact || np.abstract != nil && np.abstract.mid == nil {
			return 2
		}
		return 1
	}
	return 2
}

// netMoreSpecific reports whether a beats b when both match: the host
// first (exact beats partial beats any; among partial ones, more labels
// after `*.`, a longer CIDR prefix, or the more specific socket path
// pattern), then a port beats any port. Kinds that never match the same
// value are ordered arbitrarily but consistently, so the order is a
// strict weak order for sorting.
func netMoreSpecific(a, b *netPattern) bool {
	if ra, rb := a.netRank(), b.netRank(); ra != rb {
		return ra > rb
	}
	if a.kind != b.kind {
		return a.kind > b.kind
	}
	switch a.kind {
	case hostNameSuffix:
		if a.labels != b.labels {
			return a.labels > b.labels
		}
	case hostPrefix:
		if a.prefix.Bits() != b.prefix.Bits() {
			return a.prefix.Bits() > b.prefix.Bits()
		}
	case hostOutside:
		if (a.served != nil) != (b.served != nil) {
			return a.served != nil
		}
		if a.served != nil && a.served.spec != b.served.spec {
			return a.served.spec.moreSpecific(b.served.spec)
		}
	case hostUnix:
		sa, sb := a.unixSpec(), b.unixSpec()
		if (a.abstract != nil) != (b.abstract != nil) {
			return a.abstract != nil
		}
		if sa != sb {
			return sa.moreSpecific(sb)
		}
	}
	return a.port != 0 && b.port == 0
}

func (np *netPattern) unixSpec() specificity {
	if np.abstract != nil {
		return np.absSpec
	}
	return np.unixPath.spec
}
