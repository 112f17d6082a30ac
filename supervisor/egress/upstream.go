package egress

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// Upstream is the proxy the user's own environment named (a corporate
// proxy, the only way out of many networks): the egress proxy judges
// each request by name as always, then reaches the destination through
// it rather than directly. The command itself only ever sees permwrap's
// proxy, so it cannot route around the judgement.
type Upstream struct {
	cfg   httpproxy.Config
	proxy func(*url.URL) (*url.URL, error)
}

// UpstreamFromEnv reads HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY
// (either case; the lower-case form wins, as curl reads it) from env. It
// returns nil when none names a proxy. Only http:// proxies can be
// chained (https:// and socks proxies are refused with an error, and the
// destination is then reached directly).
func UpstreamFromEnv(env []string) (*Upstream, error) {
	get := func(name string) string {
		var upper, lower string
		for _, kv := range env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			switch k {
			case strings.ToUpper(name):
				upper = v
			case strings.ToLower(name):
				lower = v
			}
		}
		if lower != "" {
			return lower
		}
		return upper
	}
	cfg := httpproxy.Config{
		HTTPSProxy: get("https_proxy"),
		HTTPProxy:  get("http_proxy"),
		NoProxy:    get("no_proxy"),
	}
	if all := get("all_proxy"); all != "" {
		if cfg.HTTPSProxy == "" {
			cfg.HTTPSProxy = all
		}
		if cfg.HTTPProxy == "" {
			cfg.HTTPProxy = all
		}
	}
	var bad []string
	for _, p := range []*string{&cfg.HTTPSProxy, &cfg.HTTPProxy} {
		if *p == "" {
			continue
		}
		u, err := parseUpstreamURL(*p)
		if err != nil {
			bad = append(bad, err.Error())
			*p = ""
			continue
		}
		*p = u.String()
	}
	var err error
	if len(bad) > 0 {
		err = errors.New(strings.Join(bad, "; "))
	}
	if cfg.HTTPSProxy == "" && cfg.HTTPProxy == "" {
		return nil, err
	}
	return &Upstream{cfg: cfg, proxy: cfg.ProxyFunc()}, err
}

// parseUpstreamURL accepts what curl accepts for an http proxy: a URL
// with the http scheme, or host:port alone.
func parseUpstreamURL(s string) (*url.URL, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("proxy %q is not a URL", redact(s))
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("proxy %s: only http:// proxies can be chained", u.Redacted())
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "1080")
	}
	return u, nil
}

func redact(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(unparseable)"
}

// For returns the upstream proxy for t (nil: go directly): tunnels as
// https, plain HTTP as http, NO_PROXY honoured.
func (u *Upstream) For(t target, tunnel bool) *url.URL {
	if u == nil {
		return nil
	}
	scheme := "http"
	if tunnel {
		scheme = "https"
	}
	pu, err := u.proxy(&url.URL{Scheme: scheme, Host: t.String()})
	if err != nil {
		return nil
	}
	return pu
}

// String names the upstream proxies for messages, without credentials.
func (u *Upstream) String() string {
	var parts []string
	for _, p := range []string{u.cfg.HTTPSProxy, u.cfg.HTTPProxy} {
		if p != "" {
			parts = append(parts, redact(p))
		}
	}
	return strings.Join(parts, ", ")
}

// proxyAuth is the Proxy-Authorization value for pu's user info, or "".
func proxyAuth(pu *url.URL) string {
	if pu.User == nil {
		return ""
	}
	pass, _ := pu.User.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(pu.User.Username()+":"+pass))
}

// dialUpstream opens a tunnel to t through the upstream proxy pu.
func dialUpstream(ctx context.Context, pu *url.URL, t target, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", pu.Host)
	if err != nil {
		return nil, fmt.Errorf("upstream proxy %s: %v", pu.Redacted(), err)
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	_ = c.SetDeadline(time.Now().Add(timeout))
	req := "CONNECT " + t.String() + " HTTP/1.1\r\nHost: " + t.String() + "\r\n"
	if a := proxyAuth(pu); a != "" {
		req += "Proxy-Authorization: " + a + "\r\n"
	}
	if _, err := c.Write([]byte(req + "\r\n")); err != nil {
		c.Close()
		return nil, fmt.Errorf("upstream proxy %s: %v", pu.Redacted(), err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("upstream proxy %s: %v", pu.Redacted(), err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		c.Close()
		return nil, fmt.Errorf("upstream proxy %s answered %s", pu.Redacted(), resp.Status)
	}
	_ = c.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

// bufferedConn is a connection whose first bytes were read into r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// CloseWrite passes a half-close on.
func (b *bufferedConn) CloseWrite() error {
	if cw, ok := b.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return b.Conn.Close()
}
