package engine

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestNetPatternGrammar(t *testing.T) {
	tests := []struct {
		pattern string
		kind    netHostKind
		host    string // name, ".suffix" or prefix
		port    uint16
	}{
		{"*", hostAny, "", 0},
		{"*:443", hostAny, "", 443},
		{"*:*", hostAny, "", 0},
		{"github.com", hostName, "github.com", 0},
		{"github.com:443", hostName, "github.com", 443},
		{"github.com:*", hostName, "github.com", 0},
		{"GitHub.COM.", hostName, "github.com", 0},
		{"_dmarc.example.com", hostName, "_dmarc.example.com", 0},
		{"localhost", hostName, "localhost", 0},
		{"xn--bcher-kva.example", hostName, "xn--bcher-kva.example", 0},
		{"*.npmjs.org", hostNameSuffix, ".npmjs.org", 0},
		{"*.npmjs.org:443", hostNameSuffix, ".npmjs.org", 443},
		{"127.0.0.1:*", hostAddr, "127.0.0.1/32", 0},
		{"169.254.169.254", hostAddr, "169.254.169.254/32", 0},
		{"10.0.0.0/8", hostPrefix, "10.0.0.0/8", 0},
		{"10.0.0.0/8:22", hostPrefix, "10.0.0.0/8", 22},
		{"0.0.0.0/0", hostPrefix, "0.0.0.0/0", 0},
		{"::1", hostAddr, "::1/128", 0},
		{"[::1]", hostAddr, "::1/128", 0},
		{"[::1]:*", hostAddr, "::1/128", 0},
		{"[::1]:22", hostAddr, "::1/128", 22},
		{"fd00:ec2::254", hostAddr, "fd00:ec2::254/128", 0},
		{"fd00::/8", hostPrefix, "fd00::/8", 0},
		// A bare IPv6 address takes no port: this is one address, not
		// fd00:ec2::254 on port 443 (docs/network.md says to bracket).
		{"fd00:ec2::254:443", hostAddr, "fd00:ec2::254:443/128", 0},
		{"[fd00::/8]:443", hostPrefix, "fd00::/8", 443},
		{"::ffff:10.1.2.3", hostAddr, "10.1.2.3/32", 0},      // mapped: the IPv4 address
		{"::ffff:10.0.0.0/104", hostPrefix, "10.0.0.0/8", 0}, // mapped prefix: the IPv4 prefix
		{"<nameserver>:53", hostNameserver, "", 53},
		{"unix:/run/docker.sock", hostUnix, "", 0},
		{"unix:*", hostUnix, "", 0},
		{"unix:**", hostUnix, "", 0},
		{"unix:*.sock", hostUnix, "", 0},
		{"unix:~/.gnupg/S.*", hostUnix, "", 0},
		{"unix:${TMPDIR}/x.sock", hostUnix, "", 0},
		{"unix:**/agent.sock", hostUnix, "", 0},
		{"unix:@/tmp/.X11-unix/*", hostUnix, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			np, err := compileNetPattern(tt.pattern, testEnv)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			if np.kind != tt.kind || np.port != tt.port {
				t.Fatalf("kind %d port %d, want %d %d", np.kind, np.port, tt.kind, tt.port)
			}
			var host string
			switch np.kind {
			case hostName, hostNameSuffix:
				host = np.name
			case hostAddr, hostPrefix:
				host = np.prefix.String()
			}
			if host != tt.host {
				t.Fatalf("host %q, want %q", host, tt.host)
			}
		})
	}
}

// TestNetPatternErrors pins the message and the byte offset of every
// kind of bad pattern, so a configuration error points at the character.
func TestNetPatternErrors(t *testing.T) {
	tests := []struct {
		pattern string
		off     int
		msg     string
	}{
		{"", 0, "empty pattern"},
		{" github.com", 0, "leading or trailing white space"},
		{"github.com ", 10, "leading or trailing white space"},
		{"git\thub.com", 3, "control character"},
		{"github.com:", 10, "missing port"},
		{"github.com:0", 11, "not a number from 1 to 65535"},
		{"github.com:65536", 11, "not a number from 1 to 65535"},
		{"github.com:44x", 13, "not a number from 1 to 65535"},
		{"github.com:8000-8080", 15, "port ranges and lists are not supported"},
		{"github.com:80,443", 13, "port ranges and lists are not supported"},
		{"github.com:+443", 11, "not a number"},
		{"api.*.github.com", 4, "whole labels at the start only"},
		{"*github.com", 0, "whole labels at the start only"},
		{"*.exa*mple.com", 5, "whole labels at the start only"},
		{"**.github.com", 0, "whole labels at the start only"},
		{"*.", 2, "empty host name"},
		{"a..b", 2, "empty label"},
		{".github.com", 0, "empty label"},
		{"git hub.com", 3, "not allowed in a host name"},
		{"github.com/path", 10, `names a host and port, not a path: write "github.com"`},
		{"github.com:443/foo", 14, `not a path: write "github.com:443"`},
		{"https://github.com/foo", 0, `"https://github.com/foo" is a URL, and a net pattern names a host and port: write "github.com:443"`},
		{"http://example.com", 0, `write "example.com:80"`},
		{"https://github.com:8443/x", 0, `write "github.com:8443"`},
		{"ssh://git@github.com/foo.git", 0, `write "github.com:22"`},
		{"https://[::1]/x", 0, `write "[::1]:443"`},
		{"https://*.github.com", 0, `write "*.github.com:443"`},
		{"gopher://example.com", 0, "write example.com:PORT (the port gopher:// uses)"},
		{"https://", 0, "write HOST:PORT"},
		{"bücher.example", 1, "non-ASCII host name"},
		{strings.Repeat("a", 64) + ".com", 0, "label longer than 63"},
		{strings.Repeat("a.", 127) + "com", 0, "longer than 253"},
		{"10.0.0.256", 0, "neither an IP address nor a host name"},
		{"1.2.3", 0, "neither an IP address nor a host name"},
		{"010.0.0.1", 0, "neither an IP address nor a host name"},
		{"10.1.2.3/8", 0, "address bits set beyond /8: write 10.0.0.0/8"},
		{"10.0.0.0/33", 0, "not a CIDR prefix"},
		{"fe80::1%eth0", 7, "zones"},
		{"[fe80::1%eth0]:22", 8, "zones"},
		{"fd00:ec2:0:0:0:0:0:254:443", 0, "needs brackets: [fd00:ec2:0:0:0:0:0:254]:443"},
		{"fd00::/8:443", 0, "needs brackets: [fd00::/8]:443"},
		{"::1:22:", 0, "not an IPv6 address or prefix"},
		{"fd00:ec2::254:443x", 0, "not an IPv6 address or prefix"},
		{"[::1", 0, "missing ]"},
		{"[::1]22", 5, "after ]"},
		{"[::1]:", 5, "missing port"},
		{"[]:22", 1, "empty IPv6 address"},
		{"[1.2.3.4]:80", 0, "brackets are for IPv6"},
		{"[github.com]:443", 0, "brackets are for IPv6 addresses"},
		{"[abc]:443", 1, "not an IPv6 address"},
		{"<resolver>:53", 0, "unknown special host"},
		{"unix:", 5, "missing socket path"},
		{"unix:@", 6, "empty abstract socket name"},
		{"unix:run/docker.sock", 5, "relative"},
		{"unix:/run/{a,b}.sock", 5, "alternatives are not supported"},
		{"unix:${NOPE}/x", 5, "unknown variable"},
		{"unix:@/tmp/[x", 6, "unterminated ["},
		{":443", 0, "empty host"},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			_, err := compileNetPattern(tt.pattern, testEnv)
			var ne *NetPatternError
			if !errors.As(err, &ne) {
				t.Fatalf("err = %v, want a *NetPatternError", err)
			}
			if ne.Offset != tt.off || !strings.Contains(ne.Msg, tt.msg) {
				t.Fatalf("got offset %d %q, want %d %q", ne.Offset, ne.Msg, tt.off, tt.msg)
			}
			if ne.Offset < 0 || ne.Offset > len(tt.pattern) {
				t.Fatalf("offset %d outside the pattern", ne.Offset)
			}
		})
	}
}

func TestNetPatternMatch(t *testing.T) {
	tests := []struct {
		pattern, value string
		want           bool
	}{
		{"*", "github.com:443", true},
		{"*", "1.2.3.4:80", true},
		{"*", "unix:/run/x.sock", true},
		{"*", "<nameserver>:53", true},
		{"*:443", "github.com:443", true},
		{"*:443", "github.com:80", false},
		{"*:443", "unix:/run/x.sock", false},
		{"github.com", "github.com:22", true},
		{"github.com:443", "github.com:443", true},
		{"github.com:443", "github.com:80", false},
		{"github.com", "api.github.com:443", false},
		{"github.com", "140.82.112.3:443", false},
		{"*.github.com", "api.github.com:443", true},
		{"*.github.com", "a.b.github.com:443", true},
		{"*.github.com", "github.com:443", false}, // the apex is not below itself
		{"*.github.com", "evilgithub.com:443", false},
		{"*.github.com", "github.com.evil.com:443", false},
		{"10.0.0.0/8", "10.255.0.1:5432", true},
		{"10.0.0.0/8", "11.0.0.1:5432", false},
		{"10.0.0.0/8", "10.example.com:80", false}, // address rules match addresses only
		{"10.0.0.0/8:22", "10.1.1.1:22", true},
		{"10.0.0.0/8:22", "10.1.1.1:23", false},
		{"127.0.0.1:*", "127.0.0.1:8080", true},
		{"127.0.0.1", "127.0.0.2:8080", false},
		{"::1", "[::1]:22", true},
		{"::1", "127.0.0.1:22", false},
		{"fd00::/8", "[fd12::1]:443", true},
		{"169.254.169.254", "[::ffff:169.254.169.254]:80", true}, // mapped values are unmapped
		{"::ffff:10.0.0.0/104", "10.9.9.9:1", true},
		{"<nameserver>:53", "<nameserver>:53", true},
		{"<nameserver>:53", "10.0.0.2:53", false},
		{"unix:/run/docker.sock", "unix:/run/docker.sock", true},
		{"unix:/run/docker.sock", "unix:/run/docker.sock2", false},
		{"unix:docker.sock", "unix:/srv/x/docker.sock", true}, // a name without '/' is the last component
		{"unix:/run/user/*/bus", "unix:/run/user/1000/bus", true},
		{"unix:/run/user/*/bus", "unix:/run/user/1000/x/bus", false},
		{"unix:~/.gnupg/S.*", "unix:/home/u/.gnupg/S.gpg-agent", true},
		{"unix:*", "unix:@/tmp/.X11-unix/X0", true},
		{"unix:**", "unix:/a/b", true},
		{"unix:/tmp/**", "unix:@/tmp/x", false}, // path patterns do not match abstract names
		{"unix:@/tmp/.X11-unix/*", "unix:@/tmp/.X11-unix/X0", true},
		{"unix:@/tmp/.X11-unix/*", "unix:/tmp/.X11-unix/X0", false},
		{"unix:@*", "unix:@dbus", true},
		{"unix:/run/x.sock", "x.sock:80", false},
		// Values the engine never writes match nothing.
		{"*", "github.com", false},
		{"*", "github.com:99999", false},
		{"*", "[1.2.3.4]:80", false},
		{"*", "unix:relative", false},
	}
	for _, tt := range tests {
		np, err := compileNetPattern(tt.pattern, testEnv)
		if err != nil {
			t.Fatalf("%s: %v", tt.pattern, err)
		}
		if got := np.matchValue(tt.value); got != tt.want {
			t.Errorf("%q matches %q = %v, want %v", tt.pattern, tt.value, got, tt.want)
		}
	}
}

// TestNetSpecificity pins which rule wins among several that match one
// spelling: the host first (exact, then the narrower partial host, then
// any host), then a port over any port, then the later declaration.
func TestNetSpecificity(t *testing.T) {
	src := `{"permission": {"net": {
		"*": "ask",
		"*:443": "allow",
		"*:25": "deny",
		"*.example.com": "deny",
		"*.api.example.com": "allow",
		"www.example.com": "ask",
		"www.example.com:443": "allow",
		"10.0.0.0/8": "deny",
		"10.1.0.0/16": "ask",
		"10.1.2.0/24:*": "allow",
		"10.1.2.3": "deny",
		"10.1.2.3/32:22": "allow",
		"fd00::/8": "deny",
		"fd00:1::/32": "allow",
		"unix:*": "allow",
		"unix:/run/**": "ask",
		"unix:/run/docker.sock": "deny",
		"unix:*.sock": "ask",
		"smtp.example.net": "allow",
		"x.example.org:80": "deny",
		"x.example.org:*": "allow"
	}}}`
	p, _ := compile(t, src)
	tests := []struct {
		value  string
		winner string
		want   Action
	}{
		{"other.org:80", "*", Ask},
		{"other.org:443", "*:443", Allow},                      // a port beats any port among any-host rules
		{"a.example.com:443", "*.example.com", Deny},           // a named host beats any host, even with a port
		{"v1.api.example.com:443", "*.api.example.com", Allow}, // more labels beat fewer
		{"www.example.com:80", "www.example.com", Ask},         // exact beats wildcard
		{"www.example.com:443", "www.example.com:443", Allow},
		{"10.9.9.9:80", "10.0.0.0/8", Deny},
		{"10.1.9.9:80", "10.1.0.0/16", Ask}, // a longer prefix beats a shorter
		{"10.1.2.9:80", "10.1.2.0/24:*", Allow},
		{"10.1.2.3:80", "10.1.2.3", Deny}, // an exact address beats every prefix, /32 included
		{"10.1.2.3:22", "10.1.2.3", Deny}, // host before port: the exact address wins over a /32 with a port
		{"[fd00:1::5]:443", "fd00:1::/32", Allow},
		{"[fd99::5]:443", "fd00::/8", Deny},
		{"unix:/run/docker.sock", "unix:/run/docker.sock", Deny},
		{"unix:/run/user/1/x", "unix:/run/**", Ask},
		{"unix:/srv/a.sock", "unix:*.sock", Ask},
		{"unix:@abstract", "unix:*", Allow},
		{"smtp.example.net:25", "smtp.example.net", Allow}, // a named host beats `*:25`
		{"x.example.org:80", "x.example.org:80", Deny},
		{"x.example.org:81", "x.example.org:*", Allow},
	}
	for _, tt := range tests {
		r := p.Evaluate(Check{SurfaceNet, tt.value})
		if r.Rule.Pattern != tt.winner || r.Action != tt.want {
			t.Errorf("%s: %s by %q, want %s by %q", tt.value, r.Action, r.Rule.Pattern, tt.want, tt.winner)
		}
		// The index and the plain scan agree.
		if got, want := p.rules[SurfaceNet].find(tt.value), p.rules[SurfaceNet].findLinear(tt.value); got != want {
			t.Errorf("%s: find %v, findLinear %v", tt.value, got.Rule, want.Rule)
		}
	}
	// Equal specificity: the later declaration wins.
	p, _ = compile(t, `{"permission": {"net": {"10.0.0.1/32": "deny", "10.0.0.0/32": "allow", "a.b:1": "deny", "A.B.:1": "allow"}}}`)
	if r := p.Evaluate(Check{SurfaceNet, "a.b:1"}); r.Action != Allow || r.Rule.Pattern != "A.B.:1" {
		t.Errorf("tie: %v", r)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestDecideNetComposes(t *testing.T) {
	src := `{"permission": {"net": {
		"*": "ask",
		"github.com:443": "allow",
		"*.corp.example": "allow",
		"10.0.0.0/8": "deny",
		"169.254.169.254": {"action": "deny", "reason": "metadata"},
		"evil.example": "deny",
		"127.0.0.0/8": "allow",
		"<nameserver>:53": "allow"
	}}}`
	p, _ := compile(t, src)
	tests := []struct {
		name  string
		in    NetIntent
		want  Action
		from  string // the deciding spelling
		parts []bool
	}{
		{"a name through the proxy, before resolving",
			NetIntent{Proto: ProtoTCP, Host: "github.com", Port: 443}, Allow, "github.com:443", []bool{true}},
		{"an unknown name asks",
			NetIntent{Proto: ProtoTCP, Host: "x.org", Port: 443}, Ask, "x.org:443", []bool{true}},
		{"a name allow is not overruled by `*` on its address",
			NetIntent{Proto: ProtoTCP, Host: "github.com", Port: 443, Addr: mustAddr("140.82.112.3")}, Allow, "github.com:443", []bool{true, false}},
		{"an address deny holds whatever name led there",
			NetIntent{Proto: ProtoTCP, Host: "github.com", Port: 443, Addr: mustAddr("169.254.169.254")}, Deny, "169.254.169.254:443", []bool{true, true}},
		{"an allowed name inside a denied prefix is denied",
			NetIntent{Proto: ProtoTCP, Host: "git.corp.example", Port: 443, Addr: mustAddr("10.1.2.3")}, Deny, "10.1.2.3:443", []bool{true, true}},
		{"an address alone: the address rule or `*` decides",
			NetIntent{Proto: ProtoTCP, Port: 443, Addr: mustAddr("140.82.112.3")}, Ask, "140.82.112.3:443", []bool{true}},
		{"an address with a cached name: the name speaks",
			NetIntent{Proto: ProtoTCP, Port: 443, Addr: mustAddr("140.82.112.3"), Names: []string{"github.com"}}, Allow, "github.com:443", []bool{true, false}},
		{"several cached names: the most restrictive of them",
			NetIntent{Proto: ProtoTCP, Port: 443, Addr: mustAddr("140.82.112.3"), Names: []string{"github.com", "evil.example"}}, Deny, "evil.example:443", []bool{true, true, false}},
		{"a loopback address with an unknown name: the address rule allows",
			NetIntent{Proto: ProtoTCP, Host: "foo.test", Port: 8080, Addr: mustAddr("127.0.0.2")}, Allow, "127.0.0.2:8080", []bool{false, true, true, false}},
		{"a denied name to loopback stays denied",
			NetIntent{Proto: ProtoTCP, Host: "evil.example", Port: 80, Addr: mustAddr("127.0.0.2")}, Deny, "evil.example:80", []bool{true, true, true, false}},
		{"connect to 0.0.0.0 is judged as the loopback it reaches",
			NetIntent{Proto: ProtoTCP, Port: 5432, Addr: mustAddr("0.0.0.0")}, Allow, "127.0.0.1:5432", []bool{true, false}},
		{"loopback is one host: a rule on 127.0.0.0/8 speaks for ::1",
			NetIntent{Proto: ProtoTCP, Port: 5432, Addr: mustAddr("::")}, Allow, "127.0.0.1:5432", []bool{false, true}},
		{"an IPv4-mapped address is the IPv4 address",
			NetIntent{Proto: ProtoTCP, Port: 80, Addr: mustAddr("::ffff:169.254.169.254")}, Deny, "169.254.169.254:80", []bool{true}},
		{"a name server on 53",
			NetIntent{Proto: ProtoUDP, Port: 53, Addr: mustAddr("192.0.2.53"), Nameserver: true}, Allow, "<nameserver>:53", []bool{false, true}},
		{"a name server inside a denied prefix is denied",
			NetIntent{Proto: ProtoUDP, Port: 53, Addr: mustAddr("10.0.0.2"), Nameserver: true}, Deny, "10.0.0.2:53", []bool{true, true}},
		{"a name server on another port asks",
			NetIntent{Proto: ProtoTCP, Port: 853, Addr: mustAddr("192.0.2.53"), Nameserver: true}, Ask, "192.0.2.53:853", []bool{true, true}},
		{"unix", NetIntent{Proto: ProtoUnix, Path: "/run/x.sock"}, Ask, "unix:/run/x.sock", []bool{true}},
		{"undecidable: no destination",
			NetIntent{Proto: ProtoTCP, Port: 443}, Deny, "(no destination)", []bool{true}},
		{"undecidable: a host that is not normalized",
			NetIntent{Proto: ProtoTCP, Host: "GitHub.com", Port: 443}, Deny, "GitHub.com:443", []bool{true}},
		{"undecidable: unknown protocol",
			NetIntent{Host: "github.com", Port: 443}, Deny, "github.com:443", []bool{true}},
		{"undecidable: relative socket path",
			NetIntent{Proto: ProtoUnix, Path: "x.sock"}, Deny, "unix:x.sock", []bool{true}},
		{"undecidable: names without an address",
			NetIntent{Proto: ProtoTCP, Host: "a.b", Port: 1, Names: []string{"c.d"}}, Deny, "a.b:1", []bool{true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.DecideNet(tt.in)
			if d.Result.Action != tt.want || d.Result.Check.Value != tt.from {
				t.Fatalf("%s from %q (%v), want %s from %q", d.Result.Action, d.Result.Check.Value, d.Result, tt.want, tt.from)
			}
			var parts []bool
			for _, s := range d.Spellings {
				parts = append(parts, s.Part)
			}
			if len(parts) != len(tt.parts) {
				t.Fatalf("parts %v, want %v", parts, tt.parts)
			}
			for i := range parts {
				if parts[i] != tt.parts[i] {
					t.Fatalf("parts %v, want %v", parts, tt.parts)
				}
			}
			if tt.want == Deny && tt.in.Validate() != nil && d.Result.Rule.Origin != OriginBuiltin {
				t.Fatalf("undecidable intent denied by %v, want the builtin", d.Result.Rule)
			}
		})
	}
}

// TestNetLayers: hard guards, session rules, yolo and fail-closed apply to
// the net surface as to any other.
func TestNetLayers(t *testing.T) {
	hard := func(c *Config) {
		c.HardGuards = &File{Name: "hard-guards.jsonc", Data: []byte(`{"permission": {"net": {"*.paste.example": "deny", "*:25": "ask"}}}`)}
	}
	p, _ := compile(t, `{"permission": {"net": {"*": "ask", "*.paste.example": "allow", "mail.example": "allow", "10.0.0.0/8": "allow", "blocked.example": "deny"}}}`, hard)

	// A hard-guard deny beats a more specific policy allow.
	if d := p.DecideNet(NetIntent{Proto: ProtoTCP, Host: "x.paste.example", Port: 443}); d.Result.Action != Deny || d.Result.Layer != LayerHardGuard {
		t.Errorf("hard deny: %v", d.Result)
	}
	// A hard-guard ask on any host is human-only, and takes part even
	// though it names no host.
	d := p.DecideNet(NetIntent{Proto: ProtoTCP, Host: "mail.example", Port: 25, Addr: mustAddr("10.0.0.25")})
	if d.Result.Action != Ask || !d.Result.HumanOnly {
		t.Errorf("hard ask: %v", d.Result)
	}

	// A session approval allows a name, and never lifts a policy deny.
	in := NetIntent{Proto: ProtoTCP, Host: "new.example", Port: 443}
	if d := p.DecideNet(in); d.Result.Action != Ask {
		t.Fatalf("before approval: %v", d.Result)
	}
	pat := SuggestNetPattern(p.DecideNet(in).Result)
	if pat != "new.example:443" {
		t.Fatalf("suggested %q", pat)
	}
	if _, err := p.AddSessionRule(SurfaceNet, pat); err != nil {
		t.Fatal(err)
	}
	if d := p.DecideNet(in); d.Result.Action != Allow || d.Result.Layer != LayerSession {
		t.Errorf("after approval: %v", d.Result)
	}
	if d := p.DecideNet(NetIntent{Proto: ProtoTCP, Host: "new.example", Port: 80}); d.Result.Action != Ask {
		t.Errorf("approval for :443 covers :80: %v", d.Result)
	}
	// The session rule speaks for the address only with the name known.
	if d := p.DecideNet(NetIntent{Proto: ProtoTCP, Port: 443, Addr: mustAddr("192.0.2.1"), Names: []string{"new.example"}}); d.Result.Action != Allow {
		t.Errorf("cached name after approval: %v", d.Result)
	}
	if _, err := p.AddSessionRule(SurfaceNet, "blocked.example"); err != nil {
		t.Fatal(err)
	}
	if d := p.DecideNet(NetIntent{Proto: ProtoTCP, Host: "blocked.example", Port: 443}); d.Result.Action != Deny {
		t.Errorf("session lifted a deny: %v", d.Result)
	}
	if _, err := p.AddSessionRule(SurfaceNet, "bad*.example"); err == nil {
		t.Error("a bad session pattern was accepted")
	}
	// A Unix socket suggestion is an escaped exact path.
	if got := SuggestNetPattern(Result{Check: Check{SurfaceNet, "unix:/tmp/a*b/s.sock"}}); got != `unix:/tmp/a\*b/s.sock` {
		t.Errorf("unix suggestion %q", got)
	}

	// yolo rewrites an ask to allow, never a deny; fail-closed turns allows into asks.
	y, _ := compile(t, `{"yoloMode": true, "permission": {"net": {"*": "ask", "x.example": "deny"}}}`)
	if d := y.DecideNet(NetIntent{Proto: ProtoTCP, Host: "y.example", Port: 1}); d.Result.Action != Allow || d.Result.Rule.Origin != OriginYolo {
		t.Errorf("yolo: %v", d.Result)
	}
	if d := y.DecideNet(NetIntent{Proto: ProtoTCP, Host: "x.example", Port: 1}); d.Result.Action != Deny {
		t.Errorf("yolo deny: %v", d.Result)
	}
	fc, _ := compile(t, `{"permission": {"net": {"github.com": "allow"}}}`, func(c *Config) { c.Scopes = []File{{Name: "missing.jsonc"}} })
	if d := fc.DecideNet(NetIntent{Proto: ProtoTCP, Host: "github.com", Port: 443}); d.Result.Action != Ask || d.Result.Rule.Origin != OriginFailClosed {
		t.Errorf("fail-closed: %v", d.Result)
	}
	// With no net rules at all, permission["*"] or the builtin ask decides.
	none, _ := compile(t, `{"permission": {"*": "deny"}}`)
	if d := none.DecideNet(NetIntent{Proto: ProtoTCP, Host: "a.example", Port: 1, Addr: mustAddr("192.0.2.1")}); d.Result.Action != Deny || d.Result.Layer != LayerFallback {
		t.Errorf("fallback: %v", d.Result)
	}
}

func TestNetConfigErrors(t *testing.T) {
	tests := []struct {
		src, want string
	}{
		// The column points into the pattern at the offending character.
		{`{"permission": {"net": {"api.*.github.com": "allow"}}}`, `1:30: pattern "api.*.github.com": a * in a host name stands for whole labels at the start only`},
		{`{"permission": {"net": {"github.com:44x": "allow"}}}`, `1:39: pattern "github.com:44x": port "44x" is not a number`},
		{"{\"permission\": {\"net\": {\n  \"10.1.2.3/8\": \"deny\"}}}", `2:4: pattern "10.1.2.3/8": 10.1.2.3/8 has address bits set beyond /8: write 10.0.0.0/8`},
		{`{"permission": {"net": {"unix:run/x": "deny"}}}`, `1:31: pattern "unix:run/x": socket path "run/x" is relative`},
		// With an escape in the key, the column is the key's.
		{`{"permission": {"net": {"\u0061pi.*.b": "allow"}}}`, `1:25: pattern "api.*.b"`},
		{`{"permission": {"net": "maybe"}}`, `1:24: unknown action "maybe"`},
		// A URL gets the spelling a net rule takes, at the key's column.
		{"{\"permission\": {\"net\": {\n    \"https://github.com/foo\": \"allow\"}}}", `2:6: pattern "https://github.com/foo": "https://github.com/foo" is a URL, and a net pattern names a host and port: write "github.com:443"`},
	}
	for _, tt := range tests {
		_, _, err := CheckFile("f.jsonc", []byte(tt.src), FileGlobal, testEnv)
		if err == nil || !strings.HasPrefix(err.Error(), "f.jsonc:"+tt.want) {
			t.Errorf("%s:\n got  %v\n want f.jsonc:%s", tt.src, err, tt.want)
		}
	}
	// "net": "deny" is {"*": "deny"}.
	p, _ := compile(t, `{"permission": {"net": "deny"}}`)
	if d := p.DecideNet(NetIntent{Proto: ProtoUnix, Path: "/x"}); d.Result.Action != Deny || d.Result.Rule.Pattern != "*" {
		t.Errorf(`"net": "deny": %v`, d.Result)
	}
}

func TestParseNetTarget(t *testing.T) {
	tests := []struct {
		target string
		also   []string
		want   string // NetIntent.String(), or "error: …"
	}{
		{"github.com:443", nil, "tcp github.com:443"},
		{"GitHub.com.:443", nil, "tcp github.com:443"},
		{"github.com:443", []string{"140.82.112.3"}, "tcp github.com:443 (140.82.112.3)"},
		{"140.82.112.3:443", nil, "tcp 140.82.112.3:443 (no name known)"},
		{"140.82.112.3:443", []string{"GitHub.com"}, "tcp 140.82.112.3:443 (resolved from github.com)"},
		{"[::1]:22", nil, "tcp [::1]:22 (no name known)"},
		{"udp:10.0.0.2:53", nil, "udp 10.0.0.2:53 (no name known)"},
		{"tcp:a.b:1", nil, "tcp a.b:1"},
		{"unix:/run/docker.sock", nil, "unix /run/docker.sock"},
		{"unix:@/tmp/.X11-unix/X0", nil, "unix @/tmp/.X11-unix/X0"},
		{"github.com", nil, "error: want HOST:PORT"},
		{"github.com:https", nil, "error: port"},
		{"bad_host!:1", nil, "error: not allowed in a host name"},
		{"github.com:443", []string{"1.2.3.4", "5.6.7.8"}, "error: at most one address"},
		{"github.com:443", []string{"nope"}, "error: resolved address"},
		{"1.2.3.4:1", []string{"bad name!"}, "error: resolved name"},
		{"unix:/x", []string{"a"}, "error: no further names"},
	}
	for _, tt := range tests {
		in, err := ParseNetTarget(tt.target, tt.also)
		got := in.String()
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, tt.want) && !(strings.HasPrefix(tt.want, "error: ") && strings.Contains(got, strings.TrimPrefix(tt.want, "error: "))) {
			t.Errorf("%s %v: got %q, want %q", tt.target, tt.also, got, tt.want)
		}
	}
}

// TestDefaultNet pins the default policy's net section (docs/network.md).
func TestDefaultNet(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	served := func(in NetIntent, s *NetService) NetIntent { in.Service = s; return in }
	tcp := func(host string, port uint16, addr string) NetIntent {
		in := NetIntent{Proto: ProtoTCP, Host: host, Port: port}
		if addr != "" {
			in.Addr = mustAddr(addr)
		}
		return in
	}
	tests := []struct {
		in   NetIntent
		want Action
	}{
		// Loopback: the session's own servers are allowed, services
		// outside ask, and so does loopback nobody looked at.
		{served(tcp("", 8080, "127.0.0.1"), &NetService{Tree: true}), Allow},
		{served(tcp("", 5432, "127.0.0.53"), &NetService{Tree: true}), Allow},
		{served(tcp("", 22, "::1"), &NetService{Tree: true}), Allow},
		{served(tcp("", 3000, "0.0.0.0"), &NetService{Tree: true}), Allow},
		{served(tcp("", 6379, "127.0.0.1"), &NetService{Exe: "/usr/bin/redis-server"}), Ask},
		{served(tcp("", 5432, "::1"), &NetService{}), Ask},
		{tcp("", 8080, "127.0.0.1"), Ask},
		{served(NetIntent{Proto: ProtoUDP, Port: 53, Addr: mustAddr("127.0.0.53"), Nameserver: true}, &NetService{Exe: "/usr/lib/systemd/systemd-resolved"}), Allow},
		{served(NetIntent{Proto: ProtoUnix, Path: "/tmp/tmux-1000/default"}, &NetService{Tree: true}), Allow},
		{served(NetIntent{Proto: ProtoUnix, Path: "/tmp/tmux-1000/default"}, &NetService{Exe: "/usr/bin/tmux"}), Ask},
		{served(NetIntent{Proto: ProtoUnix, Path: "@/tmp/dbus-XYZ"}, &NetService{Exe: "/usr/bin/dbus-daemon"}), Ask},
		{served(NetIntent{Proto: ProtoUnix, Path: "@some-abstract"}, &NetService{Exe: "/usr/bin/x"}), Ask},
		{served(NetIntent{Proto: ProtoUnix, Path: "/run/systemd/journal/socket"}, &NetService{Exe: "/usr/lib/systemd/systemd-journald"}), Allow},
		{served(NetIntent{Proto: ProtoUnix, Path: "/run/nscd/socket"}, &NetService{}), Allow},
		{served(NetIntent{Proto: ProtoUnix, Path: "/run/docker.sock"}, &NetService{Tree: true}), Deny},
		{tcp("", 80, "169.254.169.254"), Deny},
		{tcp("", 80, "::ffff:169.254.169.254"), Deny},
		{tcp("", 80, "fd00:ec2::254"), Deny},
		{tcp("metadata.google.internal", 80, ""), Deny},
		{tcp("innocent.example", 80, "169.254.169.254"), Deny},
		{tcp("", 80, "169.254.170.2"), Deny},
		{tcp("", 80, "100.100.100.200"), Deny},
		{NetIntent{Proto: ProtoUDP, Port: 53, Addr: mustAddr("192.0.2.53"), Nameserver: true}, Allow},
		{NetIntent{Proto: ProtoTCP, Port: 8080, Addr: mustAddr("192.0.2.53"), Nameserver: true}, Ask},
		{tcp("registry.npmjs.org", 443, ""), Allow},
		{tcp("registry.npmjs.org", 80, ""), Ask},
		{tcp("pypi.org", 443, ""), Allow},
		{tcp("files.pythonhosted.org", 443, ""), Allow},
		{tcp("static.crates.io", 443, ""), Allow},
		{tcp("proxy.golang.org", 443, ""), Allow},
		{tcp("sum.golang.org", 443, ""), Allow},
		{tcp("rubygems.org", 443, ""), Allow},
		{tcp("repo1.maven.org", 443, ""), Allow},
		{tcp("github.com", 443, "140.82.112.3"), Allow},
		{tcp("objects.githubusercontent.com", 443, ""), Allow},
		{tcp("raw.githubusercontent.com", 443, ""), Allow},
		{tcp("codeload.github.com", 443, ""), Allow},
		{tcp("gitlab.com", 443, ""), Allow},
		{tcp("bitbucket.org", 443, ""), Allow},
		{tcp("registry-1.docker.io", 443, ""), Allow},
		{tcp("api.anthropic.com", 443, ""), Allow},
		{tcp("github.com", 22, ""), Ask},
		{tcp("example.com", 443, ""), Ask},
		{tcp("", 443, "140.82.112.3"), Ask},
		{NetIntent{Proto: ProtoTCP, Port: 443, Addr: mustAddr("140.82.112.3"), Names: []string{"github.com"}}, Allow},
		{NetIntent{Proto: ProtoUnix, Path: "/home/u/src/proj/.lsp.sock"}, Allow},
		{NetIntent{Proto: ProtoUnix, Path: "/run/systemd/journal/socket"}, Allow},
		{NetIntent{Proto: ProtoUnix, Path: "@some-abstract"}, Allow}, // nobody looked (explain)
		{NetIntent{Proto: ProtoUnix, Path: "/run/docker.sock"}, Deny},
		{NetIntent{Proto: ProtoUnix, Path: "/var/run/docker.sock"}, Deny},
		{NetIntent{Proto: ProtoUnix, Path: "/run/user/1000/bus"}, Ask},
		{NetIntent{Proto: ProtoUnix, Path: "/run/user/1000/systemd/private"}, Ask},
		{NetIntent{Proto: ProtoUnix, Path: "/tmp/ssh-XXXXabcd/agent.1234"}, Ask},
		{NetIntent{Proto: ProtoUnix, Path: "/home/u/.gnupg/S.gpg-agent"}, Ask},
		{NetIntent{Proto: ProtoUnix, Path: "/tmp/tmux-1000/default"}, Ask},
		{NetIntent{Proto: ProtoUnix, Path: "@/tmp/.X11-unix/X0"}, Ask},
	}
	for _, tt := range tests {
		d := p.DecideNet(tt.in)
		if d.Result.Action != tt.want {
			t.Errorf("%v = %v, want %v", tt.in, d.Result, tt.want)
		}
		if d.Result.Action != Allow && d.Result.Rule.Reason == "" && d.Result.Layer != LayerBuiltin {
			t.Errorf("%v: %v carries no reason", tt.in, d.Result.Rule)
		}
	}
}

func TestNetIntentText(t *testing.T) {
	p, _ := compile(t, `{"permission": {"net": {"*": {"action": "deny", "reason": "no egress"}}}}`)
	in := NetIntent{Proto: ProtoTCP, Port: 443, Addr: mustAddr("140.82.112.3")}
	got := p.DecideNet(in).Reason(in)
	want := "deny: tcp 140.82.112.3:443 (no name known) — rule net:* (deny, policy.jsonc:1:25): no egress — use a host name through the proxy"
	if got != want {
		t.Errorf("reason\n got  %q\n want %q", got, want)
	}
	in.Names = []string{"github.com"}
	if got := p.DecideNet(in).Reason(in); strings.Contains(got, "use a host name") {
		t.Errorf("hint with a known name: %q", got)
	}
	ex := p.ExplainNet(NetIntent{Proto: ProtoTCP, Host: "github.com", Port: 443, Addr: mustAddr("140.82.112.3")}).String()
	for _, want := range []string{
		"connection: tcp github.com:443 (140.82.112.3)\n",
		"net github.com:443\n  answer: deny\n",
		"net 140.82.112.3:443\n  answer: deny\n",
		"composed (most restrictive of the spellings that name this destination): deny, from github.com:443\n",
		"decision: deny\n",
	} {
		if !strings.Contains(ex, want) {
			t.Errorf("explanation lacks %q:\n%s", want, ex)
		}
	}
}

// A destination on this machine that a process outside the sandbox
// serves is judged on `<outside:PROGRAM>` too, a tier below the
// destination's own spellings.
func TestDecideNetOutside(t *testing.T) {
	src := `{"permission": {"net": {
		"*": "ask",
		"unix:*": "allow",
		"<outside>": {"action": "ask", "reason": "acts for its caller"},
		"<outside:tmux>": {"action": "deny", "reason": "runs commands"},
		"<outside:/usr/bin/ollama>:*": "allow",
		"unix:/run/systemd/journal/*": "allow",
		"127.0.0.1:11434": "allow",
		"<nameserver>:53": "allow",
		"[::1]:9000": "deny"
	}}}`
	p, _ := compile(t, src)
	out := func(exe string) *NetService { return &NetService{Exe: exe, PID: 42, Cmdline: "x"} }
	tests := []struct {
		name string
		in   NetIntent
		want Action
		from string
	}{
		{"a socket path rule beats <outside>",
			NetIntent{Proto: ProtoUnix, Path: "/run/systemd/journal/socket", Service: out("/usr/lib/systemd/systemd-journald")}, Allow, "unix:/run/systemd/journal/socket"},
		{"by the serving program; unix:* abstains",
			NetIntent{Proto: ProtoUnix, Path: "/tmp/tmux-0/default", Service: out("/usr/bin/tmux")}, Deny, "<outside:/usr/bin/tmux>"},
		{"an abstract socket outside asks",
			NetIntent{Proto: ProtoUnix, Path: "@/tmp/dbus-abc", Service: out("/usr/bin/dbus-daemon")}, Ask, "<outside:/usr/bin/dbus-daemon>"},
		{"the tree's own socket: unix:* decides",
			NetIntent{Proto: ProtoUnix, Path: "/tmp/tmux-0/default", Service: &NetService{Tree: true}}, Allow, "unix:/tmp/tmux-0/default"},
		{"nobody looked: unix:* decides",
			NetIntent{Proto: ProtoUnix, Path: "/run/x.sock"}, Allow, "unix:/run/x.sock"},
		{"a loopback service outside asks",
			NetIntent{Proto: ProtoTCP, Addr: mustAddr("127.0.0.1"), Port: 6379, Service: out("/usr/bin/redis-server")}, Ask, "<outside:/usr/bin/redis-server>:6379"},
		{"an unknown program: <outside>",
			NetIntent{Proto: ProtoTCP, Addr: mustAddr("127.0.0.1"), Port: 5432, Service: &NetService{}}, Ask, "<outside>:5432"},
		{"an address rule beats <outside>",
			NetIntent{Proto: ProtoTCP, Addr: mustAddr("127.0.0.1"), Port: 11434, Service: out("/usr/bin/redis-server")}, Allow, "127.0.0.1:11434"},
		{"loopback is one host: a rule on [::1] holds for 127.0.0.1",
			NetIntent{Proto: ProtoTCP, Addr: mustAddr("127.0.0.1"), Port: 9000, Service: out("/usr/bin/ollama")}, Deny, "[::1]:9000"},
		{"the name server outside is allowed",
			NetIntent{Proto: ProtoUDP, Addr: mustAddr("127.0.0.53"), Port: 53, Nameserver: true, Service: out("/usr/lib/systemd/systemd-resolved")}, Allow, "<nameserver>:53"},
		{"a program allow",
			NetIntent{Proto: ProtoTCP, Addr: mustAddr("::1"), Port: 8080, Service: out("/usr/bin/ollama")}, Allow, "<outside:/usr/bin/ollama>:8080"},
		{"served by the tree: an ask becomes allow",
			NetIntent{Proto: ProtoTCP, Addr: mustAddr("127.0.0.1"), Port: 6379, Service: &NetService{Tree: true}}, Allow, "127.0.0.1:6379"},
		{"served by the tree: a deny stands",
			NetIntent{Proto: ProtoTCP, Addr: mustAddr("::1"), Port: 9000, Service: &NetService{Tree: true}}, Deny, "[::1]:9000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.DecideNet(tt.in)
			if d.Result.Action != tt.want || d.Result.Check.Value != tt.from {
				t.Errorf("%v from %q (%v), want %v from %q", d.Result.Action, d.Result.Check.Value, d.Result.Rule, tt.want, tt.from)
			}
		})
	}
}

// Without an `<outside…>` rule the spelling is silent: `*` and `unix:*`
// keep their meaning for a policy that never names the services outside.
func TestDecideNetOutsideNeedsARule(t *testing.T) {
	p, _ := compile(t, `{"permission": {"net": {"*": "deny", "unix:*": "allow", "127.0.0.1:8080": "allow"}}}`)
	svc := &NetService{Exe: "/usr/bin/x", PID: 7}
	for _, tt := range []struct {
		in   NetIntent
		want Action
	}{
		{NetIntent{Proto: ProtoUnix, Path: "/run/x.sock", Service: svc}, Allow},
		{NetIntent{Proto: ProtoTCP, Addr: mustAddr("127.0.0.1"), Port: 8080, Service: svc}, Allow},
		{NetIntent{Proto: ProtoTCP, Addr: mustAddr("127.0.0.1"), Port: 8081, Service: svc}, Deny},
	} {
		if d := p.DecideNet(tt.in); d.Result.Action != tt.want || strings.HasPrefix(d.Result.Check.Value, "<outside") {
			t.Errorf("%v: %v from %q, want %v", tt.in, d.Result.Action, d.Result.Check.Value, tt.want)
		}
	}
}

func TestOutsidePatterns(t *testing.T) {
	good := map[string][]string{ // pattern: values it matches (and the rest of all values it must not)
		"<outside>":                       {"<outside>", "<outside:/usr/bin/tmux>", "<outside>:80", "<outside:/x>:80", "<outside:/usr/bin/x>:80"},
		"<outside>:80":                    {"<outside>:80", "<outside:/x>:80", "<outside:/usr/bin/x>:80"},
		"<outside:tmux>":                  {"<outside:/usr/bin/tmux>"},
		"<outside:/usr/bin/*>:*":          {"<outside:/usr/bin/tmux>", "<outside:/usr/bin/x>:80"},
		"<outside:/usr/bin/redis-server>": {},
	}
	values := []string{"<outside>", "<outside:/usr/bin/tmux>", "<outside>:80", "<outside:/x>:80", "<outside:/usr/bin/x>:80",
		"127.0.0.1:80", "unix:/usr/bin/tmux", "tmux:80"}
	for _, any := range []string{"*", "*:80", "unix:*"} {
		np, err := compileNetPattern(any, Env{})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values[:5] {
			if np.matchValue(v) {
				t.Errorf("%s matches %s: a rule for any host must not speak for who serves it", any, v)
			}
		}
	}
	for pat, want := range good {
		np, err := compileNetPattern(pat, Env{})
		if err != nil {
			t.Fatalf("%s: %v", pat, err)
		}
		for _, v := range values {
			if got := np.matchValue(v); got != slices.Contains(want, v) {
				t.Errorf("%s matches %s: %v", pat, v, got)
			}
		}
	}
	for _, bad := range []string{"<outside", "<outside:>", "<outside:bin/tmux>", "<outside>:0", "<outsider>", "<outside>x", "<outside>:", "<outside:a>:1-2"} {
		if _, err := compileNetPattern(bad, Env{}); err == nil {
			t.Errorf("%s compiled", bad)
		}
	}
	// The suggestion for "allow for this session" compiles back to the
	// spelling, even for a program whose path holds glob characters.
	for _, v := range []string{"<outside:/opt/a[1]/srv*>:80", "<outside:/usr/bin/tmux>", "<outside>:5432"} {
		pat := SuggestNetPattern(Result{Check: Check{SurfaceNet, v}})
		np, err := compileNetPattern(pat, Env{})
		if err != nil || !np.matchValue(v) {
			t.Errorf("suggestion %q for %q: %v", pat, v, err)
		}
	}
}
