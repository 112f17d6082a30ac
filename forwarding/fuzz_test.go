package forwarding

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/permwrap/permwrap/engine"
)

func seedBodies(f *testing.F) {
	for _, m := range []Message{
		Hello{Proto: Proto, Min: 1, Max: 1, Software: "permwrap"},
		Welcome{Version: 1, Parent: "root", MaxRegister: MaxRegisterFrame},
		sampleRegister(),
		NewRegister("full", []string{"make"}, fullConfig(), nil, true),
		Registered{Node: 1, Label: "x#1", Chain: []string{"root", "x#1"}},
		Refused{Reason: "no"},
		Log{Line: `{"a":1}`},
		Dropped{Count: 1},
		Done{},
	} {
		b, err := Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[headerSize:])
	}
	f.Add([]byte(`{"v":1,"type":"other","x":[{"y":null}]}`))
	f.Add([]byte(`{"v":1,"type":"register","name":"a","argv":["x"],"config":{"scopes":[{"name":"s","unreadable":true}]},"env":{"home":"/h"}}`))
}

// FuzzDecode: no input panics the decoder; whatever it accepts is valid,
// and encodes back to a message that decodes to the same thing.
func FuzzDecode(f *testing.F) {
	seedBodies(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Decode(body)
		if err != nil {
			var we *WireError
			if !errors.As(err, &we) {
				t.Fatalf("decode error of the wrong kind: %T %v", err, err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted an invalid message: %v", err)
		}
		if _, ok := m.(*Unknown); ok {
			return
		}
		enc, err := Encode(m)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		m2, err := Decode(enc[headerSize:])
		if err != nil {
			t.Fatalf("re-decode of %s: %v", enc[headerSize:], err)
		}
		if !reflect.DeepEqual(normalize(m), normalize(m2)) {
			t.Fatalf("round trip changed the message:\n%#v\n%#v", m, m2)
		}
	})
}

// normalize clears empty-vs-nil differences JSON does not keep.
func normalize(m Message) Message {
	switch x := m.(type) {
	case Register:
		if len(x.Argv) == 0 {
			x.Argv = nil
		}
		if len(x.Config.Scopes) == 0 {
			x.Config.Scopes = nil
		}
		fix := func(f *WireFile) {
			if f != nil && len(f.Data) == 0 {
				f.Data = nil
			}
		}
		fix(x.Config.Global)
		fix(x.Config.HardGuards)
		for i := range x.Config.Scopes {
			fix(&x.Config.Scopes[i])
		}
		if len(x.Config.Projects) == 0 {
			x.Config.Projects = nil
		}
		for i := range x.Config.Projects {
			if len(x.Config.Projects[i].Data) == 0 {
				x.Config.Projects[i].Data = nil
			}
		}
		if len(x.Config.Protect) == 0 {
			x.Config.Protect = nil
		}
		return x
	case Registered:
		if len(x.Chain) == 0 {
			x.Chain = nil
		}
		if len(x.Warnings) == 0 {
			x.Warnings = nil
		}
		return x
	}
	return m
}

// FuzzStream: a byte stream of frames never makes the reader panic, read
// past a frame's limit, or allocate more than the limit.
func FuzzStream(f *testing.F) {
	var good bytes.Buffer
	for _, m := range []Message{Hello{Proto: Proto, Min: 1, Max: 1}, Done{}, Log{Line: `{}`}} {
		_ = WriteMessage(&good, m)
	}
	f.Add(good.Bytes(), uint16(1024))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, '{'}, uint16(64))
	f.Add([]byte{0, 0, 0, 2, '{', '}', 0, 0, 0}, uint16(8))
	f.Fuzz(func(t *testing.T, stream []byte, limit uint16) {
		r := bytes.NewReader(stream)
		for i := 0; i < 64; i++ {
			before := r.Len()
			body, err := ReadFrame(r, int(limit))
			if err != nil {
				if errors.Is(err, ErrFrameTooLarge) && before-r.Len() != headerSize {
					t.Fatalf("read %d bytes of an oversized frame", before-r.Len())
				}
				return
			}
			if len(body) > int(limit) {
				t.Fatalf("frame of %d bytes past the limit %d", len(body), limit)
			}
			_, _ = Decode(body)
		}
	})
}

// FuzzRegister: whatever a registration holds, the root either refuses
// it or registers a node that is never weaker than the root on a fixed
// set of checks — the wire cannot loosen anything.
func FuzzRegister(f *testing.F) {
	seedBodies(f)
	f.Add([]byte(`{"v":1,"type":"register","name":"a","argv":["x"],"config":{"global":{"name":"p","data":"eyJwZXJtaXNzaW9uIjogeyIqIjogImFsbG93In19"}},"yolo":true,"env":{"home":"/h","workspace":"/","tmpdir":"/"}}`))
	root := cfg(`{"permission": {"*": "ask", "write": {"/ws/**": "allow", "/etc/**": "deny"}, "read": {"*": "allow", "/h/.ssh/**": "ask"}, "bash": {"*": "allow", "git push *": "ask"}}}`,
		withHard(`{"protectedWrites": ["/ws/.git/hooks/**"]}`))
	rootReg, err := NewRegistry(root, nil, RegistryOptions{})
	if err != nil {
		f.Fatal(err)
	}
	checks := [][]engine.Check{
		write("/ws/a"), write("/etc/passwd"), write("/ws/.git/hooks/pre-commit"), write("/elsewhere"),
		read("/h/.ssh/id_rsa"), read("/ws/a"),
		{{Surface: engine.SurfaceBash, Value: "git push origin main"}}, {{Surface: engine.SurfaceBash, Value: "ls"}},
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Decode(body)
		if err != nil {
			return
		}
		reg, ok := m.(Register)
		if !ok {
			return
		}
		r, err := NewRegistry(root, rootReg.Root().Policy(), RegistryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n, _, err := r.Register(r.Root(), SpecOf(reg), Peer{PID: 2, Start: 1}, &fakePin{})
		if err != nil {
			var re *RefusedError
			if !errors.As(err, &re) {
				t.Fatalf("refusal of the wrong kind: %v", err)
			}
			return
		}
		for _, c := range checks {
			base := Decide(r.Root().Layers(), c...)
			v := Decide(n.Layers(), c...)
			if v.Result.Action < base.Result.Action || (base.Result.HumanOnly && v.Result.Action == engine.Ask && !v.Result.HumanOnly) {
				t.Fatalf("%v: node %s weaker than root %s", c, v, base)
			}
		}
	})
}
