package engine

import (
	"strings"
	"testing"
)

// FuzzDecideExec: any exec, with any #! chain and identity, is decided
// without panicking, and a decision other than allow names its part.
func FuzzDecideExec(f *testing.F) {
	f.Add("/usr/bin/git\x00git-push\x00-C\x00x\x00origin", "/usr/bin/env\x00python3", "")
	f.Add(ldsoPath+"\x00ld.so\x00--argv0\x00git-push\x00/usr/bin/git\x00x", "", "git")
	f.Add("/bin/bash\x00bash\x00-c\x00eval 'git -c alias.p=push p'; . ./x", "", "")
	p, _, err := Compile(Config{Env: Env{Home: "/home/u", Workspace: "/w", TmpDir: "/tmp"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, joined, interp, identity string) {
		words := strings.Split(joined, "\x00")
		in := ExecIntent{Path: words[0], Resolved: words[0], Argv: words[1:], Cwd: "/w", Identity: identity,
			ReadFile: func(string, int) ([]byte, error) { return []byte(joined), nil },
			Identify: func(string) string { return identity }}
		if interp != "" {
			ip := strings.SplitN(interp, "\x00", 2)
			it := Interp{Path: ip[0], Resolved: ip[0]}
			if len(ip) == 2 {
				it.Arg = ip[1]
			}
			in.Interpreters = []Interp{it, it}
		}
		d := p.DecideExec(in)
		if d.Result.Action < Allow || d.Result.Action > Deny {
			t.Fatalf("no decision: %+v", d.Result)
		}
		if d.Result.Action != Allow && d.Decider == "" {
			t.Fatalf("%s without a deciding part", d.Result.Action)
		}
		_ = p.SuggestSession(d)
	})
}

const ldsoPath = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
