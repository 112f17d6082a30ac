package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/permwrap/permwrap/engine"
)

// Resolver looks names up (*net.Resolver satisfies it; tests map names
// to loopback addresses).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures a Proxy. Judge is required; the rest has defaults.
type Config struct {
	Judge    Judge
	Peers    Peers     // nil: ProcPeers over this process and its descendants (the tree, when the supervisor runs the proxy)
	Resolver Resolver  // nil: net.DefaultResolver
	Cache    *DNSCache // nil: a new cache with the defaults
	// Upstream, when set, is the user's own proxy: allowed destinations
	// are reached through it (UpstreamFromEnv).
	Upstream *Upstream
	// ErrorLog receives the proxy's own troubles (a failed accept, a
	// client that could not be named), never the tree's terminal. nil
	// discards them.
	ErrorLog io.Writer
	Limits   Limits
	// Service says who serves a destination on this machine (a server
	// the tree started, or a service outside the sandbox), so the proxy
	// judges it as a direct connection would be judged; nil, or a nil
	// answer: not on this machine, or nothing listens.
	Service func(netip.AddrPort) *engine.NetService
}

// Limits bound what one client can make the proxy hold. Zero fields take
// the defaults below.
type Limits struct {
	MaxConns      int           // client connections served at once (more wait in accept)
	MaxHeaderSize int           // request line and headers, bytes
	HeaderTimeout time.Duration // to read a request's head
	IdleTimeout   time.Duration // a kept-alive client connection between requests
	ResolveTime   time.Duration // one name lookup
	DialTimeout   time.Duration // one connection to a destination
	TunnelIdle    time.Duration // a CONNECT tunnel with no traffic either way
}

// Default limits.
const (
	DefaultMaxConns      = 512
	DefaultMaxHeaderSize = 32 << 10
	DefaultHeaderTimeout = 30 * time.Second
	DefaultIdleTimeout   = 2 * time.Minute
	DefaultResolveTime   = 15 * time.Second
	DefaultDialTimeout   = 30 * time.Second
	DefaultTunnelIdle    = 30 * time.Minute
)

func (l Limits) withDefaults() Limits {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxHeaderSize <= 0 {
		l.MaxHeaderSize = DefaultMaxHeaderSize
	}
	def(&l.HeaderTimeout, DefaultHeaderTimeout)
	def(&l.IdleTimeout, DefaultIdleTimeout)
	def(&l.ResolveTime, DefaultResolveTime)
	def(&l.DialTimeout, DefaultDialTimeout)
	def(&l.TunnelIdle, DefaultTunnelIdle)
	return l
}

// Proxy is a running egress proxy.
type Proxy struct {
	cfg    Config
	lim    Limits
	ln     net.Listener
	srv    *http.Server
	fwd    *httputil.ReverseProxy
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	tunnels map[net.Conn]struct{} // hijacked client connections, closed by Close
	closed  bool
	wg      sync.WaitGroup
}

// Start listens on a free loopback port and serves until Close.
func Start(cfg Config) (*Proxy, error) {
	if cfg.Judge == nil {
		return nil, errors.New("egress: no judge")
	}
	if cfg.Peers == nil {
		cfg.Peers = &ProcPeers{Root: os.Getpid()}
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Cache == nil {
		cfg.Cache = NewDNSCache(0, 0)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress: listening on loopback: %w", err)
	}
	p := &Proxy{cfg: cfg, lim: cfg.Limits.withDefaults(), tunnels: map[net.Conn]struct{}{}, done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.ln = &limitListener{Listener: ln, sem: make(chan struct{}, p.lim.MaxConns), done: make(chan struct{})}
	p.fwd = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Absolute-form in, origin-form out (Transport writes the
			// request line from URL.Path); hop-by-hop and Proxy-*
			// headers are already gone. No X-Forwarded-*: the origin
			// learns nothing about the machine.
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.Host
		},
		Transport: &http.Transport{
			// Only through the user's own proxy, when it applies to the
			// judged destination; the dial below checks it is that one.
			Proxy:                  upstreamOf,
			DialContext:            p.dialJudged,
			DisableKeepAlives:      true, // each request dials what it was judged for
			MaxResponseHeaderBytes: 1 << 20,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) { p.refuseDial(w, err) },
		ErrorLog:     newServerLog(cfg.ErrorLog),
	}
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout: p.lim.HeaderTimeout,
		IdleTimeout:       p.lim.IdleTimeout,
		MaxHeaderBytes:    p.lim.MaxHeaderSize,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, &peerOnce{conn: c})
		},
		ErrorLog: newServerLog(cfg.ErrorLog),
	}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(p.ln)
	}()
	return p, nil
}

// Addr is where the proxy listens.
func (p *Proxy) Addr() netip.AddrPort {
	return p.ln.Addr().(*net.TCPAddr).AddrPort()
}

// URL is the proxy's address as the proxy variables spell it.
func (p *Proxy) URL() string { return "http://" + p.Addr().String() }

// Cache is the DNS cache of names the proxy resolved.
func (p *Proxy) Cache() *DNSCache { return p.cfg.Cache }

// Close stops accepting, ends every request and tunnel, and waits for
// them.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	p.cancel()
	err := p.srv.Close()
	<-p.done
	p.wg.Wait()
	return err
}

// serveHTTP handles one request: a CONNECT, or an absolute-form request.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	var (
		t   target
		err error
	)
	if r.Method == http.MethodConnect {
		w = &connectWriter{w}
		t, err = parseAuthority(r.RequestURI)
	} else {
		t, err = parseAbsoluteURL(r.URL)
	}
	if err != nil {
		p.refuse(w, http.StatusBadRequest, "http_request_error", "permwrap proxy: "+sanitizeLine(err.Error()))
		return
	}
	pid, err := peerOf(r.Context(), p.cfg.Peers)
	if err != nil {
		p.logf("egress: %v → %s: %v", r.RemoteAddr, t, err)
		p.refuse(w, http.StatusForbidden, "http_request_denied", "permwrap proxy: "+sanitizeLine(err.Error()))
		return
	}
	if t.host == "" && netip.AddrPortFrom(t.addr.Unmap(), t.port) == p.Addr() {
		p.refuse(w, http.StatusForbidden, "http_request_denied", "permwrap proxy: a request to the proxy itself")
		return
	}
	ctx, cancel := mergeCancel(r.Context(), p.ctx)
	defer cancel()
	dest, reason, status := p.authorize(ctx, t, pid, r.Method == http.MethodConnect)
	if dest == nil {
		errType := "http_request_denied"
		if status == http.StatusBadGateway {
			errType = "dns_error"
		}
		p.refuse(w, status, errType, "permwrap: "+sanitizeLine(reason))
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(ctx, w, dest)
		return
	}
	p.fwd.ServeHTTP(w, r.WithContext(context.WithValue(ctx, destKey{}, dest)))
}

// judged is a destination the judge allowed: its target and, in order,
// the addresses to try, each still to be judged just before it is dialled
// (see authorize).
type judged struct {
	p      *Proxy
	t      target
	pid    int
	intent engine.NetIntent // the intent the name was allowed on
	addrs  []netip.Addr
	// upstream is the user's proxy the destination is reached through
	// (nil: directly).
	upstream *url.URL
}

// upstreamOf is the forwarding transport's Proxy: the judged
// destination's upstream, if any.
func upstreamOf(r *http.Request) (*url.URL, error) {
	if j, ok := r.Context().Value(destKey{}).(*judged); ok && j.upstream != nil {
		return j.upstream, nil
	}
	return nil, nil
}

// authorize judges t for pid. For a name: the name first, before any
// lookup (resolving a name the agent chose is itself a way to send data
// out); then the name is resolved and recorded in the cache. It returns
// nil with a reason and a status when the connection may not be made.
func (p *Proxy) authorize(ctx context.Context, t target, pid int, tunnel bool) (*judged, string, int) {
	in := engine.NetIntent{Proto: engine.ProtoTCP, Host: t.host, Addr: t.addr, Port: t.port, PID: pid}
	if t.host == "" {
		// An address: the names permwrap resolved to it speak for it, as
		// for a direct connection.
		in.Names = p.cfg.Cache.Names(t.addr)
		in.Service = p.service(t.addr, t.port)
	}
	if isLocalhost(t.host) {
		// RFC 6761: a localhost name is loopback, resolved without asking
		// anyone (so nothing leaks by resolving it first): judged as the
		// loopback destination, with who serves it.
		return p.authorizeLocalhost(ctx, t, in, tunnel)
	}
	if v := p.cfg.Judge.Decide(ctx, in); !v.Allow {
		return nil, v.Reason, http.StatusForbidden
	}
	j := &judged{p: p, t: t, pid: pid, intent: in, upstream: p.cfg.Upstream.For(t, tunnel)}
	if t.host == "" {
		j.addrs = []netip.Addr{t.addr}
		return j, "", 0
	}
	rctx, cancel := context.WithTimeout(ctx, p.lim.ResolveTime)
	defer cancel()
	addrs, err := p.cfg.Resolver.LookupNetIP(rctx, "ip", t.host)
	if err != nil || len(addrs) == 0 {
		if j.upstream != nil {
			// The user's proxy resolves it (an internal resolver may not
			// know outside names): judged by its name alone.
			return j, "", 0
		}
		if err == nil {
			err = errors.New("no addresses")
		}
		return nil, fmt.Sprintf("cannot resolve %s: %v", t.host, err), http.StatusBadGateway
	}
	p.cfg.Cache.Add(t.host, addrs)
	j.addrs = addrs
	return j, "", 0
}

// isLocalhost reports whether name is `localhost` or below it.
func isLocalhost(name string) bool {
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}

// authorizeLocalhost judges a localhost name on its loopback addresses,
// IPv4 first, each with who serves it (admit judges the second).
func (p *Proxy) authorizeLocalhost(ctx context.Context, t target, in engine.NetIntent, tunnel bool) (*judged, string, int) {
	addrs := []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()}
	in.Addr = addrs[0]
	in.Service = p.service(in.Addr, t.port)
	if v := p.cfg.Judge.Decide(ctx, in); !v.Allow {
		return nil, v.Reason, http.StatusForbidden
	}
	return &judged{p: p, t: t, pid: in.PID, intent: in, addrs: addrs, upstream: p.cfg.Upstream.For(t, tunnel)}, "", 0
}

// service is who serves a on port on this machine (Config.Service).
func (p *Proxy) service(a netip.Addr, port uint16) *engine.NetService {
	if p.cfg.Service == nil || !a.IsValid() {
		return nil
	}
	return p.cfg.Service(netip.AddrPortFrom(a, port))
}

// admit judges one resolved address of an allowed name just before it is
// dialled. The name's own answer stands unless the address makes it
// stricter (a rule naming the address or a prefix holding it); then the
// judge decides on both spellings — a deny (logged), or an ask.
func (j *judged) admit(ctx context.Context, a netip.Addr) (bool, string) {
	if j.t.host == "" || a == j.intent.Addr {
		return true, "" // the address itself was judged (a localhost name's first)
	}
	full := j.intent
	full.Addr = a
	full.Service = j.p.service(a, j.t.port)
	before := j.p.cfg.Judge.Evaluate(j.intent).Result.Action
	if j.p.cfg.Judge.Evaluate(full).Result.Action <= before {
		return true, ""
	}
	v := j.p.cfg.Judge.Decide(ctx, full)
	return v.Allow, v.Reason
}

// dial connects to the first admitted address that answers, or through
// the upstream proxy (tunnel: with CONNECT; otherwise to the upstream
// itself, which the forwarding transport then speaks HTTP to).
func (j *judged) dial(ctx context.Context, tunnel bool) (net.Conn, error) {
	e := &dialError{target: j.t}
	if j.upstream != nil {
		return j.dialUpstream(ctx, tunnel, e)
	}
	d := net.Dialer{Timeout: j.p.lim.DialTimeout}
	for _, a := range j.addrs {
		if netip.AddrPortFrom(a.Unmap(), j.t.port) == j.p.Addr() {
			e.refused = append(e.refused, "permwrap proxy: "+j.t.String()+" is the proxy itself")
			continue
		}
		if ok, reason := j.admit(ctx, a); !ok {
			e.refused = append(e.refused, reason)
			continue
		}
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, j.t.port).String())
		if err == nil {
			return c, nil
		}
		e.failed = append(e.failed, err.Error())
		if ctx.Err() != nil {
			break
		}
	}
	return nil, e
}

// dialUpstream reaches the destination through the user's proxy, which
// picks the address: every address permwrap resolved the name to must
// be admitted (the upstream might use any of them).
func (j *judged) dialUpstream(ctx context.Context, tunnel bool, e *dialError) (net.Conn, error) {
	for _, a := range j.addrs {
		if ok, reason := j.admit(ctx, a); !ok {
			e.refused = append(e.refused, reason)
			return nil, e
		}
	}
	var c net.Conn
	var err error
	if tunnel {
		c, err = dialUpstream(ctx, j.upstream, j.t, j.p.lim.DialTimeout)
	} else {
		d := net.Dialer{Timeout: j.p.lim.DialTimeout}
		c, err = d.DialContext(ctx, "tcp", j.upstream.Host)
	}
	if err != nil {
		e.failed = append(e.failed, err.Error())
		return nil, e
	}
	return c, nil
}

// dialError says why no address of a destination was connected to:
// refused by the policy, or unreachable.
type dialError struct {
	target  target
	refused []string
	failed  []string
}

func (e *dialError) Error() string {
	all := append(append([]string(nil), e.refused...), e.failed...)
	if len(all) == 0 {
		all = []string{"no address"}
	}
	return "connecting to " + e.target.String() + ": " + strings.Join(all, "; ")
}

// refuseDial answers a failed dial: 403 when the policy refused every
// address, 502 when some could not be reached.
func (p *Proxy) refuseDial(w http.ResponseWriter, err error) {
	var de *dialError
	if errors.As(err, &de) && len(de.failed) == 0 && len(de.refused) > 0 {
		p.refuse(w, http.StatusForbidden, "http_request_denied", "permwrap: "+sanitizeLine(strings.Join(de.refused, "; ")))
		return
	}
	p.refuse(w, http.StatusBadGateway, "destination_unavailable", "permwrap proxy: "+sanitizeLine(err.Error()))
}

type destKey struct{}

// dialJudged is the forwarding transport's dial: only the destination
// the request was judged for, through its admitted addresses.
func (p *Proxy) dialJudged(ctx context.Context, network, addr string) (net.Conn, error) {
	j, ok := ctx.Value(destKey{}).(*judged)
	if !ok {
		return nil, errors.New("internal: a dial without a judged destination")
	}
	if j.upstream != nil {
		if addr != j.upstream.Host {
			return nil, fmt.Errorf("internal: dial of %s, judged %s through %s", addr, j.t, j.upstream.Redacted())
		}
		return j.dial(ctx, false)
	}
	if want := j.t.String(); addr != want && !sameAuthority(addr, j.t) {
		return nil, fmt.Errorf("internal: dial of %s, judged %s", addr, want)
	}
	return j.dial(ctx, false)
}

// sameAuthority tells whether the transport's dial address names t
// (it writes names as given and v6 addresses in brackets).
func sameAuthority(addr string, t target) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != strconv.Itoa(int(t.port)) {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return t.host == "" && a == t.addr
	}
	n, err := engine.NormalizeHostName(host)
	return err == nil && n == t.host
}

// tunnel answers a CONNECT: dial, 200, then copy both ways untouched.
func (p *Proxy) tunnel(ctx context.Context, w http.ResponseWriter, j *judged) {
	up, err := j.dial(ctx, true)
	if err != nil {
		p.refuseDial(w, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		p.refuse(w, http.StatusInternalServerError, "proxy_internal_error", "permwrap proxy: cannot take over the connection")
		return
	}
	client, brw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.track(client) {
		client.Close()
		up.Close()
		return
	}
	defer p.untrack(client)
	defer client.Close()
	defer up.Close()
	_ = client.SetDeadline(time.Time{})
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the client sent after its CONNECT head (a TLS hello sent
	// without waiting) are already in the server's buffer.
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	splice(client, up, p.lim.TunnelIdle)
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.tunnels[c] = struct{}{}
	p.wg.Add(1)
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.tunnels, c)
	p.mu.Unlock()
	p.wg.Done()
}

// splice copies both ways until both directions end, passing a
// half-close on, and gives up on a tunnel idle for longer than idle.
func splice(a, b net.Conn, idle time.Duration) {
	var last atomicTime
	last.touch()
	var wg sync.WaitGroup
	copyHalf := func(dst, src net.Conn) {
		defer wg.Done()
		buf := make([]byte, 32<<10)
		for {
			_ = src.SetReadDeadline(time.Now().Add(idle))
			n, err := src.Read(buf)
			if n > 0 {
				last.touch()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() && time.Since(last.get()) < idle {
					continue // the other direction is busy
				}
				break
			}
		}
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Add(2)
	go copyHalf(b, a)
	go copyHalf(a, b)
	wg.Wait()
}

type atomicTime struct {
	mu sync.Mutex
	t  time.Time
}

func (a *atomicTime) touch() { a.mu.Lock(); a.t = time.Now(); a.mu.Unlock() }
func (a *atomicTime) get() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.t
}

// refuse answers an error: a short text body, and the reason in a
// Proxy-Status header (RFC 9209) for clients that show headers only.
// A refused CONNECT also carries the reason as its status line's reason
// phrase: Python (pip, urllib) reports a failed tunnel by that phrase
// alone ("Tunnel connection failed: 403 …"), curl and git by the code.
func (p *Proxy) refuse(w http.ResponseWriter, status int, errType, text string) {
	proxyStatus := "permwrap; error=" + errType + "; details=" + strconv.Quote(asciiOnly(text))
	if cw, ok := w.(*connectWriter); ok && cw.refuseRaw(status, proxyStatus, text) {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Proxy-Status", proxyStatus)
	h.Set("Connection", "close")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, text+"\n")
}

// connectWriter is the ResponseWriter of a CONNECT request.
type connectWriter struct{ http.ResponseWriter }

func (c *connectWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := c.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("cannot take over the connection")
	}
	return hj.Hijack()
}

// maxReasonPhrase bounds the reason phrase of a refused CONNECT.
const maxReasonPhrase = 512

// refuseRaw writes the refusal itself, with text as the reason phrase
// (printable ASCII, one line, bounded), and closes the connection. It
// reports false when the connection could not be taken over.
func (c *connectWriter) refuseRaw(status int, proxyStatus, text string) bool {
	conn, brw, err := c.Hijack()
	if err != nil {
		return false
	}
	defer conn.Close()
	phrase := asciiOnly(text)
	if len(phrase) > maxReasonPhrase {
		phrase = phrase[:maxReasonPhrase-3] + "..."
	}
	body := text + "\n"
	fmt.Fprintf(brw, "HTTP/1.1 %03d %s\r\nContent-Type: text/plain; charset=utf-8\r\nProxy-Status: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, phrase, proxyStatus, len(body), body)
	_ = brw.Flush()
	return true
}

// sanitizeLine keeps a message on one line of printable characters: it
// reaches a client's screen and a header.
func sanitizeLine(s string) string {
	const max = 1024
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= max {
			b.WriteString("…")
			break
		}
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == '\uFFFD' || isBidi(r):
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isBidi(r rune) bool {
	return r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069' || r == '\u200e' || r == '\u200f'
}

// asciiOnly makes s fit a header value: the dashes the reasons use
// become '-', any other character outside printable ASCII one '?'.
func asciiOnly(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '—' || r == '–':
			b.WriteByte('-')
		case r < 0x20 || r >= 0x7f:
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func (p *Proxy) logf(format string, args ...any) {
	if p.cfg.ErrorLog != nil {
		fmt.Fprintf(p.cfg.ErrorLog, format+"\n", args...)
	}
}

// peerOnce names a connection's process once, on its first request.
type peerOnce struct {
	conn net.Conn
	once sync.Once
	pid  int
	err  error
}

type peerKey struct{}

func peerOf(ctx context.Context, peers Peers) (int, error) {
	po, ok := ctx.Value(peerKey{}).(*peerOnce)
	if !ok {
		return 0, errors.New("internal: no connection")
	}
	po.once.Do(func() {
		client, err1 := netip.ParseAddrPort(po.conn.RemoteAddr().String())
		local, err2 := netip.ParseAddrPort(po.conn.LocalAddr().String())
		if err1 != nil || err2 != nil {
			po.err = errors.New("cannot read the connection's addresses")
			return
		}
		po.pid, po.err = peers.Peer(client, local)
	})
	return po.pid, po.err
}

// mergeCancel is a context that ends when either does (the client goes
// away, or the proxy closes).
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() { stop(); cancel() }
}

// limitListener holds at most cap(sem) connections open at once; more
// wait in the kernel's accept queue.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite passes a half-close through to the TCP connection.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// newServerLog routes the HTTP server's own complaints (a client that
// sent garbage, a TLS handshake on the plain port) to w, or nowhere.
func newServerLog(w io.Writer) *log.Logger {
	if w == nil {
		w = io.Discard
	}
	return log.New(w, "egress: ", 0)
}
