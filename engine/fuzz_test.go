package engine

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func FuzzLoadConfig(f *testing.F) {
	f.Add(defaultPolicy, uint8(0))
	f.Add([]byte(`{"permission": {"*": "ask", "write": {"/a/**": {"action": "deny", "reason": "r"}}}, "askTimeout": "1m"}`), uint8(0))
	f.Add([]byte(`{"permission": {"bash": {"git push *": "ask"}}, "protectedWrites": ["**/.git/hooks/**"]}`), uint8(1))
	f.Add([]byte(`{"permission": {"read": "allow"}, "yoloMode": true}`), uint8(2))
	f.Add([]byte(`{"authorizers": {"j": {"command": ["x"], "timeoutMs": 10}}, "typoPaths": [{"from": "/a/*", "to": "~"}], "log": {"fieldWidth": 64}}`), uint8(0))
	f.Add([]byte("// c\n{ /* c */ \"permission\": {,}\n"), uint8(0))
	f.Add([]byte(`{"permission": {"read": {"a": "allow", "a": "deny"}}}`), uint8(0))
	f.Add([]byte(`{"permission": {"read": {"*": "allow", "*.pem": {"action": "ask", "content": "secret"}}}}`), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		k := FileKind(kind % 3)
		_, _, err := CheckFile("f.jsonc", data, k, testEnv)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.jsonc") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		cfg := Config{Env: testEnv}
		switch k {
		case FileGlobal:
			cfg.Global = &File{Name: "f.jsonc", Data: data}
		case FileHardGuards:
			cfg.HardGuards = &File{Name: "f.jsonc", Data: data}
		case FileScope:
			cfg.Scopes = []File{{Name: "f.jsonc", Data: data}}
		}
		p, warns, err := Compile(cfg)
		if err != nil || p.failClosed {
			t.Fatalf("CheckFile accepted what Compile refused: %v %v", err, warns)
		}
		for _, c := range []Check{
			{SurfaceRead, "/home/u/.ssh/id_rsa"}, {SurfaceWrite, "/a/b"}, {SurfaceBash, "git push"},
			{SurfaceExec, "rel"}, {SurfacePath, ""}, {SurfaceWrite, "/"},
		} {
			r := p.Evaluate(c)
			if r.Action < Allow || r.Action > Deny {
				t.Fatalf("Evaluate(%v) = invalid action %v", c, r.Action)
			}
			_ = p.Explain(c).String()
			if c.Surface.IsPath() {
				strict := p.DecidePath(AccessRead|AccessWrite, c.Value)
				for _, secret := range []bool{false, true} {
					if r := p.DecidePathContent(AccessRead|AccessWrite, c.Value, secret); r.Action > strict.Action {
						t.Fatalf("DecidePathContent(%q, %v) = %v is stricter than DecidePath %v", c.Value, secret, r, strict)
					}
				}
			}
		}
		for _, m := range []Move{{Kind: MoveRename, From: "/a", To: "/home/u/.ssh", FromDir: true}, {Kind: MoveSymlink, From: "/a/b", To: "/w/.git/hooks", FromDir: true}} {
			if r := p.DecideMove(m); r.Action < Allow || r.Action > Deny {
				t.Fatalf("DecideMove(%v) = invalid action %v", m, r.Action)
			}
		}
		_ = p.LandlockFloor()
		_ = p.Summary()
	})
}

// globRegexp is an independent reference for compileGlob: the pattern
// syntax translated to an RE2 expression (no [...] classes).
func globRegexp(p string) (string, bool) {
	var b strings.Builder
	b.WriteString(`(?s)^`) // `**` matches newlines too: paths may hold any byte but NUL
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '\\':
			if i+1 == len(p) {
				return "", false
			}
			i++
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		case '?':
			b.WriteString(`[^/]`)
		case '*':
			j := i
			for j+1 < len(p) && p[j+1] == '*' {
				j++
			}
			if j == i {
				b.WriteString(`[^/]*`)
				continue
			}
			boundary := i == 0 || p[i-1] == '/'
			i = j
			if boundary && i+1 < len(p) && p[i+1] == '/' {
				b.WriteString(`(?:.*/)?`)
				i++
				continue
			}
			b.WriteString(`.*`)
		case '[', '{', '}':
			return "", false
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`$`)
	return b.String(), true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func FuzzCompilePattern(f *testing.F) {
	for _, s := range [][2]string{
		{"/a/**/c", "/a/c"}, {"/a/**/c", "/a/bc"}, {"**/.git/hooks/**", "/x/.git/hooks/y"},
		{"/a/*/b?c", "/a/x/bxc"}, {"*.pem", "/x/y.pem"}, {"/a/[!b-d]x", "/a/ex"},
		{"0*" + strings.Repeat("?", 300) + "*", strings.Repeat("0", 400)},
		{"/a{/**/,/}b", "/a/b"}, {"/x/**/**/y", "/x/y"}, {"a**/b", "a/b"}, {"\\*\\**", "**x"},
		{"git push *", "git push"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, value string) {
		if bp, err := compileBashPattern(pattern); err == nil {
			bp.match(value)
		}
		pp, err := compilePathPattern(pattern)
		if err != nil {
			return
		}
		got := pp.match(value)
		// The literal pre-filter used by rule lists must never reject a
		// value the pattern matches.
		e := entryFor(&compiledRule{path: pp})
		if got && e.quickReject(value, lastComponent(value)) {
			t.Fatalf("pre-filter rejects %q for %q", value, pattern)
		}
		if !isASCII(pattern) || !isASCII(value) {
			return
		}
		re, ok := globRegexp(pattern)
		if !ok {
			return
		}
		m, _, err := compileGlob(pattern)
		if err != nil {
			t.Fatalf("compilePathPattern accepted %q but compileGlob did not: %v", pattern, err)
		}
		want := regexp.MustCompile(re).MatchString(value)
		if g := m.match(value); g != want {
			t.Fatalf("glob %q on %q = %v, reference %s says %v", pattern, value, g, re, want)
		}
	})
}

// TestGlobAgainstReference compares the matcher with the regexp
// reference on many generated patterns and values over a small alphabet,
// where the interesting interactions (`**/` at boundaries, stars next to
// slashes, escapes) are dense. Deterministic, so a failure reproduces.
func TestGlobAgainstReference(t *testing.T) {
	pieces := []string{"a", "b", "/", "*", "**", "?", "\\*", "/**/", "/**", "**/"}
	vals := []string{"a", "b", "/", "*"}
	seed := uint64(1)
	next := func(n int) int {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int(seed % uint64(n))
	}
	for i := 0; i < 20000; i++ {
		var p, v strings.Builder
		for j := next(6) + 1; j > 0; j-- {
			p.WriteString(pieces[next(len(pieces))])
		}
		for j := next(8); j > 0; j-- {
			v.WriteString(vals[next(len(vals))])
		}
		pattern, value := p.String(), v.String()
		m, _, err := compileGlob(pattern)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", pattern, err)
		}
		re, ok := globRegexp(pattern)
		if !ok {
			continue
		}
		want := regexp.MustCompile(re).MatchString(value)
		if got := m.match(value); got != want {
			t.Fatalf("glob %q on %q = %v, reference %s says %v", pattern, value, got, re, want)
		}
		// The word-sized automaton and the general one must agree too.
		if m.mid != nil && m.mid.bits() != nil {
			mid := value
			if len(mid) >= len(m.prefix)+len(m.suffix) && strings.HasPrefix(mid, m.prefix) && strings.HasSuffix(mid, m.suffix) {
				mid = mid[len(m.prefix) : len(mid)-len(m.suffix)]
			}
			small := m.mid.small
			m.mid.small = nil
			general := m.mid.match(mid)
			m.mid.small = small
			if general != small.match(mid) {
				t.Fatalf("glob %q middle on %q: general automaton %v, word automaton %v", pattern, mid, general, !general)
			}
		}
	}
}

// TestIndexAgreesWithLinearScan checks the rule index against a plain
// scan of the sorted rules on generated rule sets and values.
func TestIndexAgreesWithLinearScan(t *testing.T) {
	seed := uint64(7)
	next := func(n int) int {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int(seed % uint64(n))
	}
	pathPieces := []string{"/a", "/b", "/a/b", "/", "*", "**", "/**", "?", ".x", "/.x", "c"}
	valPieces := []string{"/a", "/b", "/", ".x", "c", "a"}
	bashPieces := []string{"git", " ", "push", "*", " *", "-f", "a"}
	bashVals := []string{"git", " ", "push", "-f", "a", "x"}
	gen := func(pieces []string, n int) string {
		var b strings.Builder
		for j := next(n) + 1; j > 0; j-- {
			b.WriteString(pieces[next(len(pieces))])
		}
		return b.String()
	}
	for round := 0; round < 1000; round++ {
		var paths, bashes []*compiledRule
		for i := 0; i < 30; i++ {
			if pp, err := compilePathPattern(gen(pathPieces, 5)); err == nil {
				paths = append(paths, &compiledRule{path: pp, spec: pp.spec, order: i})
			}
			if bp, err := compileBashPattern(gen(bashPieces, 5)); err == nil {
				bashes = append(bashes, &compiledRule{bash: bp, spec: bp.spec, order: i})
			}
		}
		pl, bl := newRuleList(paths), newRuleList(bashes)
		for i := 0; i < 200; i++ {
			v := gen(valPieces, 6)
			if got, want := pl.find(v), pl.findLinear(v); got != want {
				t.Fatalf("path value %q: index found %s, scan %s", v, patternOf(got), patternOf(want))
			}
			b := gen(bashVals, 6)
			if got, want := bl.find(b), bl.findLinear(b); got != want {
				t.Fatalf("bash value %q: index found %s, scan %s", b, patternOf(got), patternOf(want))
			}
		}
	}
}

func patternOf(r *compiledRule) string {
	switch {
	case r == nil:
		return "nothing"
	case r.path != nil:
		return fmt.Sprintf("%q (order %d)", r.path.expanded, r.order)
	}
	return fmt.Sprintf("%q (order %d)", strings.Join(r.bash.segs, "*"), r.order)
}

func TestCompileGlob(t *testing.T) {
	env := Env{Home: "/home/u", Workspace: "/w", TmpDir: "/tmp"}
	tests := []struct {
		pattern, value string
		want           bool
	}{
		{"~/old/**", "/home/u/old/a/b", true},
		{"~/old/**", "/home/u/old", true}, // X/** matches X
		{"${WORKSPACE}-old/**", "/w-old/x", true},
		{".env.*", ".env.local", true}, // a bare name: matched as a last component
		{".env.*", "/a/b/.env.local", true},
		{"*.pem", "id.pem", true},
		{"*.pem", "/x/y.pem/z", false},
		{"/a/**/b", "/a/b", true},
		{"/a/*", "relative", false},
	}
	for _, tt := range tests {
		g, err := CompileGlob(tt.pattern, env)
		if err != nil {
			t.Fatalf("%s: %v", tt.pattern, err)
		}
		if got := g.Match(tt.value); got != tt.want {
			t.Errorf("%s on %s = %v, want %v", tt.pattern, tt.value, got, tt.want)
		}
	}
	for _, bad := range []string{"~/x", "/a/{b,c}", "/a/[", "${NOPE}/x", ""} {
		if _, err := CompileGlob(bad, Env{}); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}

func FuzzQuoteGlob(f *testing.F) {
	for _, s := range []string{"/src/[x]{a,b}*", "~/x", "/a/${HOME}/b", `/a\b`, "/a/**/b?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" || s[0] != '/' || strings.IndexByte(s, 0) >= 0 {
			return
		}
		g, err := CompileGlob(QuoteGlob(s), Env{})
		if err != nil {
			t.Fatalf("QuoteGlob(%q) = %q does not compile: %v", s, QuoteGlob(s), err)
		}
		if !g.Match(s) {
			t.Fatalf("QuoteGlob(%q) = %q does not match itself", s, QuoteGlob(s))
		}
		if g.Match(s+"x") && !strings.HasSuffix(s, "/") {
			t.Fatalf("QuoteGlob(%q) matches more than itself", s)
		}
	})
}

// findLinear is find without the index: the reference the index is
// tested against.
func (l *ruleList) findLinear(v string) *compiledRule {
	if r, ok := l.exact[v]; ok {
		return r
	}
	for _, e := range l.rules {
		if e.r.match(v) {
			return e.r
		}
	}
	return nil
}
