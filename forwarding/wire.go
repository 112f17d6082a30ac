package forwarding

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// The wire: every message is one frame, a 4-byte big-endian length and
// that many bytes of one JSON object:
//
//	{"v":1,"type":"register", ...fields of the type...}
//
// Frames are bounded before they are read (a peer cannot make the reader
// allocate more than the limit the reader chose), JSON nesting is bounded
// before it is decoded, unknown fields are ignored and unknown message
// types are returned as *Unknown for the caller to skip, so a newer peer
// can add to the protocol without breaking an older one.

// Proto names the protocol in the hello message.
const Proto = "permwrap-nest"

// Version is the highest protocol version this build speaks; MinVersion
// the lowest.
const (
	Version    = 1
	MinVersion = 1
)

// Limits on what a frame may hold. A registration carries whole
// configuration files, so it gets the large limit; everything else the
// small one.
const (
	headerSize = 4
	// MaxRegisterFrame bounds a registration frame (the files are base64
	// in it, so about 3 MiB of configuration fits).
	MaxRegisterFrame = 4 << 20
	// MaxFrame bounds every other frame.
	MaxFrame = 256 << 10

	MaxFileBytes   = 1 << 20 // one configuration file
	MaxScopes      = 16      // --policy files of one node
	MaxArgs        = 256     // the node's command, for prompts
	MaxArgvBytes   = 64 << 10
	MaxNameBytes   = 64   // a node's name
	MaxPathBytes   = 4096 // file names and Env paths
	MaxReasonBytes = 4096 // refusal reasons, error texts
	MaxWarnings    = 32
	MaxProjects    = 32              // project policies of one node (the chain from the repository root)
	MaxProtect     = 256             // protected paths of one node
	MaxLogLine     = MaxFrame - 1024 // one review-log record, JSON-escaped into a frame
	maxJSONDepth   = 8
	maxChainLabels = 64
	maxSoftware    = 128
)

// Message types.
const (
	TypeHello      = "hello"      // inner → root: the versions it speaks
	TypeWelcome    = "welcome"    // root → inner: the version chosen, the node the inner is in
	TypeRegister   = "register"   // inner → root: the node's configuration
	TypeRegistered = "registered" // root → inner: the node's id and label
	TypeRefused    = "refused"    // root → inner: why not; the connection then closes
	TypeLog        = "log"        // root → inner: one review-log record of the node's subtree
	TypeDropped    = "dropped"    // root → inner: records the root could not send
	TypeDone       = "done"       // inner → root: the subtree is empty, the keeper exits
)

// Message is one decoded frame. The concrete types are Hello, Welcome,
// Register, Registered, Refused, Log, Dropped, Done and *Unknown.
type Message interface {
	Type() string
	// Validate checks the message against the wire's limits and shapes;
	// a message that fails it is refused, never acted on.
	Validate() error
}

// header is every frame's envelope. Messages do not hold it: Encode
// writes it, Decode reads it first.
type header struct {
	V    int    `json:"v"`
	Kind string `json:"type"`
}

// Hello opens a connection (inner → root). Its shape is the same in every
// version, so a root can always read it and answer in a version both
// speak.
type Hello struct {
	Proto    string `json:"proto"`
	Min      int    `json:"min"`
	Max      int    `json:"max"`
	Software string `json:"software,omitempty"` // "permwrap <version>", informative
}

// Welcome answers Hello (root → inner).
type Welcome struct {
	Version int `json:"version"`
	// Parent is the label of the node the inner permwrap is in; the node
	// it registers will be that node's child.
	Parent string `json:"parent"`
	// MaxRegister is the largest registration frame the root reads.
	MaxRegister int `json:"maxRegister"`
}

// WireFile is one configuration file. Data is the file's exact bytes
// (base64 in JSON). Unreadable marks a --policy file the inner could not
// read; the root then turns every allow of the node into an ask, as the
// inner would have (engine.Compile's fail-closed).
type WireFile struct {
	Name       string `json:"name"`
	Data       []byte `json:"data,omitempty"`
	Unreadable bool   `json:"unreadable,omitempty"`
	Error      string `json:"error,omitempty"`
}

// WireConfig is a node's configuration as the inner read it: what
// engine.ReadConfig gave the inner's loader (engine.Config), files as
// their exact bytes. A nil Global means the root's embedded default
// policy.
type WireConfig struct {
	Global     *WireFile `json:"global"`
	HardGuards *WireFile `json:"hardGuards"`
	// Managed is the managed policy the inner read (the same file the
	// root reads; the root's own layer applies it whatever a node sends).
	Managed *WireFile  `json:"managed,omitempty"`
	Scopes  []WireFile `json:"scopes"`
	// Projects are the project policies (.permwrap/policy.jsonc) the
	// inner found, with the trust its own trust record gave them: an
	// untrusted one only tightens the node's layer. (Trust is believed:
	// it decides only how loose the node's own layer is, and no layer
	// loosens another.)
	Projects []WireProject `json:"projects,omitempty"`
	// Profile is --profile ("" leaves it to the global policy's
	// "extends"); DefaultExtends the base of a global policy that names
	// none: absent means engine.DefaultProfile, "none" no base.
	Profile        string `json:"profile,omitempty"`
	DefaultExtends string `json:"defaultExtends,omitempty"`
	// ScopesRequired: a --policy file that cannot be read or compiled is
	// an error (the inner ran without --policy-optional).
	ScopesRequired bool `json:"scopesRequired,omitempty"`
	// Protect are the paths the inner protects from its subtree (its
	// configuration, its review log and state, its project policies, its
	// binary): write denies in the node's layer, above its rules.
	Protect []WireProtected `json:"protect,omitempty"`
}

// WireProject is one project policy and its trust.
type WireProject struct {
	Name      string `json:"name"`
	Data      []byte `json:"data"`
	Dir       string `json:"dir"`
	Trusted   bool   `json:"trusted,omitempty"`
	Untrusted string `json:"untrusted,omitempty"` // why not, for messages
}

// WireProtected is one protected path.
type WireProtected struct {
	Path   string `json:"path"`
	Tree   bool   `json:"tree,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// WireEnv is what the node's patterns expand with.
type WireEnv struct {
	Home      string `json:"home"`
	Workspace string `json:"workspace"`
	TmpDir    string `json:"tmpdir"`
}

// Register asks the root for a node (inner → root).
type Register struct {
	Name   string     `json:"name"`
	Argv   []string   `json:"argv"` // the command the node runs
	Config WireConfig `json:"config"`
	Env    WireEnv    `json:"env"`
	Yolo   bool       `json:"yolo,omitempty"`
	Audit  bool       `json:"audit,omitempty"` // --audit: the node's own layer lets its asks and denials through, logged
	Log    bool       `json:"log,omitempty"`   // send the subtree's review-log records
}

// Registered answers Register (root → inner).
type Registered struct {
	Node     uint32   `json:"node"`
	Label    string   `json:"label"`
	Chain    []string `json:"chain"`    // labels from the root to this node
	Warnings []string `json:"warnings"` // what the root's compile said (scopes that failed: fail-closed)
}

// Refused says why a registration (or the connection) was refused
// (root → inner). The root closes the connection after it.
type Refused struct {
	Reason string `json:"reason"`
}

// Log carries one review-log record of the node's subtree (root → inner),
// without its trailing newline.
type Log struct {
	Line string `json:"line"`
}

// Dropped says how many records the root could not send (the inner was
// not reading fast enough); the inner writes a record saying so.
type Dropped struct {
	Count int64 `json:"count"`
}

// Done says the keeper's subtree is empty and the keeper exits
// (inner → root).
type Done struct{}

// Unknown is a well-formed frame of a type this build does not know. The
// reader returns it instead of an error so callers can skip it.
type Unknown struct {
	Kind string
}

func (Hello) Type() string      { return TypeHello }
func (Welcome) Type() string    { return TypeWelcome }
func (Register) Type() string   { return TypeRegister }
func (Registered) Type() string { return TypeRegistered }
func (Refused) Type() string    { return TypeRefused }
func (Log) Type() string        { return TypeLog }
func (Dropped) Type() string    { return TypeDropped }
func (Done) Type() string       { return TypeDone }
func (u *Unknown) Type() string { return u.Kind }

// ErrFrameTooLarge is a frame whose header announces more than the
// reader's limit. The stream cannot be resynchronised after it.
var ErrFrameTooLarge = errors.New("forwarding: frame too large")

// WireError is a frame that could not be decoded or failed validation.
type WireError struct {
	Type string // the message type, when known
	Msg  string
}

func (e *WireError) Error() string {
	if e.Type != "" {
		return "forwarding: " + e.Type + ": " + e.Msg
	}
	return "forwarding: " + e.Msg
}

func wireErr(typ, format string, args ...any) error {
	return &WireError{Type: typ, Msg: fmt.Sprintf(format, args...)}
}

// ReadFrame reads one frame's body. A frame larger than limit is
// ErrFrameTooLarge and nothing of it is read; a short stream is
// io.ErrUnexpectedEOF, a closed one between frames io.EOF.
func ReadFrame(r io.Reader, limit int) ([]byte, error) {
	var h [headerSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if limit <= 0 || uint64(n) > uint64(limit) {
		return nil, fmt.Errorf("%w: %d bytes announced, at most %d accepted", ErrFrameTooLarge, n, limit)
	}
	if n == 0 {
		return nil, wireErr("", "empty frame")
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// Encode renders m as a frame (header and body), writing the envelope
// (version and type) first. It does not validate: the sender's data is
// its own.
func Encode(m Message) ([]byte, error) {
	if _, ok := m.(*Unknown); ok {
		return nil, fmt.Errorf("forwarding: cannot encode a message of unknown type %q", m.Type())
	}
	switch x := m.(type) {
	case Register:
		if x.Argv == nil {
			x.Argv = []string{}
		}
		if x.Config.Scopes == nil {
			x.Config.Scopes = []WireFile{}
		}
		m = x
	case Registered:
		if x.Chain == nil {
			x.Chain = []string{}
		}
		if x.Warnings == nil {
			x.Warnings = []string{}
		}
		m = x
	}
	fields, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(fields) < 2 || fields[0] != '{' {
		return nil, fmt.Errorf("forwarding: %T does not encode as an object", m)
	}
	env, _ := json.Marshal(header{V: Version, Kind: m.Type()})
	body := env[:len(env)-1] // {"v":1,"type":"…"
	if len(fields) > 2 {
		body = append(append(body, ','), fields[1:]...)
	} else {
		body = append(body, '}')
	}
	if len(body) > MaxRegisterFrame {
		return nil, fmt.Errorf("%w: %s message of %d bytes", ErrFrameTooLarge, m.Type(), len(body))
	}
	out := make([]byte, headerSize+len(body))
	binary.BigEndian.PutUint32(out, uint32(len(body)))
	copy(out[headerSize:], body)
	return out, nil
}

// WriteMessage encodes m and writes it in one Write call.
func WriteMessage(w io.Writer, m Message) error {
	b, err := Encode(m)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// ReadMessage reads, decodes and validates one frame.
func ReadMessage(r io.Reader, limit int) (Message, error) {
	body, err := ReadFrame(r, limit)
	if err != nil {
		return nil, err
	}
	return Decode(body)
}

// Decode reads one frame body. It returns a validated message, an
// *Unknown for a well-formed frame of an unknown type, or a *WireError.
func Decode(body []byte) (Message, error) {
	if len(body) == 0 || body[0] != '{' {
		return nil, wireErr("", "frame is not a JSON object")
	}
	if !utf8.Valid(body) {
		return nil, wireErr("", "frame is not UTF-8")
	}
	if err := jsonDepthWithin(body, maxJSONDepth); err != nil {
		return nil, err
	}
	var h header
	if err := json.Unmarshal(body, &h); err != nil {
		return nil, wireErr("", "bad envelope: %v", err)
	}
	if h.Kind == "" {
		return nil, wireErr("", "no message type")
	}
	if len(h.Kind) > 64 {
		return nil, wireErr("", "message type too long")
	}
	// hello is read whatever version its sender speaks, so versions can
	// be negotiated; every other message must be of a version we know.
	if h.Kind != TypeHello && (h.V < MinVersion || h.V > Version) {
		return nil, wireErr(h.Kind, "protocol version %d not spoken here (%d..%d)", h.V, MinVersion, Version)
	}
	dec, ok := decoders[h.Kind]
	if !ok {
		if !printableASCII(h.Kind) {
			return nil, wireErr("", "message type is not printable")
		}
		return &Unknown{Kind: h.Kind}, nil
	}
	m, err := dec(body)
	if err != nil {
		return nil, wireErr(h.Kind, "%v", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

func decodeAs[T Message](body []byte) (Message, error) {
	var x T
	err := json.Unmarshal(body, &x)
	return x, err
}

var decoders = map[string]func([]byte) (Message, error){
	TypeHello:      decodeAs[Hello],
	TypeWelcome:    decodeAs[Welcome],
	TypeRegister:   decodeAs[Register],
	TypeRegistered: decodeAs[Registered],
	TypeRefused:    decodeAs[Refused],
	TypeLog:        decodeAs[Log],
	TypeDropped:    decodeAs[Dropped],
	TypeDone:       decodeAs[Done],
}

// jsonDepthWithin checks that objects and arrays nest at most max deep,
// skipping strings, before the decoder (which recurses) sees them.
func jsonDepthWithin(b []byte, max int) error {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
			if depth > max {
				return wireErr("", "JSON nested deeper than %d", max)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}
