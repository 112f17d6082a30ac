package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/tailscale/hujson"
	"golang.org/x/net/http/httpguts"
)

// Limits of a remote reviewer ("url" authorizers, docs/authorizers.md).
const (
	// DefaultRemoteAuthorizerTimeout is a url authorizer's timeoutMs when
	// it gives none: long enough for a person to answer in a chat tool.
	DefaultRemoteAuthorizerTimeout = 5 * time.Minute
	// MaxRemoteAuthorizerTimeout bounds a url authorizer's timeoutMs:
	// the asking process waits that long, blocked in its system call.
	MaxRemoteAuthorizerTimeout = time.Hour
)

// RemoteSpec is the part of an AuthorizerSpec that says where a remote
// reviewer is: the "url", "headers" and "caFile" keys.
type RemoteSpec struct {
	URL string // as written: https://, or http:// to a loopback address
	// Headers are sent with every request, in the order written, their
	// ${env:NAME} references expanded when the file was read. Their
	// values are secrets: nothing prints them (RemoteHeader.String).
	Headers []RemoteHeader
	// CAFile is an extra PEM file of root certificates (~ and ${HOME}
	// expanded), read when the link is built; "" for the system's alone.
	CAFile    string
	CAFilePos Position
	Pos       Position // where the "url" is, for errors found later
}

// RemoteHeader is one header a remote reviewer is sent.
type RemoteHeader struct {
	Name  string
	Value string // expanded; a secret
}

// String shows the header without its value: a header is how a reviewer
// service tells permwrap from anyone else, so its value is never printed
// (this is also what %v and %+v print for it).
func (h RemoteHeader) String() string { return h.Name + ": (hidden)" }

// GoString is String, for %#v.
func (h RemoteHeader) GoString() string { return h.String() }

// Display is the reviewer's URL as `permwrap check` and the review log
// show it: scheme, host and path, never a query (which may carry a key).
func (r *RemoteSpec) Display() string {
	return DisplayURL(r.URL)
}

// DisplayURL is scheme://host/path of raw, without user information,
// query or fragment; "(invalid url)" when raw does not parse.
func DisplayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(invalid url)"
	}
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

// HeaderNames are the names of the headers, for display.
func (r *RemoteSpec) HeaderNames() []string {
	var out []string
	for _, h := range r.Headers {
		out = append(out, h.Name)
	}
	return out
}

func (r *RemoteSpec) clone() *RemoteSpec {
	if r == nil {
		return nil
	}
	c := *r
	c.Headers = append([]RemoteHeader(nil), r.Headers...)
	return &c
}

// CheckReviewerURL says what is wrong with a remote reviewer's URL, or
// nil: it must be https:// with a host, or http:// to a loopback address
// (a relay on this machine, a test), and carry no user or password. Its
// messages never quote the URL's query or user information.
func CheckReviewerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL, which may carry a key
		}
		return fmt.Errorf("url: not a URL (%v)", err)
	}
	if u.User != nil {
		return fmt.Errorf("url: a user or password in the URL would be shown and logged; send credentials in \"headers\" (\"Authorization\": \"Bearer ${env:NAME}\")")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("url %s: a #fragment is never sent; remove it", DisplayURL(raw))
	}
	switch u.Scheme {
	case "https":
		if u.Hostname() == "" {
			return fmt.Errorf("url: no host")
		}
	case "http":
		if !loopbackHost(u.Hostname()) {
			return fmt.Errorf("url %s: http:// is allowed only to a loopback address (127.0.0.1, ::1, localhost), for a relay on this machine; use https://", DisplayURL(raw))
		}
	default:
		return fmt.Errorf("url: want https://HOST/PATH (or http:// to a loopback address), got scheme %q", u.Scheme)
	}
	return nil
}

// loopbackHost reports whether host is "localhost" or a loopback address.
// (The link checks again, when it connects, that the address it reached
// is a loopback one.)
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// reservedHeaders are set by permwrap (or by HTTP itself) on every
// request; a configuration may not set them.
var reservedHeaders = []string{
	"Host", "Content-Type", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive",
	"Proxy-Connection", "Te", "Trailer", "Upgrade", "Idempotency-Key", "Accept", "Accept-Encoding",
}

// remoteURL reads an authorizer's "url".
func (p *parser) remoteURL(v *hujson.Value, name string, r *RemoteSpec) {
	s, ok := p.str(v, "url")
	if !ok {
		return
	}
	if err := CheckReviewerURL(s); err != nil {
		p.errorf(v.StartOffset, "authorizer %q: %v", name, err)
		return
	}
	r.URL, r.Pos = s, p.pos(v.StartOffset)
}

// remoteHeaders reads an authorizer's "headers": an object of string
// values, ${env:NAME} expanded from permwrap's own environment.
func (p *parser) remoteHeaders(v *hujson.Value, name string, r *RemoteSpec) {
	obj, ok := p.object(v, "headers")
	if !ok {
		return
	}
	seen := map[string]bool{}
	for _, m := range p.members(obj) {
		h := m.Name.Value.(hujson.Literal).String()
		switch canon := strings.ToLower(h); {
		case !httpguts.ValidHeaderFieldName(h):
			p.errorf(m.Name.StartOffset, "authorizer %q: %q is not a header name", name, h)
			continue
		case seen[canon]:
			p.errorf(m.Name.StartOffset, "authorizer %q: header %q is given twice", name, h)
			continue
		case isReservedHeader(h):
			p.errorf(m.Name.StartOffset, "authorizer %q: header %q is set by permwrap; it cannot be configured", name, h)
			continue
		default:
			seen[canon] = true
		}
		tmpl, ok := p.str(&m.Value, "header "+h)
		if !ok {
			continue
		}
		val, err := ExpandHeaderValue(tmpl, os.LookupEnv)
		if err != nil {
			p.errorf(m.Value.StartOffset, "authorizer %q: header %q: %v", name, h, err)
			continue
		}
		r.Headers = append(r.Headers, RemoteHeader{Name: h, Value: val})
	}
}

func isReservedHeader(h string) bool {
	for _, r := range reservedHeaders {
		if strings.EqualFold(h, r) {
			return true
		}
	}
	return false
}

// remoteCAFile reads an authorizer's "caFile": an absolute path (~ and
// ${HOME} allowed). The file is read when the link is built.
func (p *parser) remoteCAFile(v *hujson.Value, name string, r *RemoteSpec) {
	s, ok := p.str(v, "caFile")
	if !ok {
		return
	}
	exp, err := expandPattern(s, p.env)
	switch {
	case err != nil:
		p.errorf(v.StartOffset, "authorizer %q: caFile %q: %v", name, s, err)
	case !strings.HasPrefix(exp, "/"):
		p.errorf(v.StartOffset, "authorizer %q: caFile %q must be absolute (~ and ${HOME} are allowed)", name, s)
	default:
		r.CAFile, r.CAFilePos = path.Clean(exp), p.pos(v.StartOffset)
	}
}

// ExpandHeaderValue expands each ${env:NAME} in a header value as
// written with NAME's value in lookup (permwrap's own environment). A
// variable that is not set, or is empty, is an error naming it — never an
// empty header — and so is any other ${…}. The result must be a valid
// header value (no line breaks); the error then says so without quoting
// the value.
func ExpandHeaderValue(tmpl string, lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	rest := tmpl
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated ${ (write ${env:NAME} for an environment variable)")
		}
		ref := rest[i+2 : i+j]
		name, ok := strings.CutPrefix(ref, "env:")
		if !ok {
			return "", fmt.Errorf("unknown variable ${%s} (a header value can name an environment variable as ${env:NAME})", elideName(ref))
		}
		if !validEnvName(name) {
			return "", fmt.Errorf("${env:%s}: not a variable name (letters, digits and _, not starting with a digit)", elideName(name))
		}
		val, set := lookup(name)
		switch {
		case !set:
			return "", fmt.Errorf("${env:%s} is not set in permwrap's environment", name)
		case val == "":
			return "", fmt.Errorf("${env:%s} is empty in permwrap's environment", name)
		}
		b.WriteString(val)
		rest = rest[i+j+1:]
	}
	out := b.String()
	if !httpguts.ValidHeaderFieldValue(out) {
		return "", fmt.Errorf("the value (after expansion) holds a line break or another control character, which a header cannot carry")
	}
	if strings.TrimSpace(out) == "" {
		return "", fmt.Errorf("the value is empty")
	}
	return out, nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func elideName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// remoteKey reads one of a url authorizer's keys.
func (p *parser) remoteKey(k string, v *hujson.Value, name string, r *RemoteSpec) {
	switch k {
	case "url":
		p.remoteURL(v, name, r)
	case "headers":
		p.remoteHeaders(v, name, r)
	case "caFile":
		p.remoteCAFile(v, name, r)
	}
}

// remoteOrCommand finishes an authorizer: exactly one of "command" or
// "url"; "headers" and "caFile" only with a url; a url's timeout
// defaulted and bounded.
func (p *parser) remoteOrCommand(v *hujson.Value, name string, hasCmd bool, remoteKeys []hujson.ObjectMember, timeout *hujson.Value, r *RemoteSpec, spec *AuthorizerSpec) {
	hasURL := false
	for _, m := range remoteKeys {
		hasURL = hasURL || m.Name.Value.(hujson.Literal).String() == "url"
	}
	switch {
	case hasCmd && hasURL:
		p.errorf(v.StartOffset, "authorizer %q has both \"command\" and \"url\": give exactly one (a program to run, or an endpoint to post the ask to)", name)
		return
	case !hasCmd && !hasURL:
		if len(remoteKeys) > 0 {
			p.errorf(v.StartOffset, "authorizer %q has no \"url\" (headers and caFile belong to a url authorizer)", name)
		} else {
			p.errorf(v.StartOffset, "authorizer %q has no \"command\" (or \"url\")", name)
		}
		return
	case hasCmd:
		for _, m := range remoteKeys {
			p.errorf(m.Name.StartOffset, "authorizer %q: %q belongs to a url authorizer, not a command", name, m.Name.Value.(hujson.Literal).String())
		}
		return
	}
	switch {
	case timeout == nil:
		spec.Timeout = DefaultRemoteAuthorizerTimeout
	case spec.Timeout > MaxRemoteAuthorizerTimeout:
		p.errorf(timeout.StartOffset, "authorizer %q: timeoutMs: a url authorizer waits at most %d (one hour)", name, MaxRemoteAuthorizerTimeout.Milliseconds())
	}
	if r.URL != "" {
		spec.Remote = r
	}
}
