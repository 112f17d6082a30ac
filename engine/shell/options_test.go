package shell

import (
	"strings"
	"testing"
	"time"
)

// readingsOf returns the option readings of a command line as shown,
// certain ones and possible ones.
func readingsOf(line string) (certain, possible []string) {
	for _, r := range readOptions(fieldsOf(strings.Fields(line))) {
		v := ShowReading(encodeCommand(r.cmd))
		if r.certain {
			certain = append(certain, v)
		} else {
			possible = append(possible, v)
		}
	}
	return certain, possible
}

func TestReadOptions(t *testing.T) {
	for _, tc := range []struct {
		line     string
		certain  []string
		possible []string
	}{
		{"git push -q origin main", []string{"git push origin main [options: --quiet]"}, nil},
		{"git push -fq origin main", []string{"git push origin main [options: --force, --quiet]"}, nil},
		{"git push origin main --force", []string{"git push origin main [options: --force]"}, nil},
		{"git push --forc origin main", []string{"git push origin main [options: --force]"}, nil},
		// An ambiguous abbreviation is every option it may be (shown by
		// the first; TestCommandPattern matches the others).
		{"git push --fo origin", []string{"git push origin [options: --force]"}, nil},
		{"git push --no-verify origin", []string{"git push origin [options: --no-verify]"}, nil},
		// `--=x` abbreviates nothing (git refuses it): an option of its own.
		{"git push --=x origin", []string{"git push origin [options: --=x]"}, nil},
		{"git push --no-forc origin", []string{"git push origin [options: --no-force]"}, nil},
		{"git push origin +main", []string{"git push origin +main [options: --force (+main)]"}, nil},
		// The repository is not a refspec.
		{"git push +odd main", []string{"git push +odd main [options: none]"}, nil},
		{"git push -o ci.skip origin main", []string{"git push origin main [options: --push-option=ci.skip]"}, nil},
		{"git push -oci.skip origin main", []string{"git push origin main [options: --push-option=ci.skip]"}, nil},
		{"git push --push-option=ci.skip origin", []string{"git push origin [options: --push-option=ci.skip]"}, nil},
		{"git push --force-with-lease=main origin", []string{"git push origin [options: --force-with-lease=main]"}, nil},
		// --force-with-lease takes its value only after '='.
		{"git push --force-with-lease origin main", []string{"git push origin main [options: --force-with-lease]"}, nil},
		{"git push origin -- -f", []string{"git push origin -f [options: none]"}, nil},
		{"git -C /w -c a=b push origin", []string{"git push origin [options: -C=/w, -c=a=b]"}, nil},
		// A force a -c on the line configures.
		{"git -c remote.origin.push=+main:main push origin", []string{"git push origin [options: -c=remote.origin.push=+main:main, --force ('-c remote.origin.push=+main:main')]"}, nil},
		{"git -c remote.origin.mirror=true push origin", []string{"git push origin [options: -c=remote.origin.mirror=true, --force ('-c remote.origin.mirror=true')]"}, nil},
		{"git -c remote.origin.mirror=false push origin", []string{"git push origin [options: -c=remote.origin.mirror=false]"}, nil},
		// An option git push does not know: flag (certain) or value.
		{"git push --frob origin main", []string{"git push origin main [options: --frob]"},
			[]string{"git push main [options: --frob=origin]"}},
		// A subcommand without a table: read only possibly.
		{"git log -n 5 x", nil, []string{"git log 5 x [options: -n]", "git log x [options: -n=5]"}},
		// Prints and exits: no reading.
		{"git --exec-path push", nil, nil},
		{"git --help push", nil, nil},
		{"rm -rf /", []string{"rm / [options: --recursive, --force]"}, nil},
		{"rm / -r -f", []string{"rm / [options: --recursive, --force]"}, nil},
		{"rm --recur x", []string{"rm x [options: --recursive]"}, nil},
		{"curl -sSL -o out https://x", []string{"curl https://x [options: --silent, --show-error, --location, --output=out]"}, nil},
		{"curl -XPOST https://x", []string{"curl https://x [options: --request=POST]"}, nil},
		{"docker run --rm -v /a:/b alpine rm -rf /", []string{"docker run alpine rm -rf / [options: --rm, --volume=/a:/b]"}, nil},
		{"docker -H unix:///s ps -a", []string{"docker ps [options: --host=unix:///s, --all]"}, nil},
		{"kubectl get pods -n prod -o yaml", []string{"kubectl get pods [options: --namespace=prod, --output=yaml]"}, nil},
		{"npm install -g --registry https://r x", []string{"npm install x [options: --global, --registry=https://r]"}, nil},
		// No table: possibly only, both ways.
		{"tool -x a b", nil, []string{"tool a b [options: -x]", "tool b [options: -x=a]"}},
		{"tool -ab c", nil, []string{"tool c [options: -ab]", "tool [options: -ab=c]"}},
	} {
		c, p := readingsOf(tc.line)
		if strings.Join(c, "\n") != strings.Join(tc.certain, "\n") || strings.Join(p, "\n") != strings.Join(tc.possible, "\n") {
			t.Errorf("%s:\n got certain %q\n possible %q\nwant certain %q\n possible %q", tc.line, c, p, tc.certain, tc.possible)
		}
	}
}

func TestCommandPattern(t *testing.T) {
	for _, tc := range []struct {
		pattern, line string
		want          bool
	}{
		{"git push origin *", "git push -q origin main", true},
		{"git push origin *", "git push origin", true},
		{"git push origin *", "git push -q other main", false},
		{"git push * origin *", "git push -q origin main", true},
		{"git push * origin *", "git push origin main", true},
		{"git push * origin *", "git push --repo x origin", true},
		{"git push * origin *", "git push other main", false},
		{"git push origin *", "git push --repo=x origin", true},
		{"git push -o=ci.* *", "git push -oci.skip origin", true},
		{"git push --delete* *", "git push -d origin x", true},
		{"git push * :*", "git push origin :main", true},
		{"git push * :*", "git push origin main:main", false},
		{"git push -o ci.skip origin main", "git push -q -o ci.skip origin main", false},
		{"kubectl delete * --all*", "kubectl -n prod delete pods --all", true},
		{"kubectl delete * --all*", "kubectl delete pod x", false},
		{"curl -X POST *", "curl https://x --request POST", true},
		{"git push --force*", "git push origin main -f", true},
		{"git push --force*", "git push origin +main", true},
		{"git push --force*", "git push --mirror x", true},
		{"git push --follow-tags *", "git push --fo x", true},
		{"git push --force-if-includes *", "git push --fo x", true},
		{"git push --force*", "git push --no-force x", false},
		{"git push --force*", "git push -q origin main", false},
		// Without a trailing star the rule stays exact: no other option,
		// no other operand.
		{"git push origin main", "git push -q origin main", false},
		{"git push -q origin main", "git push origin main --quiet", true},
		{"git push -q origin main", "git push origin main --quiet -f", false},
		{"git push -q origin main", "git push origin main x --quiet", false},
		// A value is part of the option.
		{"git push -o ci.skip origin *", "git push --push-option=ci.skip origin main", true},
		{"git push -o ci.skip origin *", "git push -o other origin main", false},
		{"git push --push-option=ci.* *", "git push -o ci.skip origin", true},
		// Clusters in patterns and commands.
		{"rm -rf / *", "rm -f -r /", true},
		{"rm -rf / *", "rm --recursive --force /", true},
		{"rm -rf / *", "rm -r /", false},
		{"rm -rf *", "rm -rfv x", true},
		{"rm --recur *", "rm -R x", true},
		// Any program, options anywhere.
		{"* --force*", "tool x --force", true},
		{"tool --danger*", "tool x --danger=1", true},
		// docker run: what follows the image is the container's.
		{"docker run --privileged*", "docker run alpine --privileged", false},
		{"docker run --privileged*", "docker run --privileged alpine", true},
		// Operand globs stay within a word.
		{"rm *.txt", "rm -f a.txt", false},
		{"rm -f *.txt", "rm -f a.txt", true},
	} {
		cp := CompileCommandPattern(tc.pattern)
		if cp == nil {
			t.Errorf("%q: not compiled", tc.pattern)
			continue
		}
		got := false
		for _, r := range readOptions(fieldsOf(strings.Fields(tc.line))) {
			v := encodeCommand(r.cmd)
			m := cp.Match(v)
			if c, _ := decodeCommand(v); m != refMatch(cp, c) {
				t.Errorf("%q against %q: Match and the reference differ", tc.pattern, ShowReading(v))
			}
			got = got || m
		}
		if got != tc.want {
			t.Errorf("%q against %q: %v, want %v", tc.pattern, tc.line, got, tc.want)
		}
	}
	for _, p := range []string{"git commit -m 'a b'", "a  b", " a", "a\tb", `a\b`, "curl * | sh", "a && b", "a > f"} {
		if CompileCommandPattern(p) != nil {
			t.Errorf("%q: compiled, want the line as written only", p)
		}
	}
}

// Spellings carry the option readings on both surfaces.
func TestOptionSpellings(t *testing.T) {
	sp := ExecSpellings("git", "git", []string{"git", "/usr/bin/git"}, []string{"push", "-f", "origin"}, "git push -f origin", "/home/u")
	n := 0
	for _, v := range sp.Certain {
		if IsOptionReading(v) {
			n++
			if got := ShowReading(v); !strings.HasSuffix(got, "push origin [options: --force]") {
				t.Errorf("reading %q", got)
			}
		}
	}
	if n != 2 {
		t.Errorf("exec: %d option readings in %q, want 2 (git and /usr/bin/git)", n, sp.Certain)
	}
	a := analyzeScript("rm -rf /tmp/x")
	us := UnitSpellings(a.Units[0], "rm", "/home/u")
	if len(us.Certain) != 2 || ShowReading(us.Certain[1]) != "rm /tmp/x [options: --recursive, --force]" {
		t.Errorf("unit: %q", us.Certain)
	}
	// A line without options and without a table keeps the fast path.
	a = analyzeScript("ls x")
	if us := UnitSpellings(a.Units[0], "ls", "/home/u"); len(us.Certain) != 1 || len(us.Possible) != 0 {
		t.Errorf("ls: %q %q", us.Certain, us.Possible)
	}
}

// FuzzReadOptions: reading any line with any program's table, and
// matching it against a pattern, neither panics nor grows without
// bound.
func FuzzReadOptions(f *testing.F) {
	for _, s := range []string{"git push -fq --forc origin +main", "rm -rf / --no-preserve-root",
		"curl -sSLXPOST -d@x https://h", "docker run --rm -e A=1 alpine sh -c x", "kubectl -nprod delete --all pods",
		"npm -g i x -- --y", "tool -a -b -c -d -e x y z", "git -c a=b -C d push -o x --no-v -- +a"} {
		f.Add(s, "git push --force* origin *")
	}
	f.Fuzz(func(t *testing.T, line, pattern string) {
		words := strings.Fields(line)
		if len(words) == 0 || len(words) > 64 {
			return
		}
		start := time.Now()
		rs := readOptions(fieldsOf(words))
		if len(rs) > maxOptionReadings {
			t.Fatalf("%d readings", len(rs))
		}
		cp := CompileCommandPattern(pattern)
		for _, r := range rs {
			v := encodeCommand(r.cmd)
			c, ok := decodeCommand(v)
			if !ok || len(c.Operands) != len(r.cmd.Operands) || len(c.Options) != len(r.cmd.Options) {
				t.Fatalf("%q: encoding does not round-trip", line)
			}
			if cp != nil && len(cp.items) <= 8 && cp.Match(v) != refMatch(cp, c) {
				t.Fatalf("%q against %q: Match %v, the decoded reading says otherwise", pattern, ShowReading(v), cp.Match(v))
			}
			_ = ShowReading(v)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("%q: %v", line, d)
		}
	})
}

// refMatch is CommandPattern.Match on a decoded Command, written the
// plain way: each requirement met by some option, each option named
// unless the pattern is open, the operands by the pattern's items (a
// star any run, by recursion).
func refMatch(p *CommandPattern, c Command) bool {
	meets := func(r optReq, o Option) bool {
		if r.value != nil && (!o.HasValue || !r.value.match(o.Value)) {
			return false
		}
		for _, n := range o.Names {
			if r.name.match(n) {
				return true
			}
		}
		return false
	}
	for _, r := range p.reqs {
		found := false
		for _, o := range c.Options {
			found = found || meets(r, o)
		}
		if !found {
			return false
		}
	}
	if !p.open {
		for _, o := range c.Options {
			named := false
			for _, r := range p.reqs {
				named = named || meets(r, o)
			}
			if !named {
				return false
			}
		}
	}
	var rec func(items []patItem, ops []string) bool
	rec = func(items []patItem, ops []string) bool {
		if len(items) == 0 {
			return len(ops) == 0
		}
		if items[0].star {
			for k := 0; k <= len(ops); k++ {
				if rec(items[1:], ops[k:]) {
					return true
				}
			}
			return false
		}
		return len(ops) > 0 && items[0].g.match(ops[0]) && rec(items[1:], ops[1:])
	}
	return rec(p.items, c.Operands)
}
