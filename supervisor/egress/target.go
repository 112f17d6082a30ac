package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/permwrap/permwrap/engine"
)

// target is where a proxy request wants to go.
type target struct {
	host string     // a normalized DNS name; "" when addr is set
	addr netip.Addr // an address literal
	port uint16
}

func (t target) String() string {
	if t.host != "" {
		return t.host + ":" + strconv.Itoa(int(t.port))
	}
	return netip.AddrPortFrom(t.addr, t.port).String()
}

// errBadTarget is a request the proxy cannot forward (answered 400).
var errBadTarget = errors.New("bad target")

func badTarget(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadTarget, fmt.Sprintf(format, args...))
}

// parseAuthority reads a CONNECT request's authority-form target,
// `host:port` or `[v6]:port`: the port is required (RFC 9110 §9.3.6).
func parseAuthority(s string) (target, error) {
	if s == "" {
		return target{}, badTarget("empty CONNECT target")
	}
	host, portStr, ok := splitHostPort(s)
	if !ok {
		return target{}, badTarget("CONNECT target %q: want host:port", s)
	}
	if portStr == "" {
		return target{}, badTarget("CONNECT target %q has no port", s)
	}
	return makeTarget(host, portStr, s)
}

// parseAbsoluteURL reads the absolute-form target of a plain-HTTP proxy
// request. Only http is forwarded: an https URL would need the proxy to
// make the TLS connection (and see the plaintext), which it does not do.
func parseAbsoluteURL(u *url.URL) (target, error) {
	switch strings.ToLower(u.Scheme) {
	case "http":
	case "":
		return target{}, badTarget("this is permwrap's egress proxy: send absolute http:// URLs or CONNECT")
	case "https":
		return target{}, badTarget("https:// URLs go through CONNECT (the proxy does not open TLS for you)")
	default:
		return target{}, badTarget("scheme %q is not proxied (http:// and CONNECT only)", u.Scheme)
	}
	if u.User != nil {
		return target{}, badTarget("URLs with user info are not forwarded")
	}
	if u.Host == "" {
		return target{}, badTarget("URL %q names no host", u.Redacted())
	}
	host, portStr, ok := splitHostPort(u.Host)
	if !ok {
		return target{}, badTarget("URL host %q: want host[:port]", u.Host)
	}
	if portStr == "" {
		portStr = "80"
	}
	return makeTarget(host, portStr, u.Host)
}

// splitHostPort splits `host`, `host:port`, `[v6]` and `[v6]:port`.
func splitHostPort(s string) (host, port string, ok bool) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", false
		}
		host, rest := s[1:end], s[end+1:]
		switch {
		case rest == "":
			return host, "", true
		case rest[0] == ':':
			return host, rest[1:], rest != ":"
		}
		return "", "", false
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", true
	case 1:
		i := strings.IndexByte(s, ':')
		return s[:i], s[i+1:], i+1 < len(s)
	}
	return "", "", false // a bare IPv6 address needs brackets here
}

func makeTarget(host, portStr, raw string) (target, error) {
	if len(portStr) > 5 || portStr == "" {
		return target{}, badTarget("%q: bad port", raw)
	}
	for i := 0; i < len(portStr); i++ {
		if portStr[i] < '0' || portStr[i] > '9' {
			return target{}, badTarget("%q: bad port", raw)
		}
	}
	p, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || p == 0 {
		return target{}, badTarget("%q: port must be 1 to 65535", raw)
	}
	t := target{port: uint16(p)}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return target{}, badTarget("%q: zoned addresses are not forwarded", raw)
		}
		t.addr = a
		return t, nil
	}
	name, err := engine.NormalizeHostName(host)
	if err != nil {
		return target{}, badTarget("%q: %v", raw, err)
	}
	t.host = name
	return t, nil
}
