package engine

import (
	"errors"
	"net/netip"
	"strconv"
	"testing"
)

// FuzzNetPattern: any string either compiles or fails with an offset
// inside it; a compiled pattern matches what it names.
func FuzzNetPattern(f *testing.F) {
	for _, s := range []string{
		"*", "*:443", "github.com:443", "*.npmjs.org", "127.0.0.1:*", "169.254.169.254",
		"unix:/var/run/docker.sock", "10.0.0.0/8", "[::1]:*", "fd00:ec2::254", "[fd00::/8]:22",
		"<nameserver>:53", "unix:@/tmp/.X11-unix/*", "unix:~/x/*.sock", "::ffff:10.0.0.0/104",
		"a..b", "[::1", "x:0", "api.*.com", "fe80::1%eth0", "unix:${HOME}/s", "é.com",
	} {
		f.Add(s)
	}
	values := []string{"github.com:443", "a.npmjs.org:443", "127.0.0.1:80", "[::1]:22", "10.1.2.3:22",
		"<nameserver>:53", "unix:/var/run/docker.sock", "unix:@x", "169.254.169.254:80"}
	f.Fuzz(func(t *testing.T, raw string) {
		np, err := compileNetPattern(raw, testEnv)
		if err != nil {
			var ne *NetPatternError
			if !errors.As(err, &ne) {
				t.Fatalf("%q: error %T is not a *NetPatternError", raw, err)
			}
			if ne.Offset < 0 || ne.Offset > len(raw) {
				t.Fatalf("%q: offset %d outside the pattern", raw, ne.Offset)
			}
			return
		}
		for _, v := range values {
			_ = np.matchValue(v)
		}
		port := np.port
		if port == 0 {
			port = 1
		}
		ps := ":" + strconv.Itoa(int(port))
		switch np.kind {
		case hostName:
			if !np.matchValue(np.name + ps) {
				t.Fatalf("%q does not match its own name %q", raw, np.name+ps)
			}
		case hostNameSuffix:
			if !np.matchValue("x" + np.name + ps) {
				t.Fatalf("%q does not match a name below it", raw)
			}
			if np.matchValue(np.name[1:] + ps) {
				t.Fatalf("%q matches its apex", raw)
			}
		case hostAddr, hostPrefix:
			v := netip.AddrPortFrom(np.prefix.Addr(), port).String()
			if !np.matchValue(v) {
				t.Fatalf("%q does not match its own address %q", raw, v)
			}
		}
		// A session rule compiles the same patterns.
		p, _, err := Compile(Config{Env: testEnv})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.AddSessionRule(SurfaceNet, raw); err != nil {
			t.Fatalf("%q compiles but not as a session rule: %v", raw, err)
		}
	})
}

// FuzzNetTarget: whatever a person types to explain either is refused or
// becomes an intent whose every spelling the engine can read back, and
// that decides to a valid action.
func FuzzNetTarget(f *testing.F) {
	f.Add("github.com:443", "")
	f.Add("140.82.112.3:443", "github.com")
	f.Add("[::ffff:1.2.3.4]:0", "a.b")
	f.Add("unix:/run/x", "")
	f.Add("udp:0.0.0.0:53", "")
	f.Add("unix:80", "")
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, target, also string) {
		var extra []string
		if also != "" {
			extra = []string{also}
		}
		in, err := ParseNetTarget(target, extra)
		if err != nil {
			return
		}
		for _, c := range in.Spellings() {
			if _, ok := parseNetValue(c.Value); !ok {
				t.Fatalf("%+v: spelling %q does not parse back", in, c.Value)
			}
		}
		d := p.DecideNet(in)
		if d.Result.Action < Allow || d.Result.Action > Deny {
			t.Fatalf("invalid action %v", d.Result.Action)
		}
		_ = p.ExplainNet(in).String()
		_ = d.Reason(in)
	})
}

// FuzzNetValue: the value parser never panics, and what it accepts is
// judged without panicking.
func FuzzNetValue(f *testing.F) {
	for _, s := range []string{"github.com:443", "[::1]:22", "unix:/x", "unix:@y", "<nameserver>:53", "1.2.3.4:99999", ":1", "[1.2.3.4]:1"} {
		f.Add(s)
	}
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if _, ok := parseNetValue(v); !ok {
			return
		}
		r := p.Evaluate(Check{SurfaceNet, v})
		if r.Action < Allow || r.Action > Deny {
			t.Fatalf("invalid action %v", r.Action)
		}
	})
}
