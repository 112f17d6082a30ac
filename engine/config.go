package engine

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tailscale/hujson"
)

// ConfigError is one problem in a configuration file, at the offending
// token. Several problems in one file are returned together (errors.Join),
// so a user fixes them all in one pass.
type ConfigError struct {
	Pos Position
	Msg string
}

func (e *ConfigError) Error() string {
	if p := e.Pos.String(); p != "" {
		return p + ": " + e.Msg
	}
	return e.Msg
}

// Warning is a problem that did not stop permwrap but that a person
// should see: a pattern no path can match, a --policy-optional scope
// that failed to load (which turns every allow into an ask), a project
// policy that changed since it was trusted.
type Warning struct {
	Pos Position // the file, and where in it when known
	Msg string   // what is wrong and what permwrap does about it
	Err error    // the underlying error, when there is one
}

// String renders "file:line:col: message: error". It carries no
// "warning:" prefix: the caller says how it is shown.
func (w Warning) String() string {
	s := w.Msg
	if p := w.Pos.String(); p != "" {
		s = p + ": " + s
	}
	if w.Err != nil {
		s += ": " + w.Err.Error()
	}
	return s
}

// fileKind says which keys a configuration file may hold.
type fileKind uint8

const (
	kindGlobal    fileKind = iota // policy.jsonc or the embedded default
	kindHardGuard                 // hard-guards.jsonc
	kindScope                     // a --policy FILE
	kindProject                   // a project's .permwrap/policy.jsonc
	kindProfile                   // an embedded profile
	kindManaged                   // the managed policy (managed.go)
)

// AuthorizerSpec is one automated reviewer: a program run with the ask
// (Command), or an HTTPS endpoint the ask is posted to (Remote; see
// authorizer_url.go). Exactly one of them is set.
type AuthorizerSpec struct {
	Command []string
	Remote  *RemoteSpec
	Timeout time.Duration // from "timeoutMs"; default 3s (a url's: 5m)
}

// Delegation limits what automated reviewers may allow.
type Delegation struct {
	AllowedSurfaces  []Surface // surfaces on which reviewers may allow; empty: none (they can only deny)
	ExcludedSurfaces []Surface
}

// TypoPath suggests a corrected path when a denied path matches From.
type TypoPath struct {
	From string // pattern as written
	To   string // ~ and ${VAR} expanded
	pat  *pathPattern
}

// Match reports whether path matches the From pattern.
func (t TypoPath) Match(path string) bool { return t.pat != nil && t.pat.match(path) }

// LogSettings configures the review log.
type LogSettings struct {
	Path string // "" → the review log's default location
	// ReadAllows is how reads allowed without asking are logged:
	// "summary" (one record per process), "each" (one per read), "none".
	ReadAllows string
	// ScratchWrites is how writes a rule allowed in the temporary
	// directories and the cache home are logged: "summary" (one record
	// per process), "each" (one per write).
	ScratchWrites string
	FieldWidth    int // longest value written per field before truncation
	// RotateBytes: the log is rotated when it would pass this size (0:
	// never); Keep older files are kept.
	RotateBytes int64
	Keep        int
}

// Settings is the non-rule configuration. It comes from the global
// policy only; see docs/policy.md for why a scope may not set it.
type Settings struct {
	AuthorizerChain []string
	Authorizers     map[string]AuthorizerSpec
	ModelDelegation Delegation
	AskTimeout      time.Duration
	DenialNotice    string // "stderr" or "off"
	// Proxy is "env" (permwrap's egress proxy runs and the command's
	// proxy variables name it) or "off" (no proxy, no variables).
	Proxy     string
	TypoPaths []TypoPath
	Log       LogSettings
	Yolo      bool
	// Listings is how a listing of a directory (a read-only open with
	// O_DIRECTORY) is treated: "free" (left to the kernel, never judged:
	// names in a directory are not guarded, the files' contents are) or
	// "judged" (a read of the directory, like any other open).
	Listings string
	// Events: where records are sent besides the review log (events.go).
	Events EventsSettings
}

// The values of the "listings" setting.
const (
	ListingsFree   = "free"
	ListingsJudged = "judged"
)

// Defaults for Settings.
const (
	DefaultAskTimeout        = 10 * time.Minute
	DefaultAuthorizerTimeout = 3 * time.Second
	DefaultLogFieldWidth     = 512
	DefaultLogRotateMB       = 10
	DefaultLogKeep           = 3
	// MaxLogKeep bounds log.keep: the older files a --log or log.path
	// outside permwrap's state directory has are protected by name.
	MaxLogKeep = 9
)

func defaultSettings() Settings {
	return Settings{
		Authorizers:  map[string]AuthorizerSpec{},
		AskTimeout:   DefaultAskTimeout,
		DenialNotice: "stderr",
		Proxy:        "env",
		Listings:     ListingsFree,
		Log:          LogSettings{ReadAllows: "summary", ScratchWrites: "summary", FieldWidth: DefaultLogFieldWidth, RotateBytes: DefaultLogRotateMB << 20, Keep: DefaultLogKeep},
	}
}

// rawRule is a rule read from a file, pattern compiled.
type rawRule struct {
	rule Rule
	path *pathPattern
	bash *bashPattern
	net  *netPattern
}

// fileConfig is what one file contributed.
type fileConfig struct {
	name      string
	rules     []rawRule
	fallback  *Rule // permission["*"]
	protected []rawRule
	settings  Settings
	set       map[string]bool // settings keys the file wrote, for layering
	yolo      bool
	extends   string // "" when the file does not say
	extendsAt Position
	warns     []Warning
	forbid    []forbidEntry // the managed policy's "forbid"
}

// parser walks one hujson document and collects every error in it.
type parser struct {
	name  string
	data  []byte
	lines []int // byte offset of each line start
	env   Env
	errs  []error
	warns []Warning
}

func (p *parser) pos(off int) Position {
	if p.lines == nil {
		p.lines = []int{0}
		for i, c := range p.data {
			if c == '\n' {
				p.lines = append(p.lines, i+1)
			}
		}
	}
	l := sort.Search(len(p.lines), func(i int) bool { return p.lines[i] > off }) - 1
	if l < 0 {
		l = 0
	}
	return Position{File: p.name, Line: l + 1, Column: off - p.lines[l] + 1}
}

func (p *parser) errorf(off int, format string, args ...any) {
	p.errs = append(p.errs, &ConfigError{Pos: p.pos(off), Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) warnf(off int, format string, args ...any) {
	p.warns = append(p.warns, Warning{Pos: p.pos(off), Msg: fmt.Sprintf(format, args...)})
}

// Limits on what a configuration file may be; real ones are far below.
const (
	maxConfigSize  = 4 << 20
	maxConfigDepth = 64
)

// nestingWithin reports whether brackets nest at most max deep, skipping
// strings and comments, and where the first too-deep bracket is.
func nestingWithin(b []byte, max int) (int, bool) {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case '/':
			if i+1 < len(b) && b[i+1] == '/' {
				for i < len(b) && b[i] != '\n' {
					i++
				}
			} else if i+1 < len(b) && b[i+1] == '*' {
				i += 2
				for i+1 < len(b) && !(b[i] == '*' && b[i+1] == '/') {
					i++
				}
				i++
			}
		case '{', '[':
			depth++
			if depth > max {
				return i, false
			}
		case '}', ']':
			depth--
		}
	}
	return 0, true
}

var hujsonPos = regexp.MustCompile(`^hujson: line (\d+), column (\d+): (.*)$`)

// parseConfig reads one configuration file. The returned error, if any,
// joins every *ConfigError found.
func parseConfig(name string, data []byte, kind fileKind, env Env) (*fileConfig, error) {
	p := &parser{name: name, data: data, env: env}
	fc := &fileConfig{name: name, settings: defaultSettings(), set: map[string]bool{}}
	v, err := p.document()
	if err != nil {
		return nil, err
	}
	top, ok := p.object(&v, "the top level")
	if !ok {
		return nil, errors.Join(p.errs...)
	}
	for _, m := range p.members(top) {
		p.topLevel(topKey{key: m.Name.Value.(hujson.Literal).String(), off: m.Name.StartOffset, val: &m.Value}, kind, fc)
	}
	if len(p.errs) > 0 {
		// Report in reading order, whatever order the checks ran in.
		sort.SliceStable(p.errs, func(i, j int) bool {
			a, b := p.errs[i].(*ConfigError).Pos, p.errs[j].(*ConfigError).Pos
			return a.Line < b.Line || a.Line == b.Line && a.Column < b.Column
		})
		return nil, errors.Join(p.errs...)
	}
	fc.warns = p.warns
	return fc, nil
}

// document parses the file as JSONC, refusing an empty file, one too
// large, or one nested too deep, before the parser sees it.
func (p *parser) document() (hujson.Value, error) {
	name, data := p.name, p.data
	if len(bytes.TrimSpace(data)) == 0 {
		return hujson.Value{}, &ConfigError{Pos: Position{File: name}, Msg: "empty file: write {} for an empty policy"}
	}
	if len(data) > maxConfigSize {
		return hujson.Value{}, &ConfigError{Pos: Position{File: name}, Msg: fmt.Sprintf("file is larger than %d bytes", maxConfigSize)}
	}
	if off, ok := nestingWithin(data, maxConfigDepth); !ok {
		// The JSONC parser recurses per level; refuse before it can
		// exhaust the stack on a hostile scope file.
		return hujson.Value{}, &ConfigError{Pos: p.pos(off), Msg: fmt.Sprintf("nested deeper than %d levels", maxConfigDepth)}
	}
	v, err := hujson.Parse(data)
	if err != nil {
		msg := err.Error()
		if m := hujsonPos.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			col, _ := strconv.Atoi(m[2])
			return hujson.Value{}, &ConfigError{Pos: Position{File: name, Line: line, Column: col}, Msg: "syntax error: " + m[3]}
		}
		return hujson.Value{}, &ConfigError{Pos: Position{File: name}, Msg: "syntax error: " + msg}
	}
	return v, nil
}

// members returns an object's members, reporting duplicate names (JSON
// leaves them undefined; a policy must not depend on which one wins).
func (p *parser) members(obj *hujson.Object) []hujson.ObjectMember {
	seen := make(map[string]bool, len(obj.Members))
	out := obj.Members[:0:0]
	for _, m := range obj.Members {
		k := m.Name.Value.(hujson.Literal).String()
		if seen[k] {
			p.errorf(m.Name.StartOffset, "duplicate key %q", k)
			continue
		}
		seen[k] = true
		out = append(out, m)
	}
	return out
}

func kindName(v hujson.ValueTrimmed) string {
	switch v.Kind() {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "an unknown value"
}

func (p *parser) object(v *hujson.Value, what string) (*hujson.Object, bool) {
	if o, ok := v.Value.(*hujson.Object); ok {
		return o, true
	}
	p.errorf(v.StartOffset, "%s: want an object, got %s", what, kindName(v.Value))
	return nil, false
}

func (p *parser) array(v *hujson.Value, what string) []hujson.Value {
	if a, ok := v.Value.(*hujson.Array); ok {
		return a.Elements
	}
	p.errorf(v.StartOffset, "%s: want an array, got %s", what, kindName(v.Value))
	return nil
}

func (p *parser) str(v *hujson.Value, what string) (string, bool) {
	if l, ok := v.Value.(hujson.Literal); ok && l.Kind() == '"' {
		return l.String(), true
	}
	p.errorf(v.StartOffset, "%s: want a string, got %s", what, kindName(v.Value))
	return "", false
}

func (p *parser) boolean(v *hujson.Value, what string) (bool, bool) {
	if l, ok := v.Value.(hujson.Literal); ok && (l.Kind() == 't' || l.Kind() == 'f') {
		return l.Bool(), true
	}
	p.errorf(v.StartOffset, "%s: want true or false, got %s", what, kindName(v.Value))
	return false, false
}

func (p *parser) integer(v *hujson.Value, what string, min int64) (int64, bool) {
	if l, ok := v.Value.(hujson.Literal); ok && l.Kind() == '0' {
		n, err := strconv.ParseInt(string(l), 10, 64)
		if err == nil && n >= min && n <= 1<<31 {
			return n, true
		}
		p.errorf(v.StartOffset, "%s: want a whole number from %d to %d, got %s", what, min, int64(1)<<31, string(l))
		return 0, false
	}
	p.errorf(v.StartOffset, "%s: want a number, got %s", what, kindName(v.Value))
	return 0, false
}

func (p *parser) action(v *hujson.Value, what string) (Action, bool) {
	s, ok := p.str(v, what)
	if !ok {
		return 0, false
	}
	a, ok := ParseAction(s)
	if !ok {
		p.errorf(v.StartOffset, "unknown action %q (want allow, ask or deny)", s)
	}
	return a, ok
}

// ruleValue reads an action string or {"action": …, "reason": …,
// "content": "secret"}. contentOff is the offset of the "content" key
// (-1 without one), for the caller's checks of where content may appear.
func (p *parser) ruleValue(v *hujson.Value) (a Action, reason string, content Content, contentOff int, ok bool) {
	contentOff = -1
	if _, isObj := v.Value.(*hujson.Object); !isObj {
		if l, ok := v.Value.(hujson.Literal); !ok || l.Kind() != '"' {
			p.errorf(v.StartOffset, "rule: want an action string or {\"action\": …, \"reason\": …}, got %s", kindName(v.Value))
			return 0, "", 0, -1, false
		}
		a, ok := p.action(v, "rule")
		return a, "", ContentAny, -1, ok
	}
	obj := v.Value.(*hujson.Object)
	var (
		hasAct bool
		good   = true
	)
	for _, m := range p.members(obj) {
		k := m.Name.Value.(hujson.Literal).String()
		switch k {
		case "action":
			act, ok := p.action(&m.Value, "action")
			a, hasAct = act, ok
			good = good && ok
		case "reason":
			s, ok := p.str(&m.Value, "reason")
			reason = s
			good = good && ok
		case "content":
			s, ok := p.str(&m.Value, "content")
			switch {
			case !ok:
				good = false
			case s == "secret":
				content, contentOff = ContentSecret, m.Name.StartOffset
			default:
				p.errorf(m.Value.StartOffset, "unknown content condition %q (want \"secret\")", s)
				good = false
			}
		default:
			p.errorf(m.Name.StartOffset, "unknown key %q in a rule (want action, reason, content)", k)
			good = false
		}
	}
	if !hasAct && good {
		p.errorf(v.StartOffset, "rule has no \"action\"")
		good = false
	}
	if good && contentOff >= 0 && a == Allow {
		p.errorf(contentOff, "\"content\": \"secret\" narrows an ask or deny to secret-looking files; it cannot make an allow conditional")
		good = false
	}
	return a, reason, content, contentOff, good && hasAct
}

// rule compiles one pattern on one surface; off is the pattern's offset.
func (p *parser) rule(s Surface, pattern string, a Action, reason string, off int) (rawRule, bool) {
	r := rawRule{rule: Rule{Surface: s, Pattern: pattern, Action: a, Reason: reason, Pos: p.pos(off)}}
	var err error
	switch s {
	case SurfaceBash:
		if err = lintCommandPattern(pattern); err == nil {
			if t := strings.TrimSpace(pattern); t != pattern && t != "" {
				p.warnf(off, "pattern %q has leading or trailing spaces; no command line does (did you mean %q?)", pattern, t)
			}
			r.bash, err = compileBashPattern(pattern)
			if err == nil && r.bash.opt != nil {
				if u := r.bash.opt.UnknownOptions(); len(u) > 0 {
					p.warnf(off, "pattern %q names %s, which %s does not accept: it matches only a command written that way, which the program refuses (docs/bash-rules.md, \"Options in command rules\")", pattern, strings.Join(u, ", "), commandNamed(pattern))
				}
			}
		}
	case SurfaceNet:
		r.net, err = compileNetPattern(pattern, p.env)
		var ne *NetPatternError
		if errors.As(err, &ne) {
			// Point at the offending character when the key is written
			// without escapes, so its bytes are the pattern's.
			if q := `"` + pattern + `"`; off+len(q) <= len(p.data) && string(p.data[off:off+len(q)]) == q {
				off += 1 + ne.Offset
			}
		}
	default:
		var exp string
		exp, err = ExpandPathPattern(pattern, p.env)
		if err == nil {
			if t := strings.TrimSpace(pattern); t != pattern && t != "" {
				p.warnf(off, "pattern %q has leading or trailing spaces, which are part of the path it matches (did you mean %q?)", pattern, t)
			}
			if why := unmatchable(exp); why != "" {
				p.warnf(off, "pattern %q can never match: %s", pattern, why)
			}
			r.path, err = compilePathPattern(exp)
		}
	}
	if err != nil {
		p.errorf(off, "pattern %q: %v", pattern, err)
		return r, false
	}
	return r, true
}

// lintCommandPattern refuses the command patterns other tools use that
// would silently match nothing here.
// commandNamed is the program and subcommand a command pattern names:
// its words before the first option or star.
func commandNamed(pattern string) string {
	var out []string
	for _, w := range strings.Fields(pattern) {
		if strings.HasPrefix(w, "-") || strings.Contains(w, "*") {
			break
		}
		out = append(out, w)
	}
	return strings.Join(out, " ")
}

func lintCommandPattern(pattern string) error {
	if strings.HasSuffix(pattern, ":*") {
		return fmt.Errorf("\":*\" is Claude Code's prefix syntax, which matches nothing here: write %q (a trailing \" *\" also matches the bare command)", strings.TrimSuffix(pattern, ":*")+" *")
	}
	return nil
}

func (p *parser) permission(v *hujson.Value, kind fileKind, fc *fileConfig) {
	obj, ok := p.object(v, "permission")
	if !ok {
		return
	}
	for _, m := range p.members(obj) {
		name := m.Name.Value.(hujson.Literal).String()
		off := m.Name.StartOffset
		if name == "*" {
			if kind == kindManaged {
				p.errorf(off, "a universal fallback \"*\" is not allowed in the managed policy: it names what it decides; the fallback belongs to each user's policy.jsonc")
				continue
			}
			if kind == kindHardGuard {
				p.errorf(off, "a universal fallback \"*\" is not allowed in hard-guards.jsonc: a hard guard names what it guards; put the fallback in policy.jsonc")
				continue
			}
			if a, reason, _, cOff, ok := p.ruleValue(&m.Value); ok {
				if cOff >= 0 {
					p.errorf(cOff, "the universal fallback \"*\" cannot depend on content")
					continue
				}
				fc.fallback = &Rule{Pattern: "*", Action: a, Reason: reason, Pos: p.pos(off)}
			}
			continue
		}
		s, ok := ParseSurface(name)
		if !ok {
			p.errorf(off, "unknown surface %q (want read, write, exec, bash, path, net or \"*\")", name)
			continue
		}
		switch m.Value.Value.(type) {
		case hujson.Literal:
			// "exec": "allow" means {"*": "allow"}.
			a, ok := p.action(&m.Value, name)
			if ok {
				if r, ok := p.rule(s, "*", a, "", m.Value.StartOffset); ok {
					fc.rules = append(fc.rules, r)
				}
			}
		case *hujson.Object:
			for _, rm := range p.members(m.Value.Value.(*hujson.Object)) {
				pat := rm.Name.Value.(hujson.Literal).String()
				a, reason, content, cOff, ok := p.ruleValue(&rm.Value)
				if !ok {
					continue
				}
				if cOff >= 0 {
					switch {
					case s != SurfaceRead:
						p.errorf(cOff, "\"content\" applies to read rules only: what a file holds is known when it is read")
						continue
					case kind == kindHardGuard:
						p.errorf(cOff, "\"content\" is not allowed in hard-guards.jsonc: a hard guard does not depend on what a file holds")
						continue
					case kind == kindManaged:
						p.errorf(cOff, "\"content\" is not allowed in the managed policy: its rules do not depend on what a file holds")
						continue
					}
				}
				if r, ok := p.rule(s, pat, a, reason, rm.Name.StartOffset); ok {
					r.rule.Content = content
					fc.rules = append(fc.rules, r)
				}
			}
		default:
			p.errorf(m.Value.StartOffset, "surface %q: want an action string or an object of pattern: action, got %s", name, kindName(m.Value.Value))
		}
	}
}
