package forwarding

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Validation: what each message must hold to be accepted, checked by
// Decode on every message read (Encode does not: the sender's data is its
// own, though Conn.Register checks a registration before sending it).

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
