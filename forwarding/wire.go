package forwarding

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/permwrap/permwrap/engine"
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
	Global     *WireFile  `json:"global"`
	HardGuards *WireFile  `json:"hardGuards"`
	Scopes     []WireFile `json:"scopes"`
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

// Validation helpers. Strings that can reach a person's terminal (names,
// labels, reasons, file names) must hold no control characters; the
// prompt and the log escape what they show, this keeps the wire honest
// as well.

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func noControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// ValidName reports whether s may name a node: 1 to MaxNameBytes of
// letters, digits and ._+@:- (what shows in prompts and logs).
func ValidName(s string) bool {
	if s == "" || len(s) > MaxNameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '_' || c == '+' || c == '@' || c == ':' || c == '-':
		default:
			return false
		}
	}
	return true
}

// SanitizeName turns any string (a command's base name) into a valid
// node name: disallowed bytes become '_', it is cut to MaxNameBytes, and
// an empty result is "node".
func SanitizeName(s string) string {
	b := []byte(s)
	if len(b) > MaxNameBytes {
		b = b[:MaxNameBytes]
	}
	for i, c := range b {
		if !ValidName(string([]byte{c})) {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "node"
	}
	return string(b)
}

func validText(typ, field, s string, max int) error {
	if len(s) > max {
		return wireErr(typ, "%s longer than %d bytes", field, max)
	}
	if !noControl(s) {
		return wireErr(typ, "%s holds control characters", field)
	}
	return nil
}

func validAbsPath(typ, field, p string) error {
	if p == "" {
		return nil // engine.FillEnv leaves what it cannot find empty; patterns using it fail to compile
	}
	if err := validText(typ, field, p, MaxPathBytes); err != nil {
		return err
	}
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return wireErr(typ, "%s %q is not an absolute, clean path", field, p)
	}
	return nil
}

func (m Hello) Validate() error {
	if m.Proto != Proto {
		return wireErr(TypeHello, "not the %s protocol", Proto)
	}
	if m.Min < 1 || m.Max < m.Min || m.Max > 1<<16 {
		return wireErr(TypeHello, "bad version range %d..%d", m.Min, m.Max)
	}
	return validText(TypeHello, "software", m.Software, maxSoftware)
}

func (m Welcome) Validate() error {
	if m.Version < MinVersion || m.Version > Version {
		return wireErr(TypeWelcome, "version %d not spoken here", m.Version)
	}
	if m.MaxRegister < 1024 || m.MaxRegister > MaxRegisterFrame {
		return wireErr(TypeWelcome, "registration limit %d out of range", m.MaxRegister)
	}
	return validText(TypeWelcome, "parent", m.Parent, maxLabelBytes)
}

func (f *WireFile) validate(field string, scope bool) error {
	if f.Name == "" {
		return wireErr(TypeRegister, "%s has no name", field)
	}
	if err := validText(TypeRegister, field+" name", f.Name, MaxPathBytes); err != nil {
		return err
	}
	if len(f.Data) > MaxFileBytes {
		return wireErr(TypeRegister, "%s %s is larger than %d bytes", field, f.Name, MaxFileBytes)
	}
	if f.Unreadable {
		if !scope {
			return wireErr(TypeRegister, "%s %s marked unreadable: only a --policy scope may be", field, f.Name)
		}
		if len(f.Data) > 0 {
			return wireErr(TypeRegister, "%s %s is both unreadable and has data", field, f.Name)
		}
	}
	return validText(TypeRegister, field+" error", f.Error, MaxReasonBytes)
}

func (m Register) Validate() error {
	if !ValidName(m.Name) {
		return wireErr(TypeRegister, "node name %q: use 1 to %d letters, digits or ._+@:-", m.Name, MaxNameBytes)
	}
	if len(m.Argv) == 0 {
		return wireErr(TypeRegister, "no command")
	}
	if len(m.Argv) > MaxArgs {
		return wireErr(TypeRegister, "command has more than %d arguments", MaxArgs)
	}
	total := 0
	for _, a := range m.Argv {
		total += len(a)
		if strings.IndexByte(a, 0) >= 0 {
			return wireErr(TypeRegister, "command argument holds a NUL byte")
		}
	}
	if total > MaxArgvBytes {
		return wireErr(TypeRegister, "command longer than %d bytes", MaxArgvBytes)
	}
	if m.Config.Global != nil {
		if err := m.Config.Global.validate("global policy", false); err != nil {
			return err
		}
	}
	if m.Config.HardGuards != nil {
		if err := m.Config.HardGuards.validate("hard guards", false); err != nil {
			return err
		}
	}
	if len(m.Config.Scopes) > MaxScopes {
		return wireErr(TypeRegister, "more than %d policy scopes", MaxScopes)
	}
	for i := range m.Config.Scopes {
		if err := m.Config.Scopes[i].validate("policy scope", true); err != nil {
			return err
		}
	}
	if len(m.Config.Projects) > MaxProjects {
		return wireErr(TypeRegister, "more than %d project policies", MaxProjects)
	}
	for _, pr := range m.Config.Projects {
		f := WireFile{Name: pr.Name, Data: pr.Data}
		if err := f.validate("project policy", false); err != nil {
			return err
		}
		if err := validAbsPath(TypeRegister, "project directory", pr.Dir); err != nil || pr.Dir == "" {
			if err == nil {
				err = wireErr(TypeRegister, "project policy %s has no directory", pr.Name)
			}
			return err
		}
		if err := validText(TypeRegister, "project trust", pr.Untrusted, MaxReasonBytes); err != nil {
			return err
		}
	}
	for _, x := range []struct{ field, v string }{{"profile", m.Config.Profile}, {"defaultExtends", m.Config.DefaultExtends}} {
		if x.v != "" && !ValidName(x.v) {
			return wireErr(TypeRegister, "%s %q is not a profile name", x.field, x.v)
		}
	}
	if len(m.Config.Protect) > MaxProtect {
		return wireErr(TypeRegister, "more than %d protected paths", MaxProtect)
	}
	for _, pr := range m.Config.Protect {
		if pr.Path == "" {
			return wireErr(TypeRegister, "a protected path is empty")
		}
		if err := validAbsPath(TypeRegister, "protected path", pr.Path); err != nil {
			return err
		}
		if err := validText(TypeRegister, "protection reason", pr.Reason, MaxReasonBytes); err != nil {
			return err
		}
	}
	for _, p := range []struct{ name, v string }{{"home", m.Env.Home}, {"workspace", m.Env.Workspace}, {"tmpdir", m.Env.TmpDir}} {
		if err := validAbsPath(TypeRegister, p.name, p.v); err != nil {
			return err
		}
	}
	return nil
}

// EngineConfig is the registration's configuration as engine.Compile
// takes it. Unreadable scopes keep nil Data (fail-closed); a readable
// empty file keeps empty, non-nil Data.
func (m Register) EngineConfig() engine.Config {
	file := func(f *WireFile) *engine.File {
		if f == nil {
			return nil
		}
		d := f.Data
		if d == nil {
			d = []byte{}
		}
		return &engine.File{Name: f.Name, Data: d}
	}
	wc := m.Config
	cfg := engine.Config{
		Global:         file(wc.Global),
		HardGuards:     file(wc.HardGuards),
		Profile:        wc.Profile,
		DefaultExtends: wc.DefaultExtends,
		ScopesRequired: wc.ScopesRequired,
		Env:            engine.Env{Home: m.Env.Home, Workspace: m.Env.Workspace, TmpDir: m.Env.TmpDir},
		Yolo:           m.Yolo,
		Audit:          m.Audit,
	}
	// An inner that did not say (an older one) read its global policy
	// with the default base, as engine.ReadConfig does; "none" is none.
	if cfg.DefaultExtends == "" {
		cfg.DefaultExtends = engine.DefaultProfile
	}
	for _, s := range wc.Scopes {
		if s.Unreadable {
			cfg.Scopes = append(cfg.Scopes, engine.File{Name: s.Name, Data: nil})
			continue
		}
		cfg.Scopes = append(cfg.Scopes, *file(&s))
	}
	for _, pr := range wc.Projects {
		f := file(&WireFile{Name: pr.Name, Data: pr.Data})
		cfg.Projects = append(cfg.Projects, engine.Project{File: *f, Dir: pr.Dir, Trusted: pr.Trusted, Untrusted: pr.Untrusted})
	}
	for _, pr := range wc.Protect {
		cfg.Protect = append(cfg.Protect, engine.Protected{Path: pr.Path, Tree: pr.Tree, Reason: pr.Reason})
	}
	return cfg
}

// WireConfigOf is the inverse of EngineConfig: how an inner permwrap
// sends what its loader read (engine.Policy.Config). warnings name
// scopes it could not read (their Data is nil).
func WireConfigOf(cfg engine.Config, warnings []engine.Warning) (WireConfig, WireEnv) {
	file := func(f *engine.File) *WireFile {
		if f == nil {
			return nil
		}
		return &WireFile{Name: f.Name, Data: f.Data}
	}
	wc := WireConfig{
		Global: file(cfg.Global), HardGuards: file(cfg.HardGuards), Scopes: []WireFile{},
		Profile: cfg.Profile, DefaultExtends: cfg.DefaultExtends, ScopesRequired: cfg.ScopesRequired,
	}
	if wc.DefaultExtends == "" {
		wc.DefaultExtends = engine.ExtendsNone // "" on the wire means the default
	}
	for _, s := range cfg.Scopes {
		wf := WireFile{Name: s.Name, Data: s.Data}
		if s.Data == nil {
			wf.Unreadable = true
			for _, w := range warnings {
				if w.Pos.File == s.Name && w.Err != nil {
					wf.Error = elideString(w.Err.Error(), MaxReasonBytes)
				}
			}
		}
		wc.Scopes = append(wc.Scopes, wf)
	}
	for _, pr := range cfg.Projects {
		wc.Projects = append(wc.Projects, WireProject{Name: pr.Name, Data: pr.Data, Dir: pr.Dir, Trusted: pr.Trusted, Untrusted: elideString(sanitizeText(pr.Untrusted), MaxReasonBytes)})
	}
	for _, pr := range cfg.Protect {
		if pr.Path == "" {
			continue
		}
		// The root checks the paths are absolute and clean; a relative
		// one (a log.path the policy names relatively) is where the inner
		// would open it: from its working directory.
		if abs, err := filepath.Abs(pr.Path); err == nil {
			pr.Path = abs
		}
		wc.Protect = append(wc.Protect, WireProtected{Path: pr.Path, Tree: pr.Tree, Reason: elideString(sanitizeText(pr.Reason), MaxReasonBytes)})
	}
	return wc, WireEnv{Home: cfg.Env.Home, Workspace: cfg.Env.Workspace, TmpDir: cfg.Env.TmpDir}
}

// NewRegister is the registration an inner permwrap sends: its name, its
// command, the configuration its loader compiled (policy.Config()) and
// the loader's warnings, and whether it wants its subtree's records.
func NewRegister(name string, argv []string, cfg engine.Config, warnings []engine.Warning, wantLog bool) Register {
	wc, we := WireConfigOf(cfg, warnings)
	return Register{Name: name, Argv: append([]string(nil), argv...), Config: wc, Env: we, Yolo: cfg.Yolo, Audit: cfg.Audit, Log: wantLog}
}

const maxLabelBytes = MaxNameBytes + 12 // name#id

func (m Registered) Validate() error {
	if m.Node == 0 {
		return wireErr(TypeRegistered, "node 0 is the root's")
	}
	if err := validText(TypeRegistered, "label", m.Label, maxLabelBytes); err != nil {
		return err
	}
	if m.Label == "" {
		return wireErr(TypeRegistered, "no label")
	}
	if len(m.Chain) > maxChainLabels {
		return wireErr(TypeRegistered, "chain longer than %d", maxChainLabels)
	}
	for _, l := range m.Chain {
		if err := validText(TypeRegistered, "chain label", l, maxLabelBytes); err != nil {
			return err
		}
	}
	if len(m.Warnings) > MaxWarnings {
		return wireErr(TypeRegistered, "more than %d warnings", MaxWarnings)
	}
	for _, w := range m.Warnings {
		if err := validText(TypeRegistered, "warning", w, MaxReasonBytes); err != nil {
			return err
		}
	}
	return nil
}

func (m Refused) Validate() error {
	return validText(TypeRefused, "reason", m.Reason, MaxReasonBytes)
}

func (m Log) Validate() error {
	if len(m.Line) == 0 || len(m.Line) > MaxLogLine {
		return wireErr(TypeLog, "record of %d bytes (1..%d)", len(m.Line), MaxLogLine)
	}
	if strings.ContainsAny(m.Line, "\n\r") {
		return wireErr(TypeLog, "record holds a line break")
	}
	if !json.Valid([]byte(m.Line)) || m.Line[0] != '{' {
		return wireErr(TypeLog, "record is not a JSON object")
	}
	return nil
}

func (m Dropped) Validate() error {
	if m.Count <= 0 {
		return wireErr(TypeDropped, "count %d", m.Count)
	}
	return nil
}

func (Done) Validate() error       { return nil }
func (u *Unknown) Validate() error { return nil }

// elideString cuts s to at most max bytes on a rune boundary, marking the
// cut with "…".
func elideString(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
