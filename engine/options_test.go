package engine

import (
	"strings"
	"testing"
)

// The policy: pushes to origin allowed, a force push denied
// wherever and however its option is written.
const optionsTestPolicy = `{
  "permission": {
    "exec": {"*": "allow"},
    "read": {"*": "allow"},
    "bash": {
      "*": "ask",
      "git push origin *": "allow",
      "git push --force*": "deny",
      "rm -rf / *": "deny",
      "rm *": "allow",
      "curl -X POST *": "ask",
      "curl *": "allow",
      "docker run --privileged*": "deny",
      "docker run *": "allow",
      "kubectl delete * --all*": "deny",
      "kubectl *": "allow",
      "npm install -g *": "ask",
      "npm *": "allow",
      "mytool --danger*": "deny",
      "mytool ok *": "allow",
      "git push -o ci.skip origin main": "allow"
    }
  }
}`

func TestOptionRules(t *testing.T) {
	p := compileTest(t, optionsTestPolicy)
	for _, tc := range []struct {
		argv []string
		want Action
		rule string
	}{
		// The cases.
		{[]string{"git", "push", "-q", "origin", "main"}, Allow, "git push origin *"},
		{[]string{"git", "push", "origin", "main"}, Allow, "git push origin *"},
		{[]string{"git", "push", "--force", "origin", "main"}, Deny, "git push --force*"},
		{[]string{"git", "push", "origin", "main", "--force"}, Deny, "git push --force*"},
		{[]string{"git", "push", "-f", "origin", "main"}, Deny, "git push --force*"},
		{[]string{"git", "push", "-qf", "origin", "main"}, Deny, "git push --force*"},
		{[]string{"git", "push", "origin", "+main"}, Deny, "git push --force*"},
		{[]string{"git", "push", "origin", "main:main", "+dev:dev"}, Deny, "git push --force*"},
		{[]string{"git", "push", "--forc", "origin", "main"}, Deny, "git push --force*"},
		{[]string{"git", "push", "--force-with-lease", "origin", "main"}, Deny, "git push --force*"},
		{[]string{"git", "push", "--force-with-lease=main:abc", "origin", "main"}, Deny, "git push --force*"},
		{[]string{"git", "push", "--mirror", "origin"}, Deny, "git push --force*"},
		{[]string{"git", "-C", "/w", "push", "-f", "origin", "main"}, Deny, "git push --force*"},
		{[]string{"/usr/bin/git", "push", "origin", "-f", "main"}, Deny, "git push --force*"},
		{[]string{"git", "-c", "remote.origin.push=+main:main", "push", "origin"}, Deny, "git push --force*"},
		// A value is not an operand: -o takes ci.skip.
		{[]string{"git", "push", "-o", "ci.skip", "origin", "main"}, Allow, "git push -o ci.skip origin main"},
		{[]string{"git", "push", "--push-option", "ci.skip", "origin", "main"}, Allow, "git push -o ci.skip origin main"},
		{[]string{"git", "push", "--push-option=ci.skip", "origin", "main"}, Allow, "git push -o ci.skip origin main"},
		{[]string{"git", "push", "-o", "x", "origin", "main"}, Allow, "git push origin *"},
		// The remote is the first operand: ci.skip would be read as it if
		// -o were a flag; origin as a value of --repo is not a remote.
		{[]string{"git", "push", "--repo", "origin", "other", "main"}, Ask, "*"},
		{[]string{"git", "push", "-q", "other", "main"}, Ask, "*"},
		// After --, a word is an operand.
		{[]string{"git", "push", "origin", "--", "--force"}, Allow, "git push origin *"},
		// --no-force negates.
		{[]string{"git", "push", "--no-force", "origin", "main"}, Allow, "git push origin *"},
		// An option git push does not know: the flag reading is certain,
		// the value reading only possible.
		{[]string{"git", "push", "--frobnicate", "origin", "main"}, Allow, "git push origin *"},
		// rm: clusters, order and aliases.
		{[]string{"rm", "-rf", "/"}, Deny, "rm -rf / *"},
		{[]string{"rm", "-r", "-f", "/"}, Deny, "rm -rf / *"},
		{[]string{"rm", "-fr", "/"}, Deny, "rm -rf / *"},
		{[]string{"rm", "/", "-rf"}, Deny, "rm -rf / *"},
		{[]string{"rm", "--recursive", "--force", "/"}, Deny, "rm -rf / *"},
		{[]string{"rm", "--recur", "--forc", "/"}, Deny, "rm -rf / *"},
		{[]string{"rm", "-rf", "build"}, Allow, "rm *"},
		// curl: a value-taking option.
		{[]string{"curl", "-sS", "-X", "POST", "https://x"}, Ask, "curl -X POST *"},
		{[]string{"curl", "https://x", "--request", "POST"}, Ask, "curl -X POST *"},
		{[]string{"curl", "-XPOST", "https://x"}, Ask, "curl -X POST *"},
		{[]string{"curl", "-X", "GET", "https://x"}, Allow, "curl *"},
		// docker run: options end at the image; the container's command
		// is operands.
		{[]string{"docker", "run", "--rm", "--privileged", "alpine"}, Deny, "docker run --privileged*"},
		{[]string{"docker", "run", "--rm", "alpine", "ls", "--privileged"}, Allow, "docker run *"},
		// kubectl: flags anywhere.
		{[]string{"kubectl", "-n", "prod", "delete", "pods", "--all"}, Deny, "kubectl delete * --all*"},
		{[]string{"kubectl", "delete", "pod", "x", "-n", "prod"}, Allow, "kubectl *"},
		// npm.
		{[]string{"npm", "install", "left-pad", "-g"}, Ask, "npm install -g *"},
		{[]string{"npm", "--global", "install", "left-pad"}, Ask, "npm install -g *"},
		{[]string{"npm", "install", "left-pad"}, Allow, "npm *"},
		// A program without a table: its options are read only possibly,
		// which a deny can use and an allow cannot.
		{[]string{"mytool", "ok", "--danger"}, Deny, "mytool --danger*"},
		{[]string{"mytool", "-v", "ok"}, Ask, "*"},
		{[]string{"mytool", "ok", "-v"}, Allow, "mytool ok *"},
	} {
		d := p.DecideExec(ExecIntent{Path: tc.argv[0], Resolved: "/usr/bin/" + baseOf(tc.argv[0]), Argv: tc.argv, Cwd: "/w"})
		if r := d.Units[0].Result; r.Action != tc.want || r.Rule.Pattern != tc.rule {
			t.Errorf("exec %q: %s by %q, want %s by %q (judged as %q, and if stricter %q)", tc.argv, r.Action, r.Rule.Pattern, tc.want, tc.rule, showReadings(d.Units[0].Spellings, ""), showReadings(d.Units[0].Possible, ""))
		}
		// The bash surface: the same command in a script.
		line := strings.Join(tc.argv, " ")
		sd := p.DecideExec(ExecIntent{Path: "/bin/bash", Resolved: "/usr/bin/bash", Argv: []string{"bash", "-c", line}, Cwd: "/w"})
		found := false
		for _, u := range sd.Units {
			if len(u.Unit.Argv) > 0 && u.Unit.Argv[0] == tc.argv[0] {
				found = true
				if u.Result.Action != tc.want || u.Result.Rule.Pattern != tc.rule {
					t.Errorf("bash -c %q: %s by %q, want %s by %q", line, u.Result.Action, u.Result.Rule.Pattern, tc.want, tc.rule)
				}
			}
		}
		if !found {
			t.Errorf("bash -c %q: no unit for %s", line, tc.argv[0])
		}
	}
}

// Rules naming as many options rank alike: the most restrictive wins,
// whichever reading (the line as written, the option reading) each
// matched and whatever their lengths.
func TestOptionRulesTie(t *testing.T) {
	p := compileTest(t, `{"permission": {"exec": {"*": "allow"}, "bash": {
	  "*": "ask", "git push --quiet *": "allow", "git push --force*": "deny", "git push *": "ask"}}}`)
	for _, tc := range []struct {
		line string
		want Action
		rule string
	}{
		{"git push --quiet --force origin main", Deny, "git push --force*"},
		{"git push --force --quiet origin main", Deny, "git push --force*"},
		{"git push -qf origin main", Deny, "git push --force*"},
		{"git push --quiet other main", Allow, "git push --quiet *"},
		{"git push other main -q", Allow, "git push --quiet *"},
		{"git push other main", Ask, "git push *"},
	} {
		argv := strings.Fields(tc.line)
		d := p.DecideExec(ExecIntent{Path: "git", Resolved: "/usr/bin/git", Argv: argv, Cwd: "/w"})
		if r := d.Units[0].Result; r.Action != tc.want || r.Rule.Pattern != tc.rule {
			t.Errorf("%s: %s by %q, want %s by %q", tc.line, r.Action, r.Rule.Pattern, tc.want, tc.rule)
		}
	}
}

// A rule is more specific only when it names everything the other
// names and more; rules naming different things leave it to the most
// restrictive (docs/bash-rules.md §2.2).
func TestOptionRulesRank(t *testing.T) {
	p := compileTest(t, `{"permission": {"exec": {"*": "allow"}, "bash": {"*": "ask",
	  "git push *": "deny", "git push --dry-run *": "allow", "git push --dry-run --force*": "ask",
	  "curl https://internal.example/*": "deny", "curl -s *": "allow",
	  "npm -g *": "deny", "npm install -g eslint": "allow"}}}`)
	for _, tc := range []struct {
		line string
		want Action
		rule string
	}{
		// --dry-run names more than git push *: its allow stands,
		// wherever the option is.
		{"git push --dry-run origin main", Allow, "git push --dry-run *"},
		{"git push origin main --dry-run", Allow, "git push --dry-run *"},
		{"git push -n origin main", Allow, "git push --dry-run *"},
		{"git push origin main", Deny, "git push *"},
		{"git push --dry-run -f origin", Ask, "git push --dry-run --force*"},
		// An option and an operand are different things: the deny.
		{"curl -s https://internal.example/x", Deny, "curl https://internal.example/*"},
		{"curl https://internal.example/x -s", Deny, "curl https://internal.example/*"},
		{"curl -s https://example.org", Allow, "curl -s *"},
		// An exact rule is the most specific, options in any order.
		{"npm install eslint -g", Allow, "npm install -g eslint"},
		{"npm install -g left-pad", Deny, "npm -g *"},
	} {
		argv := strings.Fields(tc.line)
		d := p.DecideExec(ExecIntent{Path: argv[0], Resolved: "/usr/bin/" + argv[0], Argv: argv, Cwd: "/w"})
		if r := d.Units[0].Result; r.Action != tc.want || r.Rule.Pattern != tc.rule {
			t.Errorf("%s: %s by %q, want %s by %q", tc.line, r.Action, r.Rule.Pattern, tc.want, tc.rule)
		}
	}
}

// The default profile's rules about force pushes stay when a policy
// allows pushes by their operands: the rules name different things.
func TestOptionRulesOverDefault(t *testing.T) {
	p, warns, err := Compile(Config{
		Global:         &File{Name: "policy.jsonc", Data: []byte(`{"permission": {"bash": {"git push origin *": "allow", "git push --dry-run *": "allow"}}}`)},
		DefaultExtends: DefaultProfile,
		Env:            Env{Home: "/home/u", Workspace: "/w", TmpDir: "/tmp"},
	})
	if err != nil || len(warns) > 0 {
		t.Fatal(err, warns)
	}
	for _, tc := range []struct {
		line string
		want Action
		rule string
	}{
		{"git push -q origin main", Allow, "git push origin *"},
		{"git push origin main", Allow, "git push origin *"},
		{"git push -f origin main", Ask, "git push -f*"},
		{"git push origin main --force", Ask, "git push --force*"},
		{"git push origin +main", Ask, "git push --force*"},
		{"git push -q other main", Ask, "git push *"},
		// The policy's --dry-run names more than the default's git push *.
		{"git push other main -n", Allow, "git push --dry-run *"},
	} {
		argv := strings.Fields(tc.line)
		d := p.DecideExec(ExecIntent{Path: "git", Resolved: "/usr/bin/git", Argv: argv, Cwd: "/w"})
		if r := d.Units[0].Result; r.Action != tc.want || r.Rule.Pattern != tc.rule {
			t.Errorf("%s: %s by %q, want %s by %q", tc.line, r.Action, r.Rule.Pattern, tc.want, tc.rule)
		}
	}
}

func baseOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// `permwrap check` accepts option patterns and warns about one naming an
// option its program does not accept.
func TestOptionPatternLint(t *testing.T) {
	src := `{"permission": {"bash": {
  "git push --force*": "deny", "git push origin *": "allow", "git push * origin *": "allow",
  "rm -rf / *": "deny", "git push --no-verify *": "ask", "git push -o ci.skip *": "allow",
  "curl -X POST *": "ask", "mytool --anything *": "deny",
  "git push --froce*": "deny", "rm -rf --recusive *": "deny"}}}`
	_, warns, err := CheckFile("p.jsonc", []byte(src), FileGlobal, Env{Home: "/home/u", Workspace: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`p.jsonc:5:3: pattern "git push --froce*" names --froce*, which git push does not accept`,
		`p.jsonc:5:32: pattern "rm -rf --recusive *" names --recusive, which rm does not accept`,
	}
	if len(warns) != len(want) {
		t.Fatalf("warnings: %v", warns)
	}
	for i, w := range want {
		if !strings.HasPrefix(warns[i].String(), w) {
			t.Errorf("warning %d = %q, want prefix %q", i, warns[i], w)
		}
	}
}
