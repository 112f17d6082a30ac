package engine

import (
	"fmt"
	"strings"
	"testing"
)

func TestDecideMoveDefault(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	const ws = "/home/u/src/proj"
	tests := []struct {
		name string
		m    Move
		want Action
		at   string // the path the answer names (Check.Value), when not ""
	}{
		// Ordinary moves stay silent.
		{"mv build build.old", Move{Kind: MoveRename, From: ws + "/build", To: ws + "/build.old", FromDir: true}, Allow, ""},
		{"a file saved by rename", Move{Kind: MoveRename, From: ws + "/main.go.tmp", To: ws + "/main.go"}, Allow, ""},
		{"npm moves a package into place", Move{Kind: MoveRename, From: ws + "/node_modules/.staging/lodash-4a1b", To: ws + "/node_modules/lodash", FromDir: true}, Allow, ""},
		{"go extracts a module", Move{Kind: MoveRename, From: "/home/u/go/pkg/mod/golang.org/x/tools@v0.1.0.tmp-123", To: "/home/u/go/pkg/mod/golang.org/x/tools@v0.1.0", FromDir: true}, Allow, ""},
		{"cargo unpacks a crate", Move{Kind: MoveRename, From: "/home/u/.cargo/registry/src/index/.tmpAbC", To: "/home/u/.cargo/registry/src/index/serde-1.0.0", FromDir: true}, Allow, ""},
		{"pip installs a package", Move{Kind: MoveRename, From: ws + "/.venv/lib/python3.12/site-packages/~equests", To: ws + "/.venv/lib/python3.12/site-packages/requests", FromDir: true}, Allow, ""},
		{"renames inside /tmp", Move{Kind: MoveRename, From: "/tmp/u/go-build1/b001", To: "/tmp/u/go-build1/b002", FromDir: true}, Allow, ""},
		{"a git object into place", Move{Kind: MoveRename, From: ws + "/.git/objects/ab/tmp_obj_x", To: ws + "/.git/objects/ab/cdef"}, Allow, ""},
		{"git's index lock", Move{Kind: MoveRename, From: ws + "/.git/index.lock", To: ws + "/.git/index"}, Allow, ""},
		{"a symlink inside the workspace", Move{Kind: MoveSymlink, From: ws + "/target", To: ws + "/link", FromDir: true}, Allow, ""},
		{"a hard link inside the workspace", Move{Kind: MoveLink, From: ws + "/a.o", To: ws + "/b.o"}, Allow, ""},

		// Moving .git aside or back meets the hooks rule beneath it.
		{".git aside", Move{Kind: MoveRename, From: ws + "/.git", To: ws + "/.git2", FromDir: true}, Ask, ws + "/.git/hooks/"},
		{".git back", Move{Kind: MoveRename, From: ws + "/.git2", To: ws + "/.git", FromDir: true}, Ask, ws + "/.git/hooks/"},
		{"a prepared directory becomes .git", Move{Kind: MoveRename, From: "/tmp/u/prep", To: ws + "/sub/.git", FromDir: true}, Ask, ws + "/sub/.git/hooks/"},
		{"hooks directory swapped in", Move{Kind: MoveRename, From: ws + "/.git/h2", To: ws + "/.git/hooks", FromDir: true}, Ask, ""},
		{"exchange with .git", Move{Kind: MoveExchange, From: ws + "/x", To: ws + "/.git", FromDir: true, ToDir: true}, Ask, ""},
		{"a hook by rename", Move{Kind: MoveRename, From: ws + "/.git/hooks/pre-commit.sample", To: ws + "/.git/hooks/pre-commit"}, Ask, ""},
		{"a hook by hard link", Move{Kind: MoveLink, From: ws + "/evil", To: ws + "/.git/hooks/pre-commit"}, Ask, ""},
		{"a hook writable through a link elsewhere", Move{Kind: MoveLink, From: ws + "/.git/hooks/pre-commit", To: "/tmp/u/h"}, Ask, ws + "/.git/hooks/pre-commit"},
		{"hooks directory as a symlink to /tmp", Move{Kind: MoveSymlink, From: "/tmp/u/h", To: ws + "/.git/hooks", FromDir: true}, Ask, ws + "/.git/hooks/"},
		{"autostart as a symlink to /tmp", Move{Kind: MoveSymlink, From: "/tmp/u/a", To: "/home/u/.config/autostart", FromDir: true}, Ask, "/home/u/.config/autostart"},
		{"autostart entries as a symlink to /tmp", Move{Kind: MoveSymlink, From: "/tmp/u/a", To: "/home/u/.config/autostart/x", FromDir: true}, Ask, "/home/u/.config/autostart/x"},
		{"a new repository's .git as a symlink to /tmp", Move{Kind: MoveSymlink, From: "/tmp/u/g", To: ws + "/sub/.git", FromDir: true}, Ask, ws + "/sub/.git/hooks/"},
		{"a symlink into ~/.ssh", Move{Kind: MoveSymlink, From: "/tmp/u/keys", To: "/home/u/.ssh", FromDir: true}, Ask, "/home/u/.ssh"},

		// A symlink moves nothing: between places the policy treats
		// alike, or from a place it guards to one it does not, only the
		// link's own name is written.
		{"a link in an agent's state to a file", Move{Kind: MoveSymlink, From: "/etc/hostname", To: "/home/u/.codex/tmp/arg0/l"}, Allow, ""},
		{"a link in an agent's state to a missing name", Move{Kind: MoveSymlink, From: ws + "/nothere", To: "/home/u/.codex/tmp/arg0/codex-arg0", FromDir: true}, Allow, ""},
		{"a link in the workspace to a system directory", Move{Kind: MoveSymlink, From: "/usr/lib", To: ws + "/lib", FromDir: true}, Allow, ""},
		{"a link to /tmp in /tmp", Move{Kind: MoveSymlink, From: "/tmp", To: "/tmp/x", FromDir: true}, Allow, ""},
		{"a link to / in /tmp", Move{Kind: MoveSymlink, From: "/", To: "/tmp/u/root", FromDir: true}, Allow, ""},
		{"a link to .. in the workspace", Move{Kind: MoveSymlink, From: "/home/u/src", To: ws + "/up", FromDir: true}, Allow, ""},
		{"a link to ~/.ssh in the workspace", Move{Kind: MoveSymlink, From: "/home/u/.ssh", To: ws + "/ssh", FromDir: true}, Allow, ""},
		{"the link's own name guarded", Move{Kind: MoveSymlink, From: ws + "/rc", To: "/home/u/.bashrc"}, Ask, "/home/u/.bashrc"},

		// Secrets and start-up files.
		{"a directory becomes ~/.ssh", Move{Kind: MoveRename, From: "/tmp/u/x", To: "/home/u/.ssh", FromDir: true}, Ask, ""},
		{"~/.ssh renamed away", Move{Kind: MoveRename, From: "/home/u/.ssh", To: "/tmp/u/x", FromDir: true}, Ask, ""},
		{"a key linked out of ~/.ssh", Move{Kind: MoveLink, From: "/home/u/.ssh/id_ed25519", To: ws + "/k"}, Ask, "/home/u/.ssh/id_ed25519"},
		{"~/.bashrc replaced", Move{Kind: MoveRename, From: ws + "/rc", To: "/home/u/.bashrc"}, Ask, ""},
	}
	for _, tt := range tests {
		r := p.DecideMove(tt.m)
		// at ending in '/' names a directory the place lies in.
		if r.Action != tt.want || tt.at != "" && r.Check.Value != tt.at && !(strings.HasSuffix(tt.at, "/") && strings.HasPrefix(r.Check.Value, tt.at)) {
			t.Errorf("%s: DecideMove(%v) = %v, want %v at %q", tt.name, tt.m, r, tt.want, tt.at)
		}
	}
}

// A symlink is a write of its own name, and beneath a directory target
// the answer at a guarded To/p wherever From/p is looser.
func TestDecideMoveSymlinkBeneath(t *testing.T) {
	p, _ := compile(t, `{"permission": {
		"write": {"*": "ask", "/w/**": "allow", "/w/guard/**": "deny", "/w/**/secret.conf": "ask", "/t/**": "allow", "/t/g/**": "ask"}
	}}`)
	tests := []struct {
		name string
		m    Move
		want Action
		at   string
	}{
		{"a guarded tree's name by a link", Move{Kind: MoveSymlink, From: "/t/x", To: "/w/guard", FromDir: true}, Deny, "/w/guard"},
		{"into a guarded subtree from a looser one", Move{Kind: MoveSymlink, From: "/t/x", To: "/w/a", FromDir: true}, Ask, "/w/a/secret.conf"},
		{"guarded the same on both sides", Move{Kind: MoveSymlink, From: "/w/b", To: "/w/a", FromDir: true}, Allow, ""},
		{"from a stricter place", Move{Kind: MoveSymlink, From: "/u/x", To: "/w/a", FromDir: true}, Allow, ""},
		{"a file target: the name only", Move{Kind: MoveSymlink, From: "/t/x", To: "/w/a"}, Allow, ""},
		{"out of a guarded tree", Move{Kind: MoveSymlink, From: "/w/guard", To: "/t/l", FromDir: true}, Allow, ""},
		{"into an asking tree from a denying one", Move{Kind: MoveSymlink, From: "/w/guard/x", To: "/t/g", FromDir: true}, Ask, "/t/g"},
	}
	for _, tt := range tests {
		for round := range 2 { // the second meets the remembered search
			r := p.DecideMove(tt.m)
			if r.Action != tt.want || tt.at != "" && r.Check.Value != tt.at {
				t.Errorf("%s (round %d): DecideMove(%v) = %v, want %v at %q", tt.name, round, tt.m, r, tt.want, tt.at)
			}
		}
	}
}

// A remembered symlink search holds only under the session rules it was
// made under: a session rule that changes what lies beneath counts.
func TestDecideMoveSymlinkSessionRules(t *testing.T) {
	p, _ := compile(t, `{"permission": {"write": {"*": "ask", "/w/**": "allow", "/w/a/x/**": "ask", "/t/**": "ask"}}}`)
	m := Move{Kind: MoveSymlink, From: "/t/l", To: "/w/a", FromDir: true}
	if r := p.DecideMove(m); r.Action != Allow {
		t.Fatalf("before: %v, want allow (asks beneath on both sides)", r)
	}
	if _, err := p.AddSessionRule(SurfaceWrite, "/t/**"); err != nil {
		t.Fatal(err)
	}
	if r := p.DecideMove(m); r.Action != Ask || r.Check.Value != "/w/a/x" {
		t.Fatalf("after /t/** is allowed for the session: %v, want ask at /w/a/x", r)
	}
}

func TestDecideMoveRefer(t *testing.T) {
	p, _ := compile(t, `{"permission": {
		"read": {"*": "allow", "/w/a/secret/**": "deny", "/w/vault/**": "ask"},
		"write": {"*": "ask", "/w/**": "allow"},
		"exec": {"*": "allow", "/w/noexec/**": "deny"}
	}}`)
	tests := []struct {
		name string
		m    Move
		want Action
		at   string
	}{
		// Renaming the parent of a protected file moves the file.
		{"parent of a read-denied tree", Move{Kind: MoveRename, From: "/w/a", To: "/w/b", FromDir: true}, Deny, "/w/a/secret"},
		{"grandparent", Move{Kind: MoveRename, From: "/w", To: "/w2", FromDir: true}, Deny, ""},
		{"into the protected place is narrowing, but still a write there", Move{Kind: MoveRename, From: "/w/b", To: "/w/a", FromDir: true}, Allow, ""},
		{"an exec-denied tree", Move{Kind: MoveRename, From: "/w/noexec", To: "/w/ok", FromDir: true}, Deny, "/w/noexec"},
		{"a file out of an asking tree", Move{Kind: MoveRename, From: "/w/vault/k", To: "/w/k"}, Ask, "/w/vault/k"},
		{"a file link out of a denied tree", Move{Kind: MoveLink, From: "/w/a/secret/k", To: "/w/k"}, Deny, "/w/a/secret/k"},
		{"a file (not a directory) named like a parent", Move{Kind: MoveRename, From: "/w/a", To: "/w/b"}, Allow, ""},
		{"exchange both ways", Move{Kind: MoveExchange, From: "/w/b", To: "/w/a", FromDir: true, ToDir: true}, Deny, ""},
		{"relative path", Move{Kind: MoveRename, From: "w/a", To: "/w/b"}, Deny, ""},
		{"no kind", Move{From: "/w/a", To: "/w/b"}, Deny, ""},
	}
	for _, tt := range tests {
		r := p.DecideMove(tt.m)
		if r.Action != tt.want || tt.at != "" && r.Check.Value != tt.at {
			t.Errorf("%s: DecideMove(%v) = %v, want %v at %q", tt.name, tt.m, r, tt.want, tt.at)
		}
	}
}

func TestDecideMoveContent(t *testing.T) {
	p, _ := compile(t, `{"permission": {
		"read": {"*": "allow", "*.pem": {"action": "ask", "content": "secret"}},
		"write": {"*": "allow"}
	}}`)
	m := Move{Kind: MoveRename, From: "/w/server.pem", To: "/w/server.pem.bak"}
	r := p.DecideMove(m)
	if r.Action != Ask || !r.DependsOnContent {
		t.Fatalf("strict: %v", r)
	}
	if r := p.DecideMoveContent(m, false); r.Action != Allow {
		t.Errorf("a certificate renamed: %v", r)
	}
	if r := p.DecideMoveContent(m, true); r.Action != Ask || r.Check.Value != "/w/server.pem" {
		t.Errorf("a key renamed out of its name: %v", r)
	}
	// Into the name: not a widening either way.
	if r := p.DecideMove(Move{Kind: MoveRename, From: "/w/tmp123", To: "/w/server.pem"}); r.Action != Allow || r.DependsOnContent {
		t.Errorf("saved by rename: %v", r)
	}
	// A directory's contents have not been looked at: no waiting on a look.
	if r := p.DecideMove(Move{Kind: MoveRename, From: "/w/certs", To: "/w/c2", FromDir: true}); r.Action != Allow {
		t.Errorf("directory: %v", r)
	}
}

// TestDecideMoveAgainstBruteForce checks the search beneath a moved
// directory against enumerating every suffix up to a length, on
// generated policies: whatever the enumeration finds, the search finds
// (it is at least as strict), and what the search answers is witnessed
// by a real path (it is not stricter than some real suffix).
func TestDecideMoveAgainstBruteForce(t *testing.T) {
	seed := uint64(11)
	next := func(n int) int {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int(seed % uint64(n))
	}
	pieces := []string{"/a", "/b", "/.g", "/**", "*", "?", "a", ".g", "/h"}
	names := []string{"/r/a", "/r/b", "/r/.g", "/r/a/.g", "/r/ab", "/r"}
	alphabet := []string{"a", "b", ".", "g", "h", "/"}
	actions := []string{"allow", "ask", "deny"}
	gen := func() string {
		var b strings.Builder
		if next(3) > 0 {
			b.WriteString("/r")
		}
		for j := next(4) + 1; j > 0; j-- {
			b.WriteString(pieces[next(len(pieces))])
		}
		return b.String()
	}
	var suffixes []string
	var grow func(s string, n int)
	grow = func(s string, n int) {
		if s != "" && !strings.HasSuffix(s, "/") && validSuffix(s) {
			suffixes = append(suffixes, s)
		}
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(s+c, n-1)
		}
	}
	grow("", 5)
	checked := 0
	for round := 0; round < 300; round++ {
		var rules []string
		for s, surf := range []string{"read", "write", "exec"} {
			_ = s
			var b strings.Builder
			fmt.Fprintf(&b, `"%s": {"*": "%s"`, surf, actions[next(2)])
			for i := next(4); i > 0; i-- {
				fmt.Fprintf(&b, `, %q: %q`, gen(), actions[next(3)])
			}
			b.WriteString("}")
			rules = append(rules, b.String())
		}
		src := `{"permission": {` + strings.Join(rules, ",") + `}}`
		cfg := Config{Env: testEnv, Global: &File{Name: "g.jsonc", Data: []byte(src)}}
		p, _, err := Compile(cfg)
		if err != nil {
			continue // a duplicate key: skip this round
		}
		from, to := names[next(len(names))], names[next(len(names))]
		if from == to || strings.HasPrefix(to, from+"/") || strings.HasPrefix(from, to+"/") {
			continue
		}
		m := Move{Kind: MoveRename, From: from, To: to, FromDir: true}
		got := p.DecideMove(m)
		// Brute force: the names, then every suffix.
		want := bruteMove(p, from, to, suffixes)
		if got.Action < want {
			t.Fatalf("policy %s\nmove %v: search says %v, but a suffix gives %v", src, m, got, want)
		}
		if got.Action > want {
			// Stricter than every short suffix: the witness must be real
			// and longer than the enumeration.
			if got.Check.Value == from || got.Check.Value == to {
				t.Fatalf("policy %s\nmove %v: %v stricter than brute force %v at a name", src, m, got, want)
			}
			sub := strings.TrimPrefix(strings.TrimPrefix(got.Check.Value, from+"/"), to+"/")
			if w := bruteMove(p, from, to, []string{sub}); w != got.Action {
				t.Fatalf("policy %s\nmove %v: %v is not witnessed by %q (gives %v)", src, m, got, sub, w)
			}
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("only %d rounds checked", checked)
	}
}

func validSuffix(s string) bool {
	for _, c := range strings.Split(s, "/") {
		if c == "" || c == "." || c == ".." {
			return false
		}
	}
	return true
}

// bruteMove is DecideMove's rename answer by enumeration: the names and
// each given suffix, judged where the matching rules differ.
func bruteMove(p *Policy, from, to string, subs []string) Action {
	best := Allow
	up := func(a Action) {
		if a > best {
			best = a
		}
	}
	up(p.DecidePath(AccessWrite, from).Action)
	up(p.DecidePath(AccessWrite, to).Action)
	refer := func(f, t string) {
		for _, a := range []Access{AccessRead, AccessExec} {
			if b := p.DecidePath(a, f).Action; p.DecidePath(a, t).Action < b {
				up(b)
			}
		}
	}
	refer(from, to)
	for _, sub := range subs {
		f, t := from+"/"+sub, to+"/"+sub
		if sameRules(p, f, t) {
			continue
		}
		up(p.DecidePath(AccessWrite, f).Action)
		up(p.DecidePath(AccessWrite, t).Action)
		refer(f, t)
	}
	return best
}

// sameRules reports whether the same path rules match a and b.
func sameRules(p *Policy, a, b string) bool {
	same := true
	p.eachPathRule(true, func(r *compiledRule) {
		if r.path.match(a) != r.path.match(b) {
			same = false
		}
	})
	return same
}

func BenchmarkDecideMove(b *testing.B) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range []Move{
		{Kind: MoveRename, From: "/home/u/src/proj/main.go.tmp", To: "/home/u/src/proj/main.go"},
		{Kind: MoveRename, From: "/home/u/src/proj/build", To: "/home/u/src/proj/build.old", FromDir: true},
		{Kind: MoveRename, From: "/home/u/src/proj/.git", To: "/home/u/src/proj/.git2", FromDir: true},
	} {
		b.Run(strings.ReplaceAll(strings.TrimPrefix(m.To, "/home/u/src/proj/"), "/", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sink = p.DecideMove(m)
			}
		})
	}
}

// FuzzDecideMove: any pattern, any two names: no panic, an answer in
// bounded time, and never more lenient than enumerating short suffixes
// over the bytes that matter to the pattern.
func FuzzDecideMove(f *testing.F) {
	f.Add("**/.git/hooks/?**", "/w/.git", "/w/.git2")
	f.Add("/w/a/*/b[x-z]/**", "/w/a", "/w/c")
	f.Add("*.pem", "/w/a", "/w/b")
	f.Add("/w/**/x**y/**", "/w/p", "/w/q/r")
	f.Fuzz(func(t *testing.T, pattern, from, to string) {
		if len(pattern) > 64 || !strings.HasPrefix(from, "/") || !strings.HasPrefix(to, "/") || len(from) > 32 || len(to) > 32 {
			return
		}
		if strings.ContainsAny(pattern+from+to, "\x00\"\\") || !validSuffix(strings.TrimPrefix(from, "/")) || !validSuffix(strings.TrimPrefix(to, "/")) {
			return
		}
		src := fmt.Sprintf(`{"permission": {"write": {"*": "allow", %q: "ask"}, "read": {"*": "allow", %q: "deny"}}}`, pattern, pattern)
		p, _, err := Compile(Config{Env: testEnv, Global: &File{Name: "f.jsonc", Data: []byte(src)}})
		if err != nil {
			return
		}
		m := Move{Kind: MoveRename, From: from, To: to, FromDir: true}
		got := p.DecideMove(m)
		alphabet := map[string]bool{"/": true, "a": true}
		for i := 0; i < len(pattern); i++ {
			if c := pattern[i]; c != '*' && c != '?' && c != '[' && c != ']' {
				alphabet[string(c)] = true
			}
		}
		var subs []string
		var grow func(s string, n int)
		grow = func(s string, n int) {
			if s != "" && !strings.HasSuffix(s, "/") && validSuffix(s) {
				subs = append(subs, s)
			}
			if n == 0 || len(subs) > 5000 {
				return
			}
			for c := range alphabet {
				grow(s+c, n-1)
			}
		}
		grow("", 3)
		if want := bruteMove(p, from, to, subs); got.Action < want {
			t.Fatalf("pattern %q, %v: search %v, enumeration %v", pattern, m, got, want)
		}
	})
}

// TestDecideMoveBudget: when the search beneath cannot finish, the answer
// is at least as strict as the exact one and names what could decide.
func TestDecideMoveBudget(t *testing.T) {
	p, _ := compile(t, `{"permission": {
		"read": {"*": "allow", "*.key": "deny"},
		"write": {"*": "ask", "/w/**": "allow", "**/.git/hooks/?**": "ask"}
	}}`)
	moves := []Move{
		{Kind: MoveRename, From: "/w/.git", To: "/w/.git2", FromDir: true},
		{Kind: MoveRename, From: "/w/a", To: "/w/.git", FromDir: true},
		{Kind: MoveSymlink, From: "/tmp/h", To: "/w/.git/hooks", FromDir: true},
	}
	exact := make([]Result, len(moves))
	for i, m := range moves {
		exact[i] = p.DecideMove(m)
	}
	for _, budget := range []*int{&maxMoveStates, &maxMoveSteps, &maxMoveElems} {
		old := *budget
		*budget = 1
		for i, m := range moves {
			r := p.DecideMove(m)
			if r.Action < exact[i].Action {
				t.Errorf("%v within budget %v, exhausted %v: less strict", m, exact[i], r)
			}
			if r.Action == Deny && r.Rule.Pattern != "*.key" {
				t.Errorf("%v: %v does not name the rule that could deny", m, r)
			}
		}
		*budget = old
	}
}

// TestDecideMoveLargePolicy: a policy of many wildcard-heavy rules does
// not stall a rename (the work bounds hold), and the answer stays at
// least as strict as the rules beneath could make it.
func TestDecideMoveLargePolicy(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"permission": {"write": {"*": "allow"`)
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&b, `, "**/d%d/**x%d*y?/**": "ask"`, i, i)
	}
	b.WriteString(`}, "read": {"*": "allow", "**/s/**": "deny"}}}`)
	p, _ := compile(t, b.String())
	m := Move{Kind: MoveRename, From: "/w/d1", To: "/w/e1", FromDir: true}
	if r := p.DecideMove(m); r.Action != Deny && r.Action != Ask {
		t.Errorf("%v: %v", m, r)
	}
}

func BenchmarkDecideMoveLargePolicy(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"permission": {"write": {"*": "allow"`)
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&sb, `, "**/d%d/**x%d*y?/**": "ask"`, i, i)
	}
	sb.WriteString(`}, "read": {"*": "allow", "**/s/**": "deny"}}}`)
	p, _ := compile(b, sb.String())
	m := Move{Kind: MoveRename, From: "/w/d1", To: "/w/e1", FromDir: true}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sink = p.DecideMove(m)
	}
}

// TestDecideMoveConcurrent: the automata are built lazily, once; moves
// are judged from many goroutines while session rules are added (run
// with -race).
func TestDecideMoveConcurrent(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	moves := []Move{
		{Kind: MoveRename, From: "/home/u/src/proj/.git", To: "/home/u/src/proj/.git2", FromDir: true},
		{Kind: MoveRename, From: "/home/u/src/proj/build", To: "/home/u/src/proj/b2", FromDir: true},
		{Kind: MoveSymlink, From: "/tmp/u/h", To: "/home/u/src/proj/.git/hooks", FromDir: true},
	}
	want := make([]Action, len(moves))
	for i, m := range moves {
		want[i] = p.DecideMove(m).Action
	}
	q, _, _ := Compile(Config{Env: testEnv}) // fresh: nothing built yet
	done := make(chan bool)
	for g := 0; g < 8; g++ {
		go func(g int) {
			defer func() { done <- true }()
			for i := 0; i < 20; i++ {
				m := moves[(g+i)%len(moves)]
				if got := q.DecideMove(m).Action; got != want[(g+i)%len(moves)] {
					t.Errorf("%v: %v, want %v", m, got, want[(g+i)%len(moves)])
				}
				if g == 0 {
					q.AddSessionRule(SurfaceWrite, fmt.Sprintf("/opt/s%d/**", i))
				}
			}
		}(g)
	}
	for g := 0; g < 8; g++ {
		<-done
	}
}

// A directory on the way to a tree the policy lets the agent write in is
// made without asking; one a rule names is judged by it.
func TestDecideMkdir(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		want Action
	}{
		{"/home/u/.config", Allow},              // on the way to ~/.config/go/telemetry/**
		{"/home/u/.config/go", Allow},           // likewise
		{"/home/u/.config/go/telemetry", Allow}, // the allowed tree itself (X/** matches X)
		{"/home/u/src", Allow},                  // on the way to the workspace
		{"/home/u/.config/autostart", Ask},      // named by ~/.config/autostart/**
		{"/home/u/.ssh", Ask},                   // named by ~/.ssh/**
		{"/home/u/.config/elsewhere", Ask},      // on the way to nothing allowed
		{"/home/u/.local/bin", Ask},             // named
		{"/home/u/.config/permwrap", Deny},      // permwrap's own
		{"/etc/cron.d", Ask},                    // nothing allowed beneath
	} {
		if r := p.DecideMkdir(c.dir); r.Action != c.want {
			t.Errorf("DecideMkdir(%s) = %v, want %v", c.dir, r, c.want)
		}
	}
}
