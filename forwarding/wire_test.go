package forwarding

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

func frame(body string) []byte {
	b := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(b, uint32(len(body)))
	copy(b[4:], body)
	return b
}

func sampleRegister() Register {
	return Register{
		Name: "reviewer",
		Argv: []string{"pi", "--mode", "json"},
		Config: WireConfig{
			Global: &WireFile{Name: "/home/u/.config/permwrap/policy.jsonc", Data: []byte(`{"permission": {"*": "allow"}}`)},
			Scopes: []WireFile{
				{Name: "reviewer.jsonc", Data: []byte("{\"permission\": {\"write\": {\"*\": \"deny\"}}}\n\xff binary-safe")},
				{Name: "/gone.jsonc", Unreadable: true, Error: "open /gone.jsonc: no such file"},
				{Name: "empty.jsonc"},
			},
		},
		Env:  WireEnv{Home: "/home/u", Workspace: "/home/u/proj", TmpDir: "/tmp"},
		Yolo: true,
		Log:  true,
	}
}

// fullConfig is an engine.Config with every field set, as an inner's
// loader could produce it.
func fullConfig() engine.Config {
	return engine.Config{
		Global:     &engine.File{Name: "/c/policy.jsonc", Data: []byte(`{"extends": "strict", "permission": {"write": {"/ws/**": "allow"}}}`)},
		HardGuards: &engine.File{Name: "/c/hard-guards.jsonc", Data: []byte(`{"protectedWrites": ["/ws/.git/hooks/**"]}`)},
		Managed:    &engine.File{Name: "/etc/permwrap/managed.jsonc", Data: []byte(`{"permission": {"write": {"/ws/m/**": "deny"}}}`)},
		Scopes:     []engine.File{{Name: "/s.jsonc", Data: []byte(`{"permission": {"write": {"/ws/x": "deny"}}}`)}, {Name: "/gone.jsonc"}},
		Projects: []engine.Project{
			{File: engine.File{Name: "/ws/.permwrap/policy.jsonc", Data: []byte(`{"permission": {"write": {"/ws/p": "ask"}}}`)}, Dir: "/ws", Trusted: true},
			{File: engine.File{Name: "/ws/sub/.permwrap/policy.jsonc", Data: []byte(`{}`)}, Dir: "/ws/sub", Untrusted: "never trusted"},
		},
		Profile:        "read-only",
		DefaultExtends: engine.DefaultProfile,
		ScopesRequired: true,
		Protect:        []engine.Protected{{Path: "/c", Tree: true, Reason: "config"}, {Path: "/bin/permwrap", Reason: "binary"}},
		Env:            engine.Env{Home: "/h", Workspace: "/ws", TmpDir: "/tmp"},
		Yolo:           true,
		Audit:          true,
	}
}

// TestWireCarriesEveryConfigField: what the inner's loader read reaches
// the root whole, so the root compiles exactly the inner's policy. A
// field added to engine.Config fails here until the wire carries it.
func TestWireCarriesEveryConfigField(t *testing.T) {
	c := fullConfig()
	v := reflect.ValueOf(c)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			t.Fatalf("fullConfig leaves engine.Config.%s unset: set it, and carry it on the wire", v.Type().Field(i).Name)
		}
	}
	reg := NewRegister("inner", []string{"make", "test"}, c, nil, true)
	var buf bytes.Buffer
	if err := WriteMessage(&buf, reg); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMessage(&buf, MaxRegisterFrame)
	if err != nil {
		t.Fatal(err)
	}
	got := m.(Register).EngineConfig()
	if !reflect.DeepEqual(got, c) {
		t.Fatalf("the configuration changed on the wire:\ngot  %+v\nwant %+v", got, c)
	}
	// No base named: "none" must stay none, absent (an older inner)
	// must mean the default.
	c.DefaultExtends = ""
	if got := NewRegister("x", []string{"x"}, c, nil, false).EngineConfig(); got.DefaultExtends != engine.ExtendsNone {
		t.Fatalf("no default base became %q", got.DefaultExtends)
	}
	if got := (Register{Name: "x", Argv: []string{"x"}}).EngineConfig(); got.DefaultExtends != engine.DefaultProfile {
		t.Fatalf("an absent default base became %q", got.DefaultExtends)
	}
}

// TestWireConfigCompilesTheSame: the root's compile of what an inner
// read answers like the inner's own.
func TestWireConfigCompilesTheSame(t *testing.T) {
	c := fullConfig()
	c.Scopes = c.Scopes[:1]
	c.Yolo, c.Audit = false, false
	inner, _, err := engine.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	root, _, err := engine.Compile(NewRegister("x", []string{"x"}, inner.Config(), nil, false).EngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range []engine.Check{
		{Surface: engine.SurfaceWrite, Value: "/ws/a"}, {Surface: engine.SurfaceWrite, Value: "/ws/x"},
		{Surface: engine.SurfaceWrite, Value: "/ws/p"}, {Surface: engine.SurfaceWrite, Value: "/ws/.git/hooks/x"},
		{Surface: engine.SurfaceWrite, Value: "/c/policy.jsonc"}, {Surface: engine.SurfaceWrite, Value: "/bin/permwrap"},
		{Surface: engine.SurfaceRead, Value: "/h/.ssh/id_rsa"}, {Surface: engine.SurfaceBash, Value: "git push"},
	} {
		if a, b := inner.Decide(ch), root.Decide(ch); a.Action != b.Action || a.Rule.Pattern != b.Rule.Pattern {
			t.Errorf("%v: inner %v, root %v", ch, a, b)
		}
	}
}

func TestRegisterRefusesBadConfig(t *testing.T) {
	for name, mut := range map[string]func(*Register){
		"relative protect":   func(r *Register) { r.Config.Protect = []WireProtected{{Path: "rel"}} },
		"empty protect":      func(r *Register) { r.Config.Protect = []WireProtected{{}} },
		"unclean protect":    func(r *Register) { r.Config.Protect = []WireProtected{{Path: "/a/../b"}} },
		"project no dir":     func(r *Register) { r.Config.Projects = []WireProject{{Name: "p", Data: []byte("{}")}} },
		"project rel dir":    func(r *Register) { r.Config.Projects = []WireProject{{Name: "p", Dir: "ws"}} },
		"profile control":    func(r *Register) { r.Config.Profile = "a\x1b" },
		"too many projects":  func(r *Register) { r.Config.Projects = make([]WireProject, MaxProjects+1) },
		"too many protected": func(r *Register) { r.Config.Protect = make([]WireProtected, MaxProtect+1) },
	} {
		r := sampleRegister()
		mut(&r)
		if err := r.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	msgs := []Message{
		Hello{Proto: Proto, Min: 1, Max: 3, Software: "permwrap dev"},
		Welcome{Version: 1, Parent: "root", MaxRegister: MaxRegisterFrame},
		sampleRegister(),
		Registered{Node: 3, Label: "reviewer#3", Chain: []string{"root", "pi#1", "reviewer#3"}, Warnings: []string{"warning: x"}},
		Refused{Reason: "no"},
		Log{Line: `{"time":"t","event":"permission_request.denied","decidedBy":{"kind":"rule"}}`},
		Dropped{Count: 7},
		Done{},
	}
	var stream bytes.Buffer
	for _, m := range msgs {
		if err := WriteMessage(&stream, m); err != nil {
			t.Fatalf("%T: %v", m, err)
		}
	}
	for _, want := range msgs {
		got, err := ReadMessage(&stream, MaxRegisterFrame)
		if err != nil {
			t.Fatalf("%T: %v", want, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%T: got %#v want %#v", want, got, want)
		}
	}
	if _, err := ReadMessage(&stream, MaxFrame); err != io.EOF {
		t.Fatalf("end of stream: %v", err)
	}
}

func TestEngineConfigKeepsBytesAndUnreadable(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMessage(&buf, sampleRegister()); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMessage(&buf, MaxRegisterFrame)
	if err != nil {
		t.Fatal(err)
	}
	c := m.(Register).EngineConfig()
	if string(c.Scopes[0].Data) != "{\"permission\": {\"write\": {\"*\": \"deny\"}}}\n\xff binary-safe" {
		t.Fatalf("scope bytes changed: %q", c.Scopes[0].Data)
	}
	if c.Scopes[1].Data != nil {
		t.Fatal("an unreadable scope must keep nil data (fail-closed)")
	}
	if c.Scopes[2].Data == nil {
		t.Fatal("a readable empty scope must not turn unreadable")
	}
	if !c.Yolo || c.Env.Workspace != "/home/u/proj" || c.HardGuards != nil {
		t.Fatalf("config: %+v", c)
	}
	// And back the other way, as an inner permwrap sends what it read.
	wc, we := WireConfigOf(c, []engine.Warning{{Pos: engine.Position{File: "/gone.jsonc"}, Err: errors.New("gone")}})
	if !wc.Scopes[1].Unreadable || wc.Scopes[1].Error != "gone" || wc.Scopes[2].Unreadable || we.Home != "/home/u" {
		t.Fatalf("WireConfigOf: %+v %+v", wc, we)
	}
}

func TestTolerance(t *testing.T) {
	// Unknown fields are ignored.
	m, err := Decode([]byte(`{"v":1,"type":"done","future":{"a":[1,2]},"x":"y"}`))
	if err != nil || m.Type() != TypeDone {
		t.Fatalf("unknown fields: %v %v", m, err)
	}
	// Unknown types are returned, not errors.
	m, err = Decode([]byte(`{"v":1,"type":"heartbeat","n":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := m.(*Unknown); !ok || u.Type() != "heartbeat" {
		t.Fatalf("unknown type: %#v", m)
	}
	// A hello of a future version is still read.
	m, err = Decode([]byte(`{"v":9,"type":"hello","proto":"permwrap-nest","min":1,"max":9,"extra":true}`))
	if err != nil || m.(Hello).Max != 9 {
		t.Fatalf("future hello: %v %v", m, err)
	}
}

func TestRejects(t *testing.T) {
	big := strings.Repeat("a", MaxFileBytes+1)
	cases := map[string]string{
		"not an object":       `[1]`,
		"no type":             `{"v":1}`,
		"bad version":         `{"v":2,"type":"done"}`,
		"version zero":        `{"type":"done"}`,
		"too deep":            `{"v":1,"type":"done","x":[[[[[[[[[1]]]]]]]]]}`,
		"wrong proto":         `{"v":1,"type":"hello","proto":"x","min":1,"max":1}`,
		"bad range":           `{"v":1,"type":"hello","proto":"permwrap-nest","min":2,"max":1}`,
		"control in name":     `{"v":1,"type":"register","name":"a\u001b[2J","argv":["x"],"config":{}}`,
		"space in name":       `{"v":1,"type":"register","name":"a b","argv":["x"],"config":{}}`,
		"no argv":             `{"v":1,"type":"register","name":"a","argv":[],"config":{}}`,
		"relative env":        `{"v":1,"type":"register","name":"a","argv":["x"],"config":{},"env":{"home":"home/u"}}`,
		"unclean env":         `{"v":1,"type":"register","name":"a","argv":["x"],"config":{},"env":{"workspace":"/a/../b"}}`,
		"global unreadable":   `{"v":1,"type":"register","name":"a","argv":["x"],"config":{"global":{"name":"p","unreadable":true}}}`,
		"unnamed file":        `{"v":1,"type":"register","name":"a","argv":["x"],"config":{"hardGuards":{"data":""}}}`,
		"file too large":      `{"v":1,"type":"register","name":"a","argv":["x"],"config":{"global":{"name":"p","data":"` + b64(big) + `"}}}`,
		"NUL in argv":         `{"v":1,"type":"register","name":"a","argv":["x\u0000y"],"config":{}}`,
		"log with newline":    `{"v":1,"type":"log","line":"{}\n{}"}`,
		"log not json":        `{"v":1,"type":"log","line":"hello"}`,
		"log empty":           `{"v":1,"type":"log","line":""}`,
		"dropped zero":        `{"v":1,"type":"dropped","count":0}`,
		"registered root":     `{"v":1,"type":"registered","node":0,"label":"x"}`,
		"registered no label": `{"v":1,"type":"registered","node":2,"label":""}`,
		"field of wrong type": `{"v":1,"type":"dropped","count":"many"}`,
		"invalid utf8":        "{\"v\":1,\"type\":\"refused\",\"reason\":\"\xff\"}",
		"type not printable":  `{"v":1,"type":"\u0007"}`,
	}
	for name, body := range cases {
		if m, err := Decode([]byte(body)); err == nil {
			t.Errorf("%s: decoded %#v", name, m)
		}
	}
	tooMany := sampleRegister()
	tooMany.Config.Scopes = make([]WireFile, MaxScopes+1)
	for i := range tooMany.Config.Scopes {
		tooMany.Config.Scopes[i] = WireFile{Name: "s"}
	}
	if err := tooMany.Validate(); err == nil {
		t.Error("too many scopes accepted")
	}
	longArgv := sampleRegister()
	longArgv.Argv = make([]string, MaxArgs+1)
	for i := range longArgv.Argv {
		longArgv.Argv[i] = "x"
	}
	if err := longArgv.Validate(); err == nil {
		t.Error("too many arguments accepted")
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestFrameLimits(t *testing.T) {
	// An announced size past the limit is refused before anything is read
	// or allocated.
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], MaxRegisterFrame+1)
	r := &countingReader{r: bytes.NewReader(append(hdr[:], make([]byte, 10)...))}
	if _, err := ReadFrame(r, MaxRegisterFrame); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
	if r.n != 4 {
		t.Fatalf("read %d bytes past the header of an oversized frame", r.n-4)
	}
	binary.BigEndian.PutUint32(hdr[:], 0xffffffff)
	if _, err := ReadFrame(bytes.NewReader(hdr[:]), MaxFrame); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("4 GiB: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(frame("")), MaxFrame); err == nil {
		t.Fatal("empty frame accepted")
	}
	if _, err := ReadFrame(bytes.NewReader(frame(`{"v":1}`)[:6]), MaxFrame); err != io.ErrUnexpectedEOF {
		t.Fatalf("short body: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0, 0}), MaxFrame); err != io.ErrUnexpectedEOF {
		t.Fatalf("short header: %v", err)
	}
	// The small limit applies to every frame but a registration.
	reg := sampleRegister()
	reg.Config.Global.Data = bytes.Repeat([]byte("x"), MaxFrame)
	var buf bytes.Buffer
	if err := WriteMessage(&buf, reg); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadMessage(bytes.NewReader(buf.Bytes()), MaxFrame); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("registration under the small limit: %v", err)
	}
	if _, err := ReadMessage(bytes.NewReader(buf.Bytes()), MaxRegisterFrame); err != nil {
		t.Fatalf("registration under its limit: %v", err)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestNames(t *testing.T) {
	for _, ok := range []string{"pi", "reviewer-2", "a.b_c+d@e:f", strings.Repeat("x", MaxNameBytes)} {
		if !ValidName(ok) {
			t.Errorf("%q should be valid", ok)
		}
	}
	for _, bad := range []string{"", "a b", "a/b", "\x1b", "é", strings.Repeat("x", MaxNameBytes+1)} {
		if ValidName(bad) {
			t.Errorf("%q should be invalid", bad)
		}
	}
	for in, want := range map[string]string{"python3.12": "python3.12", "my tool": "my_tool", "": "node", "\x1b[31m": "__31m", "é": "__"} {
		if got := SanitizeName(in); got != want || !ValidName(got) {
			t.Errorf("SanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsKnock(t *testing.T) {
	if !IsKnock(KnockPath, KnockFlags) || !IsKnock(KnockPath, KnockFlags|0x8000) {
		t.Fatal("the knock is not recognised")
	}
	for _, c := range []struct {
		p string
		f uint64
	}{
		{KnockPath, 0}, {KnockPath, KnockFlags | 0x40}, {KnockPath + "x", KnockFlags}, {"/dev/null", KnockFlags},
	} {
		if IsKnock(c.p, c.f) {
			t.Errorf("%q %#x is not a knock", c.p, c.f)
		}
	}
}
