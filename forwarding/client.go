package forwarding

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/internal/procfs"
)

// The knock: how an inner permwrap finds the permwrap supervising it,
// whatever its environment and open descriptors.
//
// It opens KnockPath read-write. Without a supervising permwrap the open
// fails (the path cannot exist: /dev/null is not a directory), with no
// side effect. Under one, the open is a notified call (every write open
// is), the supervisor recognises the exact path and flags before judging
// anything, and answers it by installing one end of a fresh socketpair
// as the open's result; the kernel named the calling process. Nothing
// else in the system can reach the other end.
const (
	KnockPath = "/dev/null/permwrap-nest-v1"
	// KnockFlags are the open(2) flags of a knock, exactly (os.OpenFile
	// adds O_CLOEXEC; O_LARGEFILE is ignored when matching).
	KnockFlags = syscall.O_RDWR | syscall.O_CLOEXEC
)

// IsKnock reports whether an openat's path and flags are a knock. The
// supervisor calls it on the path exactly as read from the target, before
// any resolution.
func IsKnock(path string, flags uint64) bool {
	return path == KnockPath && flags&^oLargefile == KnockFlags
}

// CouldKnock is the register-only test the supervisor does before it
// reads the path: an open with exactly the knock's flags.
func CouldKnock(flags int) bool {
	return uint32(flags)&^oLargefile == uint32(KnockFlags)
}

// oLargefile is O_LARGEFILE on x86_64; the kernel may add it.
const oLargefile = 0x8000

// Knock errors.
var (
	// ErrNoParent: no permwrap answered (none supervises this process,
	// or an older one that does not know the knock).
	ErrNoParent = errors.New("no permwrap answered the knock")
	// ErrParentBusy: the supervising permwrap refused the knock (too many
	// nesting connections).
	ErrParentBusy = errors.New("the supervising permwrap refuses more nesting connections")
)

// Conn is the inner's side of a knock's connection.
type Conn struct {
	c       net.Conn
	r       *bufio.Reader
	welcome Welcome
	node    Registered
}

// Knock asks the supervising permwrap for a connection. ErrNoParent means
// nobody answered: the caller then decides from its own seccomp state
// (SelfSeccomp) whether it may supervise by itself.
func Knock() (*Conn, error) {
	f, err := os.OpenFile(KnockPath, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, syscall.EUSERS) {
			return nil, ErrParentBusy
		}
		return nil, fmt.Errorf("%w (%v)", ErrNoParent, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Mode()&fs.ModeSocket == 0 {
		// Something answered with a file that is not our socket: not a
		// permwrap.
		return nil, fmt.Errorf("%w (the knock opened something that is not a socket)", ErrNoParent)
	}
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoParent, err)
	}
	return NewConn(c), nil
}

// NewConn wraps an established connection (Knock's, or a test's).
func NewConn(c net.Conn) *Conn { return &Conn{c: c, r: bufio.NewReaderSize(c, 64<<10)} }

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// ParentError is a refusal from the supervising permwrap, or a failure to
// talk to it. The inner prints it and exits 125.
type ParentError struct {
	Refused bool // the parent said no (Reason is its reason)
	Reason  string
}

func (e *ParentError) Error() string {
	if e.Refused {
		return "the supervising permwrap refused: " + e.Reason
	}
	return "talking to the supervising permwrap: " + e.Reason
}

func (c *Conn) expect(limit int, want string) (Message, error) {
	for skipped := 0; skipped < 64; skipped++ {
		m, err := ReadMessage(c.r, limit)
		if err != nil {
			return nil, &ParentError{Reason: err.Error()}
		}
		switch x := m.(type) {
		case Refused:
			return nil, &ParentError{Refused: true, Reason: x.Reason}
		case *Unknown:
			continue
		}
		if m.Type() != want {
			return nil, &ParentError{Reason: fmt.Sprintf("expected %s, got %s", want, m.Type())}
		}
		return m, nil
	}
	return nil, &ParentError{Reason: "too many messages of unknown types"}
}

// Handshake says hello and reads the welcome: which version is spoken and
// which node the inner is in.
func (c *Conn) Handshake(timeout time.Duration, software string) (Welcome, error) {
	if timeout > 0 {
		_ = c.c.SetDeadline(time.Now().Add(timeout))
		defer c.c.SetDeadline(time.Time{})
	}
	if err := WriteMessage(c.c, Hello{Proto: Proto, Min: MinVersion, Max: Version, Software: elideString(sanitizeText(software), maxSoftware)}); err != nil {
		return Welcome{}, &ParentError{Reason: err.Error()}
	}
	m, err := c.expect(MaxFrame, TypeWelcome)
	if err != nil {
		return Welcome{}, err
	}
	c.welcome = m.(Welcome)
	return c.welcome, nil
}

// Register sends the node's registration and reads the answer. The
// registration is checked here first, so a configuration too large for
// the wire is a clear error, not a refusal.
func (c *Conn) Register(timeout time.Duration, reg Register) (Registered, error) {
	if err := reg.Validate(); err != nil {
		return Registered{}, err
	}
	b, err := Encode(reg)
	if err != nil {
		return Registered{}, err
	}
	limit := c.welcome.MaxRegister
	if limit == 0 {
		limit = MaxRegisterFrame
	}
	if len(b)-headerSize > limit {
		return Registered{}, fmt.Errorf("the configuration is too large to hand to the supervising permwrap (%d bytes encoded, %d accepted)", len(b)-headerSize, limit)
	}
	if timeout > 0 {
		_ = c.c.SetDeadline(time.Now().Add(timeout))
		defer c.c.SetDeadline(time.Time{})
	}
	if _, err := c.c.Write(b); err != nil {
		return Registered{}, &ParentError{Reason: err.Error()}
	}
	m, err := c.expect(MaxFrame, TypeRegistered)
	if err != nil {
		return Registered{}, err
	}
	c.node = m.(Registered)
	return c.node, nil
}

// ServeLogs writes each review-log record the root sends to w, one Write
// per line, until the connection closes (nil) or fails. Dropped counts
// become records of their own, so the inner's log says what it misses.
func (c *Conn) ServeLogs(w io.Writer) error {
	for {
		m, err := ReadMessage(c.r, MaxFrame)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		var line []byte
		switch x := m.(type) {
		case Log:
			line = append([]byte(x.Line), '\n')
		case Dropped:
			line = droppedRecord(x.Count, c.node.Label)
		default:
			continue // unknown or out of place: tolerated
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
}

// Done tells the root the keeper's subtree is empty.
func (c *Conn) Done() error { return WriteMessage(c.c, Done{}) }

// CloseWrite says the inner sends nothing more; records the root still
// has for it keep arriving until the root closes (ServeLogs returns).
func (c *Conn) CloseWrite() error {
	if w, ok := c.c.(interface{ CloseWrite() error }); ok {
		return w.CloseWrite()
	}
	return nil
}

// droppedRecord is the review-log record for records the root could not
// send, in the log's shape (every record has a requestId and decidedBy).
func droppedRecord(n int64, node string) []byte {
	rec := struct {
		Time      string              `json:"time"`
		Event     string              `json:"event"`
		RequestID authority.RequestID `json:"requestId"`
		Count     int64               `json:"count"`
		What      string              `json:"what"`
		Node      string              `json:"node,omitempty"`
		DecidedBy authority.DecidedBy `json:"decidedBy"`
	}{
		Time:      time.Now().UTC().Format(time.RFC3339Nano),
		Event:     string(authority.EventDropped),
		RequestID: authority.NewRequestID(),
		Count:     n,
		What:      "records of this node's subtree (the supervising permwrap's log has them)",
		Node:      node,
		DecidedBy: authority.ByError{Reason: "this permwrap read its parent's records too slowly"},
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return []byte(`{"event":"review_log.dropped"}` + "\n")
	}
	return append(b, '\n')
}

// SelfSeccomp reads this process's seccomp mode (0 none, 1 strict, 2
// filter) and filter count from /proc/self/status. A process in mode 2
// whose knock nobody answered is under a filter it did not install: an
// inner permwrap then tries to supervise by itself, which an outer
// permwrap's filter refuses (NEW_LISTENER fails with EPERM) — and says so.
func SelfSeccomp() (mode, filters int, err error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, err
	}
	mode, filters = -1, -1
	for k, v := range procfs.StatusFields(b) {
		switch string(k) {
		case "Seccomp":
			fmt.Sscanf(string(v), "%d", &mode)
		case "Seccomp_filters":
			fmt.Sscanf(string(v), "%d", &filters)
		}
	}
	if mode < 0 {
		return 0, 0, errors.New("/proc/self/status has no Seccomp line")
	}
	if filters < 0 {
		filters = 0
	}
	return mode, filters, nil
}
