package authority

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/permwrap/permwrap/engine"
)

// Limits on a remote reviewer's answer, as on a judge program's.
const (
	maxRemoteResponse  = maxJudgeOutput // the body of a 200
	maxRemoteErrorBody = 256            // quoted from the body of any other status
	maxCAFile          = 1 << 20
)

// IdempotencyHeader carries the request id on every post to a remote
// reviewer, so a service can recognise a post it has seen (the one
// resend HTTP makes on a kept-alive connection the server had closed).
const IdempotencyHeader = "Idempotency-Key"

// HTTPAuthorizer posts each request it reviews to a remote reviewer
// ("authorizers": {"team-review": {"url": "https://…", …}}): the body is
// exactly the JSON an exec link reads on stdin (Request.MarshalJSON: the
// same fields, the same masking), and the answer must be a 200 with
// Content-Type application/json and the body an exec link would print,
// {"verdict": "allow"|"deny"|"defer", "reason": "…"}. Anything else — a
// connection or TLS failure, another status (redirects are not
// followed), another content type, a body over 64 KiB, not exactly one
// verdict object, no answer within Timeout — is an error, which the chain
// turns into defer. The reviewer cannot query the policy (exec links'
// query channel has no HTTP form).
type HTTPAuthorizer struct {
	Name    string
	Timeout time.Duration // ≤0: engine.DefaultRemoteAuthorizerTimeout

	url     string
	display string // scheme://host/path: what errors name
	headers []engine.RemoteHeader
	secrets []string // what redact hides from every message
	client  *http.Client
}

// NewHTTPAuthorizer builds the link a url authorizer names: its headers
// (already expanded), its TLS roots (the system's, and the PEM
// certificates of caFile), its timeout. An unreadable or empty caFile is
// an error at the caFile's position.
func NewHTTPAuthorizer(name string, s engine.AuthorizerSpec) (*HTTPAuthorizer, error) {
	r := s.Remote
	if r == nil {
		return nil, fmt.Errorf("authorizers.%s: no url", name)
	}
	if err := engine.CheckReviewerURL(r.URL); err != nil {
		return nil, posError(r.Pos, fmt.Sprintf("authorizer %q: %v", name, err))
	}
	u, _ := url.Parse(r.URL)
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if r.CAFile != "" {
		pem, err := readCAFile(r.CAFile)
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			err = pe.Err // the path is in the message already
		}
		if err != nil {
			return nil, posError(r.CAFilePos, fmt.Sprintf("authorizer %q: caFile %s: %v", name, r.CAFile, err))
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, posError(r.CAFilePos, fmt.Sprintf("authorizer %q: caFile %s holds no PEM certificate", name, r.CAFile))
		}
	}
	t := s.Timeout
	if t <= 0 {
		t = engine.DefaultRemoteAuthorizerTimeout
	}
	h := &HTTPAuthorizer{
		Name:    name,
		Timeout: t,
		url:     r.URL,
		display: r.Display(),
		headers: append([]engine.RemoteHeader(nil), r.Headers...),
	}
	h.secrets = secretsOf(r.Headers, u)

	dialer := &net.Dialer{KeepAlive: 30 * time.Second}
	dial := dialer.DialContext
	if u.Scheme == "http" {
		// Plain HTTP only ever to this machine: check the address the
		// connection reached, whatever "localhost" resolved to.
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			ap, perr := netip.ParseAddrPort(c.RemoteAddr().String())
			if perr != nil || !ap.Addr().Unmap().IsLoopback() {
				c.Close()
				return nil, fmt.Errorf("http:// reached %s, not a loopback address", c.RemoteAddr())
			}
			return c, nil
		}
	}
	h.client = &http.Client{
		Transport: &http.Transport{
			Proxy:             http.ProxyFromEnvironment,
			DialContext:       dial,
			TLSClientConfig:   &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			ForceAttemptHTTP2: true,
			MaxIdleConns:      4,
			IdleConnTimeout:   90 * time.Second,
		},
		// A redirect is an answer we do not take: the reviewer is the
		// URL configured, not wherever it points.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return h, nil
}

// Display is the reviewer's URL without its query: scheme://host/path.
func (h *HTTPAuthorizer) Display() string { return h.display }

// Review posts r and waits, at most Timeout (and no longer than ctx), for
// the verdict. q is not used: a remote reviewer cannot query the policy.
func (h *HTTPAuthorizer) Review(ctx context.Context, r Request, _ Querier) (Verdict, string, error) {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = engine.DefaultRemoteAuthorizerTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, err := json.Marshal(r)
	if err != nil {
		return 0, "", fmt.Errorf("encoding request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return 0, "", h.errorf("%v", unwrapURLError(err))
	}
	req.Header.Set("User-Agent", "permwrap") // a configured one replaces it
	for _, hd := range h.headers {
		req.Header.Set(hd.Name, hd.Value)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set(IdempotencyHeader, string(r.ID))

	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, "", h.errorf("no answer within %s", timeout)
		}
		return 0, "", h.errorf("%v", unwrapURLError(err))
	}
	defer resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		msg := fmt.Sprintf("status %s", resp.Status)
		if resp.StatusCode >= 300 && resp.StatusCode < 400 {
			msg += " (redirects are not followed: configure the URL it points to"
			if loc := resp.Header.Get("Location"); loc != "" {
				msg += ", " + engine.DisplayURL(loc)
			}
			msg += ")"
		} else if snippet := readSnippet(resp.Body); snippet != "" {
			msg += ": " + snippet
		}
		return 0, "", h.errorf("%s", msg)
	}
	ct := resp.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return 0, "", h.errorf("Content-Type %q, want application/json", elide(ct, 64))
	}
	if resp.ContentLength > maxRemoteResponse {
		return 0, "", h.errorf("response over %d bytes", maxRemoteResponse)
	}
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteResponse+1))
	if err != nil {
		if ctx.Err() != nil {
			return 0, "", h.errorf("no answer within %s", timeout)
		}
		return 0, "", h.errorf("reading the response: %v", err)
	}
	if len(out) > maxRemoteResponse {
		return 0, "", h.errorf("response over %d bytes", maxRemoteResponse)
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return 0, "", h.errorf("empty response")
	}
	v, reason, err := ParseJudgeOutput(out)
	if err != nil {
		return 0, "", h.errorf("response: %v", strings.TrimPrefix(err.Error(), "judge "))
	}
	return v, h.redact(reason), nil
}

// errorf is an error naming the reviewer and its URL, with every header
// value (and the URL's query) hidden, whatever a server echoed.
func (h *HTTPAuthorizer) errorf(format string, a ...any) error {
	return errors.New(h.redact(fmt.Sprintf("reviewer %s (%s): ", h.Name, h.display) + fmt.Sprintf(format, a...)))
}

// redact replaces every secret in s with "***".
func (h *HTTPAuthorizer) redact(s string) string {
	for _, sec := range h.secrets {
		s = strings.ReplaceAll(s, sec, "***")
	}
	return s
}

// secretsOf are the strings no message may show: each header value of 4
// bytes or more (a shorter one, "1", would hide every such character of a
// message and no secret), and each word of it of 8 bytes or more (the
// token of "Bearer TOKEN"); the URL's query, and each of its values of 8
// bytes or more. Longest first, so a value is hidden whole before its
// words are.
func secretsOf(headers []engine.RemoteHeader, u *url.URL) []string {
	var out []string
	add := func(s string, whole bool) {
		if whole && len(s) >= 4 {
			out = append(out, s)
		}
		for _, w := range strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == ',' || r == ';' }) {
			if len(w) >= 8 {
				out = append(out, w)
			}
		}
	}
	for _, hd := range headers {
		add(hd.Value, true)
	}
	if u != nil && u.RawQuery != "" {
		add(u.RawQuery, true)
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v, false)
			}
		}
	}
	// Longest first.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && len(out[j]) > len(out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// unwrapURLError drops the *url.Error wrapping ("Post \"URL\": …"),
// whose URL may carry a query the configuration keeps to itself.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// readSnippet is the start of an error response's body, printable and
// on one line, for the note: what a service says went wrong.
func readSnippet(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, maxRemoteErrorBody))
	s := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, string(b))
	s = strings.TrimSpace(s)
	if len(b) == maxRemoteErrorBody {
		s += "…"
	}
	return s
}

// readCAFile reads a PEM file of at most 1 MiB that is a regular file (a
// FIFO or a device would block or never end).
func readCAFile(path string) ([]byte, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCAFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxCAFile {
		return nil, fmt.Errorf("over %d bytes", maxCAFile)
	}
	return b, nil
}

// posError is a *engine.ConfigError at pos: file:line:col: msg.
func posError(pos engine.Position, msg string) error {
	return &engine.ConfigError{Pos: pos, Msg: msg}
}
