package forwarding

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/testutil"
)

// socketPair is what the supervisor makes at a knock: two connected unix
// stream sockets.
func socketPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conv := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*net.UnixConn)
	}
	return conv(fds[0]), conv(fds[1])
}

type events struct {
	mu sync.Mutex
	l  []Event
	ch chan Event
}

func newEvents() *events { return &events{ch: make(chan Event, 100)} }

func (e *events) add(ev Event) {
	e.mu.Lock()
	e.l = append(e.l, ev)
	e.mu.Unlock()
	e.ch <- ev
}

func (e *events) wait(t *testing.T, kind EventKind) Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-e.ch:
			if ev.Kind == kind {
				return ev
			}
		case <-timeout:
			e.mu.Lock()
			defer e.mu.Unlock()
			t.Fatalf("no %s event; events: %v", kind, e.l)
		}
	}
}

// serverWorld is a fake process table whose keepers have this test
// process's pid (so the credential check sees the right sender).
type serverWorld struct {
	*world
	srv *Server
	ev  *events
}

func newServerWorld(t *testing.T, opts ServerOptions) *serverWorld {
	w := newWorld(t)
	ev := newEvents()
	opts.OnEvent = ev.add
	srv := NewServer(w.tree, opts)
	t.Cleanup(func() { srv.Close() })
	return &serverWorld{world: w, srv: srv, ev: ev}
}

// knock attaches a new connection for a process spawned under parent
// with the given pid, as the supervisor does at a knock.
func (s *serverWorld) knock(parent, pid int) (*Conn, Peer, error) {
	s.t.Helper()
	s.f.spawn(parent, pid)
	st, _ := s.f.Stat(pid)
	peer := Peer{PID: pid, Start: st.Start}
	f, err := s.srv.Accept(peer)
	if err != nil {
		return nil, peer, err
	}
	// What the knocker's open returns (installed by ADDFD).
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		s.t.Fatal(err)
	}
	c := NewConn(nc)
	s.t.Cleanup(func() { c.Close() })
	return c, peer, nil
}

func regMsg(name, policy string) Register {
	return Register{Name: name, Argv: []string{name, "--flag"},
		Config: WireConfig{Global: &WireFile{Name: "policy.jsonc", Data: []byte(policy)}},
		Env:    WireEnv{Home: "/home/u", Workspace: "/home/u/proj", TmpDir: "/tmp"}, Log: true}
}

func TestServerRegistersAndStreamsLogs(t *testing.T) {
	s := newServerWorld(t, ServerOptions{})
	c, peer, err := s.knock(s.agent, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	wel, err := c.Handshake(5*time.Second, "permwrap test")
	if err != nil {
		t.Fatal(err)
	}
	if wel.Version != Version || wel.Parent != "root" {
		t.Fatalf("welcome: %+v", wel)
	}
	got, err := c.Register(5*time.Second, regMsg("reviewer", `{"permission": {"*": "allow", "write": {"/home/u/proj/**": "deny"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Label != "reviewer#1" || strings.Join(got.Chain, "/") != "root/reviewer#1" {
		t.Fatalf("registered: %+v", got)
	}
	ev := s.ev.wait(t, EventRegistered)
	n := ev.Node
	if n == nil || n.Keeper() != peer || !n.WantsLog() {
		t.Fatalf("event: %v", ev)
	}
	// The node judges its keeper's children.
	cmd := s.f.spawn(peer.PID, 0)
	s.mustBe(cmd, n)
	if v := Decide(s.nodeOf(cmd).Layers(), write("/home/u/proj/a")...); v.Result.Action != engine.Deny {
		t.Fatalf("node rule: %s", v)
	}

	// Records written to the node's sink arrive in order, one line each,
	// through an authority.Log as the supervisor will use it.
	sink := s.srv.Sink(n)
	if sink == nil {
		t.Fatal("no sink")
	}
	lg := authority.NewLogWriter(sink, authority.LogOptions{})
	req := authority.NewRequest(engine.Check{Surface: engine.SurfaceWrite, Value: "/home/u/proj/a"})
	req.Node = n.Label()
	d := authority.Denied(authority.ByForwarded{Responder: "root", Decision: authority.ByRule{Surface: engine.SurfaceWrite, Pattern: "/home/u/proj/**", Origin: engine.OriginGlobal}}, "")
	for i := 0; i < 3; i++ {
		lg.Decided(req, false, d)
	}
	lg.Close()

	var out testutil.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- c.ServeLogs(&out) }()
	waitLines(&out, 3)
	// Done, then the keeper exits: the server hears both.
	if err := c.Done(); err != nil {
		t.Fatal(err)
	}
	s.ev.wait(t, EventProtocol) // the keeper still has a child: not believed
	s.f.exit(cmd)
	if err := c.Done(); err != nil {
		t.Fatal(err)
	}
	s.ev.wait(t, EventDone)
	c.Close()
	s.ev.wait(t, EventClosed)
	if err := <-done; err != nil {
		t.Fatalf("ServeLogs: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("records: %q", out.String())
	}
	for _, l := range lines {
		var rec struct {
			RequestID string `json:"requestId"`
			Node      string `json:"node"`
			DecidedBy json.RawMessage
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("record %q: %v", l, err)
		}
		by, err := authority.ParseDecidedBy(rec.DecidedBy)
		if err != nil || by.Kind() != "forwarded" || rec.Node != "reviewer#1" || rec.RequestID != string(req.ID) {
			t.Fatalf("record %q: %v %v", l, by, err)
		}
	}
}

// A malformed or oversized registration is refused with a logged error,
// and the server keeps serving everyone else.
func TestServerRefusesBadInputKeepsServing(t *testing.T) {
	s := newServerWorld(t, ServerOptions{NoCredCheck: true})
	cases := []struct {
		name   string
		frames [][]byte
		kind   EventKind
	}{
		{"not json", [][]byte{frame("hello there")}, EventProtocol},
		{"oversized", [][]byte{{0x7f, 0xff, 0xff, 0xff}}, EventProtocol},
		{"wrong first message", [][]byte{frame(`{"v":1,"type":"done"}`)}, EventProtocol},
		{"no common version", [][]byte{frame(`{"v":7,"type":"hello","proto":"permwrap-nest","min":7,"max":9}`)}, EventRefused},
		{"bad registration", [][]byte{frame(`{"v":1,"type":"hello","proto":"permwrap-nest","min":1,"max":1}`),
			frame(`{"v":1,"type":"register","name":"x y","argv":["a"],"config":{}}`)}, EventProtocol},
		{"uncompilable policy", [][]byte{frame(`{"v":1,"type":"hello","proto":"permwrap-nest","min":1,"max":1}`),
			frame(`{"v":1,"type":"register","name":"x","argv":["a"],"config":{"global":{"name":"p","data":"eyJwZXJtaXNzaW9uIjogeyJ3cml0ZSI6IHsiWyI6ICJkZW55In19fQ=="}},"env":{"home":"/h"}}`)}, EventRefused},
	}
	for i, tc := range cases {
		c, _, err := s.knock(s.agent, 5000+i)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range tc.frames {
			if _, err := c.c.Write(f); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		ev := s.ev.wait(t, tc.kind)
		if ev.Err == nil {
			t.Fatalf("%s: event without a reason", tc.name)
		}
		// The peer reads a refusal (or, for a broken stream, at least EOF).
		_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		rd := bufio.NewReader(c.c)
		for {
			m, err := ReadMessage(rd, MaxFrame)
			if err != nil {
				break
			}
			if r, ok := m.(Refused); ok && r.Reason == "" {
				t.Fatalf("%s: empty refusal", tc.name)
			}
		}
		t.Logf("%s: %v", tc.name, ev)
	}
	// A good client still registers.
	c, _, err := s.knock(s.agent, 6000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Handshake(5*time.Second, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(5*time.Second, regMsg("good", `{"permission": {"*": "allow"}}`)); err != nil {
		t.Fatal(err)
	}
	if len(s.reg.Nodes()) != 1 {
		t.Fatalf("nodes: %d", len(s.reg.Nodes()))
	}
}

func TestServerRefusalReachesClient(t *testing.T) {
	s := newServerWorld(t, ServerOptions{NoCredCheck: true})
	c, _, err := s.knock(s.agent, 7000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Handshake(5*time.Second, ""); err != nil {
		t.Fatal(err)
	}
	_, err = c.Register(5*time.Second, regMsg("n", `{"permission": {"write": {"~/x": "deny"}}}`+"\n// \x1b[31m"))
	var pe *ParentError
	if !errors.As(err, &pe) || !pe.Refused || !strings.Contains(pe.Reason, "compile") {
		t.Fatalf("want a refusal, got %v", err)
	}
}

func TestServerLimitsAndTimeouts(t *testing.T) {
	s := newServerWorld(t, ServerOptions{NoCredCheck: true, MaxPending: 2, HandshakeTimeout: 300 * time.Millisecond})
	if _, _, err := s.knock(s.agent, 8001); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.knock(s.agent, 8002); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.knock(s.agent, 8003); !errors.Is(err, ErrBusy) {
		t.Fatalf("third pending connection: %v", err)
	}
	// Silent connections time out and make room.
	s.ev.wait(t, EventProtocol)
	s.ev.wait(t, EventProtocol)
	deadline := time.Now().Add(5 * time.Second)
	for pid := 8004; ; pid++ {
		if _, _, err := s.knock(s.agent, pid); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pending slots never freed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Every byte must come from the process that knocked: a frame written by
// another process (the descriptor handed on) is refused.
func TestServerChecksSender(t *testing.T) {
	s := newServerWorld(t, ServerOptions{})
	a, b := socketPair(t)
	s.f.spawn(s.agent, os.Getpid())
	st, _ := s.f.Stat(os.Getpid())
	if err := s.srv.Attach(a, Peer{PID: os.Getpid(), Start: st.Start}); err != nil {
		t.Fatal(err)
	}
	f, err := b.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A hello frame, sent by a shell.
	hello := frame(`{"v":1,"type":"hello","proto":"permwrap-nest","min":1,"max":1}`)
	var esc strings.Builder
	for _, c := range hello {
		esc.WriteString("\\" + octal(c))
	}
	cmd := exec.Command("/bin/sh", "-c", "printf '"+esc.String()+"' >&3")
	cmd.ExtraFiles = []*os.File{f}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sh: %v %s", err, out)
	}
	ev := s.ev.wait(t, EventProtocol)
	if !errors.Is(ev.Err, ErrWrongSender) {
		t.Fatalf("want a wrong-sender refusal, got %v", ev.Err)
	}
	b.Close()
}

// waitLines waits up to 10 s for n lines in s.
func waitLines(s *testutil.SyncBuffer, n int) {
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(s.String(), "\n") < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

func octal(c byte) string { return string([]byte{'0' + c>>6, '0' + (c>>3)&7, '0' + c&7}) }

// A sink never blocks its writer: past its budget records are dropped,
// counted, and the inner is told.
func TestSinkDropsAndReports(t *testing.T) {
	k := newSink(100)
	line := []byte(`{"event":"x","pad":"` + strings.Repeat("a", 30) + `"}` + "\n")
	for i := 0; i < 10; i++ {
		if n, err := k.Write(line); n != len(line) || err != nil {
			t.Fatal(n, err)
		}
	}
	k.Write([]byte("two\nlines\n")) // never travels: one record is one line
	// 52-byte lines in a 100-byte budget: one fits, nine are dropped, and
	// the two-line write is dropped too.
	if k.Dropped() != 10 {
		t.Fatalf("dropped %d", k.Dropped())
	}
	a, b := socketPair(t)
	go k.run(a)
	c := NewConn(b)
	var out testutil.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- c.ServeLogs(&out) }()
	waitLines(&out, 2)
	k.close()
	<-k.done
	a.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || lines[0] != strings.TrimSpace(string(line)) {
		t.Fatalf("lines: %q", out.String())
	}
	// The record that fitted, then the report of the dropped ones.
	var rec struct {
		Event     string          `json:"event"`
		Count     int64           `json:"count"`
		RequestID string          `json:"requestId"`
		DecidedBy json.RawMessage `json:"decidedBy"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Event != string(authority.EventDropped) || rec.Count != 10 || !authority.RequestID(rec.RequestID).Valid() {
		t.Fatalf("dropped record: %s", lines[len(lines)-1])
	}
	if _, err := authority.ParseDecidedBy(rec.DecidedBy); err != nil {
		t.Fatal(err)
	}
}

// The client tolerates what it does not know: unknown messages before the
// welcome and among the records.
func TestClientTolerance(t *testing.T) {
	a, b := socketPair(t)
	c := NewConn(b)
	go func() {
		r := bufio.NewReader(a)
		if _, err := ReadMessage(r, MaxFrame); err != nil {
			return
		}
		a.Write(frame(`{"v":1,"type":"news","x":1}`))
		WriteMessage(a, Welcome{Version: 1, Parent: "root", MaxRegister: MaxRegisterFrame})
		if _, err := ReadMessage(r, MaxRegisterFrame); err != nil {
			return
		}
		WriteMessage(a, Registered{Node: 4, Label: "n#4", Chain: []string{"root", "n#4"}})
		a.Write(frame(`{"v":1,"type":"news","x":2}`))
		WriteMessage(a, Log{Line: `{"event":"e"}`})
		a.Close()
	}()
	if _, err := c.Handshake(5*time.Second, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Register(5*time.Second, regMsg("n", `{}`)); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := c.ServeLogs(&out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "{\"event\":\"e\"}\n" {
		t.Fatalf("records: %q", out.String())
	}
}

func TestRegisterTooLargeIsClientError(t *testing.T) {
	c := NewConn(nil)
	c.welcome.MaxRegister = 2048
	r := regMsg("n", strings.Repeat(" ", 4096))
	if _, err := c.Register(time.Second, r); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("want a size error before sending, got %v", err)
	}
}

// Without a supervising permwrap the knock fails with no side effect.
func TestKnockUnanswered(t *testing.T) {
	c, err := Knock()
	if !errors.Is(err, ErrNoParent) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("knock outside permwrap: %v", err)
	}
	if _, err := os.Lstat(KnockPath); err == nil {
		t.Fatal("the knock path exists")
	}
	mode, filters, err := SelfSeccomp()
	if err != nil || mode < 0 || mode > 2 || filters < 0 || (mode == 0 && filters != 0) {
		t.Fatalf("SelfSeccomp: %d %d %v", mode, filters, err)
	}
}

// A connection closed before it asks for anything (an inner permwrap
// checking that a parent answers, `permwrap doctor` asking which node it
// is in) is a probe, not a protocol error, and leaves nothing behind.
func TestServerProbe(t *testing.T) {
	s := newServerWorld(t, ServerOptions{MaxPending: 2})
	c, peer, err := s.knock(s.agent, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ { // more than MaxPending: each probe frees its slot
		if i > 0 {
			f, err := s.srv.Accept(peer)
			if err != nil {
				t.Fatalf("knock %d: %v", i, err)
			}
			nc, err := net.FileConn(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			c = NewConn(nc)
		}
		if i%2 == 1 {
			if wel, err := c.Handshake(5*time.Second, "doctor"); err != nil || wel.Parent != "root" {
				t.Fatalf("handshake: %+v %v", wel, err)
			}
		}
		c.Close()
		if ev := s.ev.wait(t, EventProbe); ev.Err != nil {
			t.Fatalf("probe event with an error: %v", ev)
		}
	}
	s.ev.mu.Lock()
	defer s.ev.mu.Unlock()
	for _, ev := range s.ev.l {
		if ev.Kind != EventProbe {
			t.Errorf("a probe caused %v", ev)
		}
	}
}
