package engine

import (
	"strings"
	"testing"
)

func TestContentRuleErrors(t *testing.T) {
	tests := []struct {
		name string
		kind FileKind
		src  string
		want string
	}{
		{"write surface", FileGlobal, `{"permission": {"write": {"*.pem": {"action": "ask", "content": "secret"}}}}`,
			`1:54: "content" applies to read rules only`},
		{"path surface", FileScope, `{"permission": {"path": {"*.pem": {"action": "deny", "content": "secret"}}}}`,
			`1:54: "content" applies to read rules only`},
		{"allow", FileGlobal, `{"permission": {"read": {"*.pem": {"action": "allow", "content": "secret"}}}}`,
			`1:55: "content": "secret" narrows an ask or deny`},
		{"hard guards", FileHardGuards, `{"permission": {"read": {"*.pem": {"action": "deny", "content": "secret"}}}}`,
			`1:54: "content" is not allowed in hard-guards.jsonc`},
		{"unknown condition", FileGlobal, `{"permission": {"read": {"*.pem": {"action": "ask", "content": "private"}}}}`,
			`1:64: unknown content condition "private" (want "secret")`},
		{"wrong type", FileGlobal, `{"permission": {"read": {"*.pem": {"action": "ask", "content": true}}}}`,
			`1:64: content: want a string, got a boolean`},
		{"fallback", FileGlobal, `{"permission": {"*": {"action": "ask", "content": "secret"}}}`,
			`1:40: the universal fallback "*" cannot depend on content`},
	}
	for _, tt := range tests {
		_, _, err := CheckFile("f.jsonc", []byte(tt.src), tt.kind, testEnv)
		if err == nil || !strings.Contains(err.Error(), "f.jsonc:"+tt.want) {
			t.Errorf("%s: got %v, want f.jsonc:%s", tt.name, err, tt.want)
		}
	}
	if _, _, err := CheckFile("f.jsonc", []byte(`{"permission": {"read": {"*.pem": {"action": "ask", "content": "secret", "reason": "keys"}}}}`), FileScope, testEnv); err != nil {
		t.Errorf("a content rule in a scope: %v", err)
	}
}

func TestContentRules(t *testing.T) {
	p, _ := compile(t, `{"permission": {
		"read": {
			"*": "allow",
			"*.pem": {"action": "ask", "content": "secret", "reason": "keys"},
			"/srv/keys/**": "deny",
			"/srv/keys/ok/*.pem": {"action": "ask", "content": "secret"},
			"/srv/public/**": "allow",
			"/srv/public/x/*.pem": "allow"
		},
		"write": {"*": "allow"}
	}}`)
	tests := []struct {
		path        string
		a           Access
		strict      Action
		depends     bool
		secret, not Action
	}{
		// A content rule that wins makes the answer depend on the content.
		{"/w/server.pem", AccessRead, Ask, true, Ask, Allow},
		// It does not for writes: content rules live on the read surface.
		{"/w/server.pem", AccessWrite, Allow, false, Allow, Allow},
		{"/w/server.pem", AccessRead | AccessWrite, Ask, true, Ask, Allow},
		// A more specific ordinary rule beats it: no dependence.
		{"/srv/public/x/a.pem", AccessRead, Allow, false, Allow, Allow},
		// A content ask that outranks a deny: "not secret" falls to the
		// deny, which is the stricter answer.
		{"/srv/keys/ok/a.pem", AccessRead, Deny, true, Ask, Deny},
		// Nothing content-related matches.
		{"/w/main.go", AccessRead, Allow, false, Allow, Allow},
	}
	for _, tt := range tests {
		r := p.DecidePath(tt.a, tt.path)
		if r.Action != tt.strict || r.DependsOnContent != tt.depends {
			t.Errorf("DecidePath(%v, %s) = %v, want %v depends=%v", tt.a, tt.path, r, tt.strict, tt.depends)
		}
		if s := p.DecidePathContent(tt.a, tt.path, true); s.Action != tt.secret || s.DependsOnContent {
			t.Errorf("DecidePathContent(%v, %s, secret) = %v, want %v", tt.a, tt.path, s, tt.secret)
		}
		if n := p.DecidePathContent(tt.a, tt.path, false); n.Action != tt.not || n.DependsOnContent {
			t.Errorf("DecidePathContent(%v, %s, not secret) = %v, want %v", tt.a, tt.path, n, tt.not)
		}
	}
	// The deciding rule is named in both modes.
	if r := p.DecidePathContent(AccessRead, "/w/a.pem", true); r.Rule.Pattern != "*.pem" || r.Rule.Content != ContentSecret || r.Rule.Reason != "keys" {
		t.Errorf("secret: %+v", r.Rule)
	}
	if r := p.DecidePathContent(AccessRead, "/w/a.pem", false); r.Rule.Pattern != "*" {
		t.Errorf("not secret: %+v", r.Rule)
	}
	if got := p.DecidePathContent(0, "/w/a.pem", false); got.Action != Deny {
		t.Errorf("no access: %v", got)
	}
	// A policy with content rules does not let reads bypass the check.
	if p.ReadsAlwaysAllowed() {
		t.Error("ReadsAlwaysAllowed with an asking content rule")
	}
	if !strings.Contains(p.Summary(), "ok: 7 rules") {
		t.Errorf("summary counts content rules: %s", p.Summary())
	}
	// Explain says both answers.
	ex := p.ExplainPath(AccessRead, "/w/a.pem").String()
	if !strings.Contains(ex, "content looks secret") || !strings.Contains(ex, "rule read:* (allow") {
		t.Errorf("explain:\n%s", ex)
	}
	if s := (Rule{Surface: SurfaceRead, Pattern: "*.pem", Action: Ask, Content: ContentSecret, Origin: OriginDefault}).String(); s != "rule read:*.pem (ask if secret, default)" {
		t.Errorf("Rule.String = %q", s)
	}
}

// TestContentRulesAndLayers: session approvals, yolo, fail-closed and
// hard guards keep their meaning next to content rules.
func TestContentRulesAndLayers(t *testing.T) {
	src := `{"permission": {"read": {"*": "allow", "*.pem": {"action": "ask", "content": "secret"}, "*.key": {"action": "deny", "content": "secret"}}}}`
	p, _ := compile(t, src)
	if _, err := p.AddSessionRule(SurfaceRead, "/w/**"); err != nil {
		t.Fatal(err)
	}
	// A session allow lifts the content ask: the answer no longer depends.
	if r := p.DecidePath(AccessRead, "/w/a.pem"); r.Action != Allow || r.DependsOnContent || r.Layer != LayerSession {
		t.Errorf("session over content ask: %v", r)
	}
	// It never lifts a deny, content or not.
	if r := p.DecidePath(AccessRead, "/w/a.key"); r.Action != Deny || !r.DependsOnContent {
		t.Errorf("session under content deny: %v", r)
	}
	if r := p.DecidePathContent(AccessRead, "/w/a.key", false); r.Action != Allow || r.Layer != LayerSession {
		t.Errorf("not secret: %v", r)
	}
	y, _ := compile(t, src, withYolo)
	if r := y.DecidePath(AccessRead, "/w/a.pem"); r.Action != Allow || r.DependsOnContent {
		t.Errorf("yolo: %v", r)
	}
	h, _ := compile(t, src, withHard(`{"permission": {"read": {"/w/hard.pem": "deny"}}}`))
	if r := h.DecidePath(AccessRead, "/w/hard.pem"); r.Action != Deny || r.DependsOnContent || r.Layer != LayerHardGuard {
		t.Errorf("hard guard: %v", r)
	}
	f, _ := compile(t, src, withScope("broken.jsonc", "{"))
	if r := f.DecidePathContent(AccessRead, "/w/a.pem", false); r.Action != Ask || r.Rule.Origin != OriginFailClosed {
		t.Errorf("fail-closed: %v", r)
	}
}

func TestContentHotPathDoesNotAllocate(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/home/u/src/proj/certs/server.pem", "/home/u/src/proj/.env.local"} {
		if n := testing.AllocsPerRun(100, func() { sink = p.DecidePath(AccessRead, path) }); n != 0 {
			t.Errorf("DecidePath(%s): %v allocs", path, n)
		}
		if n := testing.AllocsPerRun(100, func() { sink = p.DecidePathContent(AccessRead, path, false) }); n != 0 {
			t.Errorf("DecidePathContent(%s): %v allocs", path, n)
		}
	}
}

// TestDefaultPolicyKeyForms: the default policy's content rules (`*.pem`,
// `*.key`, `id_*` ask when the content looks secret) ask for private keys
// that carry no PEM private key block, and let their public twins
// through: what the read_key_* attacks show under their own policy.
func TestDefaultPolicyKeyForms(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	cert := fixture(t, "test-only-cert.pem")
	der := fixture(t, "test-only-rsa-pkcs1.der")
	chain := certBundle(t, 200<<10)
	tests := []struct {
		name, path string
		content    []byte
		want       Action
	}{
		{"cert then openssl pkey -text", "/home/u/src/proj/certs/server.pem", append(append([]byte{}, cert...), fixture(t, "test-only-rsa-dump.txt")...), Ask},
		{"200 KB of certificates then an EC dump", "/home/u/src/proj/certs/chain.pem", append(append([]byte{}, chain...), fixture(t, "test-only-ec-dump.txt")...), Ask},
		{"bare base64 DER", "/home/u/src/proj/deploy/tls.key", []byte(b64lines(der, 0)), Ask},
		{"raw DER", "/home/u/src/proj/deploy/tls.key", der, Ask},
		{"SSH key without armour", "/home/u/src/proj/ci/id_ed25519_ci", secretForms(t)["openssh body without armour"], Ask},
		{"the certificate", "/home/u/src/proj/certs/server.pem", cert, Allow},
		{"the chain", "/home/u/src/proj/certs/chain.pem", chain, Allow},
		{"x509 -text with the PEM", "/home/u/src/proj/certs/server.pem", append(fixture(t, "test-only-cert-dump.txt"), cert...), Allow},
		{"a public key", "/home/u/src/proj/certs/pub.pem", fixture(t, "test-only-ec-pub.pem"), Allow},
		{"an SSH public key", "/home/u/src/proj/ci/id_ed25519_ci.pub", fixture(t, "test-only-ssh-ed25519.pub"), Allow},
	}
	for _, tt := range tests {
		r := p.DecidePath(AccessRead, tt.path)
		if !r.DependsOnContent {
			t.Errorf("%s: %s does not depend on content under the default policy: %v", tt.name, tt.path, r)
			continue
		}
		if got := p.DecidePathContent(AccessRead, tt.path, LooksSecret(tt.path, tt.content)); got.Action != tt.want {
			t.Errorf("%s: %s decided %v, want %v", tt.name, tt.path, got, tt.want)
		}
	}
}
