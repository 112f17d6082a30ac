package forwarding

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/permwrap/permwrap/engine"
)

// Placer is what the server needs of the tree: *Tree implements it.
type Placer interface {
	// Place says which node a live process of the tree is in; an error
	// when it is not one, or when its node is not certain.
	Place(Peer) (*Node, error)
	// Register registers a node for the peer, a child of its own node,
	// and makes the peer its keeper.
	Register(Peer, Spec) (*Node, []engine.Warning, error)
	// KeeperDone checks and records that a node's keeper says its
	// subtree is empty.
	KeeperDone(*Node) error
	// Sweep drops exited processes and settles nodes; true while nodes
	// remain that a later sweep may settle.
	Sweep() bool
}

// EventKind says what happened on the server.
type EventKind uint8

const (
	EventRegistered EventKind = iota + 1 // a node was registered
	EventRefused                         // a registration (or connection) was refused
	EventProtocol                        // a malformed, oversized or unexpected message; the connection was closed
	EventDone                            // a keeper said its subtree is empty
	EventClosed                          // a registered node's connection closed
	// EventProbe: a connection closed before it asked for anything (an
	// inner permwrap checking that a parent answers, `permwrap doctor`
	// asking which node it is in). Not an error.
	EventProbe
)

var eventNames = [...]string{"", "registered", "refused", "protocol-error", "done", "closed", "probe"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", k)
}

// Event is reported to ServerOptions.OnEvent, for the root's stderr and
// review log.
type Event struct {
	Kind EventKind
	Peer Peer
	Node *Node // nil before registration
	Err  error // the reason, for refusals and protocol errors
}

func (e Event) String() string {
	s := "nesting: " + e.Kind.String() + " " + e.Peer.String()
	if e.Node != nil {
		s += " node " + e.Node.Path()
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// ServerOptions tune the server.
type ServerOptions struct {
	// HandshakeTimeout bounds hello and register after a knock. 0: 10s.
	HandshakeTimeout time.Duration
	// MaxPending bounds connections not yet registered. 0: 16.
	MaxPending int
	// MaxUnknown bounds the messages of unknown types a connection may
	// send before it is closed. 0: 64.
	MaxUnknown int
	// SinkBuffer is each node's log sink budget in bytes. 0: 4 MiB.
	SinkBuffer int
	// SweepInterval is how often the janitor sweeps while nodes exist.
	// 0: 2s.
	SweepInterval time.Duration
	// NoCredCheck skips the per-message sender check (for connections
	// that are not unix sockets, in tests).
	NoCredCheck bool
	// OnEvent receives what happened. It must not block for long. nil
	// discards.
	OnEvent func(Event)
}

// Server is the root's side of the nesting protocol. The supervisor calls
// Attach with one end of a socketpair when a process knocks; there is no
// listening socket, so nothing outside the tree can connect at all.
type Server struct {
	tree Placer
	opts ServerOptions

	mu      sync.Mutex
	pending int
	conns   map[net.Conn]struct{}
	sinks   map[*Node]*Sink
	closed  bool
	wg      sync.WaitGroup
	stop    chan struct{}
	kick    chan struct{}
}

// sinkDrainTimeout bounds how long a closing connection waits for its
// node's queued records to be sent.
const sinkDrainTimeout = 2 * time.Second

// ErrBusy is a knock beyond MaxPending, or after Close: the supervisor
// answers the knock with EUSERS.
var ErrBusy = errors.New("forwarding: too many nesting connections")

// NewServer starts a server (and its janitor) over the tree.
func NewServer(tree Placer, opts ServerOptions) *Server {
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = 10 * time.Second
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 16
	}
	if opts.MaxUnknown <= 0 {
		opts.MaxUnknown = 64
	}
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = 2 * time.Second
	}
	s := &Server{tree: tree, opts: opts, conns: map[net.Conn]struct{}{}, sinks: map[*Node]*Sink{},
		stop: make(chan struct{}), kick: make(chan struct{}, 1)}
	s.wg.Add(1)
	go s.janitor()
	return s
}

func (s *Server) event(e Event) {
	if s.opts.OnEvent != nil {
		s.opts.OnEvent(e)
	}
}

// Attach serves one knock's connection; peer is the process that knocked
// as the kernel named it. The server owns c from here on (it is closed on
// every error, ErrBusy included). For a unix socket, SO_PASSCRED is set
// here, so call Attach before the other end reaches the peer.
func (s *Server) Attach(c net.Conn, peer Peer) error {
	var r io.Reader = c
	if !s.opts.NoCredCheck {
		uc, ok := c.(*net.UnixConn)
		if !ok {
			c.Close()
			return fmt.Errorf("forwarding: a knock's connection must be a unix socket, not %T", c)
		}
		if err := enablePassCred(uc); err != nil {
			c.Close()
			return fmt.Errorf("forwarding: SO_PASSCRED: %w", err)
		}
		r = newCredReader(uc, peer.PID)
	}
	s.mu.Lock()
	if s.closed || s.pending >= s.opts.MaxPending {
		s.mu.Unlock()
		c.Close()
		return ErrBusy
	}
	s.pending++
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go s.serve(c, r, peer)
	return nil
}

// Accept answers a knock: it makes a connected pair of unix stream
// sockets, serves one end for peer (the knocking process as the kernel
// named it) and returns the other, which the supervisor installs in the
// knocker as the result of its open (ADDFD with O_CLOEXEC) and then
// closes. ErrBusy when the server takes no more connections: the
// supervisor answers the knock with EUSERS.
func (s *Server) Accept(peer Peer) (*os.File, error) {
	s.mu.Lock()
	busy := s.closed || s.pending >= s.opts.MaxPending
	s.mu.Unlock()
	if busy {
		return nil, ErrBusy
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("forwarding: socketpair: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "nest-server")
	theirs := os.NewFile(uintptr(fds[1]), "nest-client")
	c, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		theirs.Close()
		return nil, fmt.Errorf("forwarding: %w", err)
	}
	if err := s.Attach(c, peer); err != nil {
		theirs.Close()
		return nil, err
	}
	return theirs, nil
}

// Sink is the node's log sink, or nil when its inner permwrap did not ask
// for records (or is gone).
func (s *Server) Sink(n *Node) *Sink {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sinks[n]
}

// Close closes every connection and waits for the server's goroutines.
// Nodes stay in the registry: their rules hold as long as their processes
// do.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	for _, k := range s.sinks {
		k.close()
	}
	close(s.stop)
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// serve serves one knock's connection: the handshake (hello, welcome),
// the registration (register, registered), then, for the node's life on
// this connection, its records out and the keeper's done in.
func (s *Server) serve(c net.Conn, r io.Reader, peer Peer) {
	defer s.wg.Done()
	registered := false
	defer func() { s.closeConn(c, registered) }()
	_ = c.SetDeadline(time.Now().Add(s.opts.HandshakeTimeout))
	sc := &serverConn{s: s, c: c, r: r, peer: peer}

	parent, ok := sc.handshake()
	if !ok {
		return
	}
	n, ok := sc.register(parent)
	if !ok {
		return
	}
	_ = c.SetDeadline(time.Time{})
	sink := s.admit(c, n)
	registered = true
	sc.event(EventRegistered, n, nil)
	s.kickJanitor()
	defer s.drainSink(n, sink)

	sc.awaitDone(n)
}

// serverConn is one knock's connection as serve serves it.
type serverConn struct {
	s    *Server
	c    net.Conn
	r    io.Reader // c, or a reader that checks who sent each byte
	peer Peer      // the knocker, as the kernel named it
}

// event reports what happened on this connection.
func (sc *serverConn) event(kind EventKind, n *Node, err error) {
	sc.s.event(Event{Kind: kind, Peer: sc.peer, Node: n, Err: err})
}

// fail answers refused, with the reason (the root's, for a refusal), and
// reports it.
func (sc *serverConn) fail(kind EventKind, n *Node, err error) {
	reason := err.Error()
	var re *RefusedError
	if errors.As(err, &re) {
		reason = re.Reason
	}
	_ = WriteMessage(sc.c, Refused{Reason: elideString(sanitizeText(reason), MaxReasonBytes)})
	sc.event(kind, n, err)
}

// receive reads the next message of the handshake. A connection closed
// before it is a probe (n: the node known so far); a message that cannot
// be read is refused.
func (sc *serverConn) receive(limit int, skipUnknown bool, n *Node) (Message, bool) {
	m, err := sc.s.read(sc.r, limit, skipUnknown)
	if errors.Is(err, io.EOF) {
		sc.event(EventProbe, n, nil)
		return nil, false
	}
	if err != nil {
		sc.fail(EventProtocol, nil, err)
		return nil, false
	}
	return m, true
}

// handshake reads the inner's hello, chooses the version and answers
// welcome with the label of the knocker's own node: the new node's
// parent, which it returns.
func (sc *serverConn) handshake() (*Node, bool) {
	m, ok := sc.receive(MaxFrame, false, nil)
	if !ok {
		return nil, false
	}
	hello, ok := m.(Hello)
	if !ok {
		sc.fail(EventProtocol, nil, fmt.Errorf("expected hello, got %q", m.Type()))
		return nil, false
	}
	if hello.Min > Version || hello.Max < MinVersion {
		sc.fail(EventRefused, nil, refuse("no common protocol version: the inner permwrap speaks %d..%d, this one %d..%d", hello.Min, hello.Max, MinVersion, Version))
		return nil, false
	}
	version := min(hello.Max, Version)
	parent, err := sc.s.tree.Place(sc.peer)
	if err != nil {
		sc.fail(EventRefused, nil, err)
		return nil, false
	}
	if err := WriteMessage(sc.c, Welcome{Version: version, Parent: parent.Label(), MaxRegister: MaxRegisterFrame}); err != nil {
		sc.event(EventProtocol, nil, err)
		return nil, false
	}
	return parent, true
}

// register reads the inner's register, registers its node (a child of
// parent, with the knocker as its keeper) and answers registered.
func (sc *serverConn) register(parent *Node) (*Node, bool) {
	m, ok := sc.receive(MaxRegisterFrame, true, parent)
	if !ok {
		return nil, false
	}
	reg, ok := m.(Register)
	if !ok {
		sc.fail(EventProtocol, nil, fmt.Errorf("expected register, got %q", m.Type()))
		return nil, false
	}
	n, warns, err := sc.s.tree.Register(sc.peer, SpecOf(reg))
	if err != nil {
		sc.fail(EventRefused, nil, err)
		return nil, false
	}
	if err := WriteMessage(sc.c, registeredMessage(n, warns)); err != nil {
		// The node exists and its keeper will have no children: it is
		// settled like any node whose keeper leaves.
		sc.event(EventProtocol, n, err)
		return nil, false
	}
	return n, true
}

// registeredMessage is the answer to a registration: the node's id and
// label, the chain of labels from the root, and the configuration's
// warnings (at most MaxWarnings).
func registeredMessage(n *Node, warns []engine.Warning) Registered {
	out := Registered{Node: uint32(n.ID()), Label: n.Label()}
	for _, x := range n.Chain() {
		out.Chain = append(out.Chain, x.Label())
	}
	for i, w := range warns {
		if i == MaxWarnings {
			break
		}
		out.Warnings = append(out.Warnings, elideString(sanitizeText(w.String()), MaxReasonBytes))
	}
	return out
}

// admit counts a registered connection as no longer pending and, when
// its node asked for records, starts sending them from the node's sink
// (nil when it did not).
func (s *Server) admit(c net.Conn, n *Node) *Sink {
	var sink *Sink
	if n.WantsLog() {
		sink = newSink(s.opts.SinkBuffer)
	}
	s.mu.Lock()
	s.pending--
	if sink != nil && !s.closed {
		s.sinks[n] = sink
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			sink.run(c)
		}()
	}
	s.mu.Unlock()
	return sink
}

// awaitDone serves a registered node's connection: from here the inner
// only says done (or closes).
func (sc *serverConn) awaitDone(n *Node) {
	unknown := 0
	for {
		m, err := sc.s.read(sc.r, MaxFrame, false)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				sc.event(EventClosed, n, nil)
			} else {
				sc.event(EventProtocol, n, err)
			}
			return
		}
		switch m.(type) {
		case Done:
			if err := sc.s.tree.KeeperDone(n); err != nil {
				sc.event(EventProtocol, n, err)
				continue
			}
			sc.event(EventDone, n, nil)
		case *Unknown:
			if unknown++; unknown > sc.s.opts.MaxUnknown {
				sc.event(EventProtocol, n, fmt.Errorf("more than %d messages of unknown types", sc.s.opts.MaxUnknown))
				return
			}
		default:
			sc.event(EventProtocol, n, fmt.Errorf("unexpected %q after registration", m.Type()))
			return
		}
	}
}

// drainSink forgets the node's sink once its connection is done with
// and kicks the janitor, which may settle the node. What is queued still
// goes out before the connection is closed (the keeper reads until then),
// for a while.
func (s *Server) drainSink(n *Node, sink *Sink) {
	s.mu.Lock()
	delete(s.sinks, n)
	s.mu.Unlock()
	if sink != nil {
		sink.close()
		select {
		case <-sink.done:
		case <-time.After(sinkDrainTimeout):
		}
	}
	s.kickJanitor()
}

// closeConn forgets a connection that serve is done with (and its
// pending slot, if it never registered) and closes it.
func (s *Server) closeConn(c net.Conn, registered bool) {
	s.mu.Lock()
	if !registered {
		s.pending--
	}
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// read reads one message. With skipUnknown, messages of unknown types are
// skipped (up to MaxUnknown), so a newer inner may send more than this
// root knows.
func (s *Server) read(r io.Reader, limit int, skipUnknown bool) (Message, error) {
	for skipped := 0; ; skipped++ {
		m, err := ReadMessage(r, limit)
		if err != nil {
			return nil, err
		}
		if _, ok := m.(*Unknown); ok && skipUnknown && skipped < s.opts.MaxUnknown {
			continue
		}
		return m, nil
	}
}

func (s *Server) kickJanitor() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// janitor sweeps the tree while nodes exist, and at once after a node's
// connection closes.
func (s *Server) janitor() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.SweepInterval)
	defer t.Stop()
	pending := false
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
			pending = s.tree.Sweep()
		case <-t.C:
			if pending {
				pending = s.tree.Sweep()
			}
		}
	}
}

// sanitizeText replaces control characters (a config error may quote the
// file) so the text is safe on the wire.
func sanitizeText(s string) string {
	if noControl(s) {
		return s
	}
	b := make([]rune, 0, len(s))
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0xfffd {
			r = ' '
		}
		b = append(b, r)
	}
	return string(b)
}
