package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/permwrap/permwrap/engine/shell"
)

func compileTest(t testing.TB, policy string) *Policy {
	t.Helper()
	p, warns, err := Compile(Config{
		Global: &File{Name: "policy.jsonc", Data: []byte(policy)},
		Env:    Env{Home: "/home/u", Workspace: "/work/repo", TmpDir: "/tmp"},
	})
	if err != nil || len(warns) > 0 {
		t.Fatalf("compile: %v %v", err, warns)
	}
	return p
}

// identityPolicy denies pushing and allows `git status` with a rule more
// specific than the push rule: a wrong spelling of a push as a status
// would be allowed, so these tests see any spelling that loosens.
const identityPolicy = `{"permission": {
  "exec": "allow", "read": "allow", "write": "allow",
  "bash": {"*": "allow", "git push *": "deny", "git status *": "allow",
           "docker compose *": "ask", "kubectl delete *": "ask"}
}}`

const ldso = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"

func gitExec(argv ...string) ExecIntent {
	return ExecIntent{Path: "/usr/bin/git", Resolved: "/usr/bin/git", Argv: argv, Cwd: "/work/repo"}
}

func TestCommandIdentity(t *testing.T) {
	p := compileTest(t, identityPolicy)
	for _, tc := range []struct {
		name string
		in   ExecIntent
		want Action
	}{
		{"plain", gitExec("git", "push"), Deny},
		{"-C dir", gitExec("git", "-C", "/work/repo", "push", "--force"), Deny},
		{"-c k=v", gitExec("git", "-c", "user.name=x", "push"), Deny},
		{"--git-dir=", gitExec("git", "--git-dir=.git", "push"), Deny},
		{"--git-dir DIR", gitExec("git", "--git-dir", ".git", "push"), Deny},
		{"--work-tree DIR", gitExec("git", "--work-tree", ".", "push"), Deny},
		{"--namespace", gitExec("git", "--namespace", "ns", "push"), Deny},
		{"-p", gitExec("git", "-p", "push"), Deny},
		{"-P", gitExec("git", "-P", "push"), Deny},
		{"--no-pager", gitExec("git", "--no-pager", "push"), Deny},
		{"--bare", gitExec("git", "--bare", "push"), Deny},
		{"--exec-path=", gitExec("git", "--exec-path=/opt/git", "push"), Deny},
		{"--config-env", gitExec("git", "--config-env", "core.x=HOME", "push"), Deny},
		{"--config-env=", gitExec("git", "--config-env=core.x=HOME", "push"), Deny},
		{"pathspec flags", gitExec("git", "--literal-pathspecs", "--no-optional-locks", "--no-advice", "push"), Deny},
		{"--attr-source", gitExec("git", "--attr-source", "HEAD", "push"), Deny},
		{"--shallow-file", gitExec("git", "--shallow-file", "x", "push"), Deny},
		{"all together", gitExec("git", "-C", "/x", "-c", "a.b=c", "--no-pager", "--git-dir=/x/.git", "push", "-f"), Deny},
		// Twins that are not a push.
		{"-C takes push as its directory", gitExec("git", "-C", "push", "status"), Allow},
		{"--exec-path alone prints and exits", gitExec("git", "--exec-path", "push"), Allow},
		{"status", gitExec("git", "status"), Allow},
		// An option git does not know: git refuses to run, but a newer
		// git might know it, so both readings count and the stricter wins.
		{"unknown option", gitExec("git", "--frobnicate", "push"), Deny},
		// Aliases given on the command line.
		{"alias", gitExec("git", "-c", "alias.p=push", "p", "origin"), Deny},
		{"alias with its own options", gitExec("git", "-c", "alias.p=-c push.default=current push", "p"), Deny},
		{"alias chain", gitExec("git", "-c", "alias.a=b", "-c", "alias.b=push", "a"), Deny},
		{"Alias key case", gitExec("git", "-c", "Alias.P=push", "p"), Deny},
		{"shell alias runs a shell, judged at its exec", gitExec("git", "-c", "alias.x=!git push", "x"), Allow},
		// Dashed forms and argv[0] dispatch.
		{"git-core link, argv[0] git-push", ExecIntent{Path: "/usr/lib/git-core/git-push", Resolved: "/usr/lib/git-core/git", Argv: []string{"/usr/lib/git-core/git-push", "origin"}}, Deny},
		{"git-core link, argv[0] git: git status", ExecIntent{Path: "/usr/lib/git-core/git-push", Resolved: "/usr/lib/git-core/git", Argv: []string{"git", "status"}}, Allow},
		{"git with argv[0] git-push", gitExec("git-push", "status"), Deny},
		{"git with argv[0] /x/git-push", gitExec("/x/git-push", "status"), Deny},
		// `git status push` (push a pathspec), but the line reads `git
		// push`: a rule for that spelling may make it stricter, never looser.
		{"git with argv[0] git-status", gitExec("git-status", "push"), Deny},
		{"git with argv[0] git-status, twin", gitExec("git-status", "--short"), Allow},
		{"dashed name, not known to be git", ExecIntent{Path: "/opt/bin/git-push", Resolved: "/opt/bin/git-push", Argv: []string{"git-push"}}, Deny},
		{"dashed hard link run as plain git", ExecIntent{Path: "/opt/bin/git-status", Resolved: "/opt/bin/git-status", Argv: []string{"git", "push"}}, Deny},
		// The dynamic loader.
		{"ld.so", ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Argv: []string{"ld-linux-x86-64.so.2", "/usr/bin/git", "push"}}, Deny},
		{"ld.so options", ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Argv: []string{"/lib64/ld-linux-x86-64.so.2", "--library-path", "/opt", "--preload", "x.so", "--inhibit-cache", "/usr/bin/git", "push"}}, Deny},
		{"ld.so --argv0 git-push", ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Argv: []string{"ld.so", "--argv0", "git-push", "/usr/bin/git", "origin"}}, Deny},
		{"ld.so --argv0 git-status", ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Argv: []string{"ld.so", "--argv0", "git-status", "/usr/bin/git", "-s"}}, Allow},
		{"ld.so --list runs nothing", ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Argv: []string{"ld.so", "--list", "/usr/bin/git", "-s"}}, Allow},
		{"ld.so of ld.so", ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Argv: []string{"ld.so", "/lib64/ld-linux-x86-64.so.2", "/usr/bin/git", "push"}}, Deny},
		{"ld.so with an option it may not know", ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Argv: []string{"ld.so", "--future", "/usr/bin/git", "push"}}, Deny},
		{"musl loader", ExecIntent{Path: "/lib/ld-musl-x86_64.so.1", Resolved: "/lib/ld-musl-x86_64.so.1", Argv: []string{"ld", "/usr/bin/git", "push"}}, Deny},
		// Other grammars.
		{"docker root options", ExecIntent{Path: "/usr/bin/docker", Resolved: "/usr/bin/docker", Argv: []string{"docker", "-H", "unix:///x.sock", "--context=prod", "-D", "compose", "up"}}, Ask},
		{"docker compose plugin", ExecIntent{Path: "/usr/libexec/docker/cli-plugins/docker-compose", Resolved: "/usr/libexec/docker/cli-plugins/docker-compose", Argv: []string{"docker-compose", "compose", "up"}}, Ask},
		{"docker run", ExecIntent{Path: "/usr/bin/docker", Resolved: "/usr/bin/docker", Argv: []string{"docker", "--debug", "run", "x"}}, Allow},
		{"kubectl -n before", ExecIntent{Path: "/usr/bin/kubectl", Resolved: "/usr/bin/kubectl", Argv: []string{"kubectl", "-n", "prod", "--context", "c", "delete", "pod", "x"}}, Ask},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.DecideExec(tc.in)
			if d.Result.Action != tc.want {
				t.Fatalf("got %s, want %s\n%s", d.Reason(), tc.want, spellingsOf(d))
			}
		})
	}
}

func spellingsOf(d ExecDecision) string {
	var b strings.Builder
	for _, u := range d.Units {
		fmt.Fprintf(&b, "  %s → %s: %q possible %q\n", u.Unit.String(), u.Result.Action, u.Spellings, u.Possible)
	}
	return b.String()
}

func TestCommandIdentityInScripts(t *testing.T) {
	p := compileTest(t, identityPolicy)
	for script, want := range map[string]Action{
		"git -C /x push":                        Deny,
		"cd /x && git --no-pager push origin":   Deny,
		"git-push origin":                       Deny,
		"/usr/lib/git-core/git-push origin":     Deny,
		"exec -a git-push git origin":           Deny,
		"exec -a git-status git -s":             Allow,
		"exec -a git-status git push":           Deny, // reads as a push: stricter only
		"exec -a git-push /usr/bin/git":         Deny,
		"/lib64/ld-linux-x86-64.so.2 git push":  Deny,
		"ld.so --argv0 git-push /usr/bin/git x": Deny,
		"env -i PATH=/usr/bin git -c a=b push":  Deny,
		"git -C push status":                    Allow,
		"sudo -u u git --work-tree=/x push":     Deny,
		"command git -c alias.up=push up":       Deny,
		"xargs git -C /x push < remotes.txt":    Deny,
		"echo git push":                         Allow,
		`git "$SUB" origin`:                     Allow, // an exec: judged with its real words when it runs
		`git -c "$KV" push`:                     Deny,
		"docker --log-level debug compose down": Ask,
		"docker-compose up -d":                  Ask,
		"kubectl --kubeconfig=/k delete ns x":   Ask,
		"kubectl get pods":                      Allow,
	} {
		d := p.DecideExec(ExecIntent{Path: "/bin/bash", Resolved: "/usr/bin/bash", Argv: []string{"bash", "-c", script}, Cwd: "/work/repo"})
		if d.Result.Action != want {
			t.Errorf("%s: got %s, want %s\n%s", script, d.Reason(), want, spellingsOf(d))
		}
	}
}

func TestCommandIdentityByContent(t *testing.T) {
	p := compileTest(t, identityPolicy)
	copyOfGit := ExecIntent{Path: "/tmp/x/mygit", Resolved: "/tmp/x/mygit", Argv: []string{"mygit", "push"}, Cwd: "/work/repo"}
	if d := p.DecideExec(copyOfGit); d.Result.Action != Allow {
		t.Fatalf("an unrecognised copy is judged by its name: got %s", d.Reason())
	}
	copyOfGit.Identity = "git"
	d := p.DecideExec(copyOfGit)
	if d.Result.Action != Deny || !slices.Contains(d.Units[0].Spellings, "git push") || !slices.Contains(d.Units[0].Spellings, "mygit push") {
		t.Fatalf("a copy the supervisor recognised as git: got %s\n%s", d.Reason(), spellingsOf(d))
	}
	// A copy of a shell is looked into as a shell.
	sh := ExecIntent{Path: "/tmp/x/notashell", Resolved: "/tmp/x/notashell", Argv: []string{"notashell", "-c", "git push"}, Identity: "bash"}
	if d := p.DecideExec(sh); d.Result.Action != Deny {
		t.Fatalf("a copy of bash: got %s", d.Reason())
	}
	// The loader runs a copy in its own process: Identify names it.
	var asked []string
	viaLoader := ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Cwd: "/work/repo",
		Argv: []string{"ld.so", "./bin/mygit", "push"}}
	if d := p.DecideExec(viaLoader); d.Result.Action != Allow {
		t.Fatalf("loader without Identify: got %s", d.Reason())
	}
	viaLoader.Identify = func(path string) string {
		asked = append(asked, path)
		if path == "/work/repo/bin/mygit" {
			return "git"
		}
		return ""
	}
	if d := p.DecideExec(viaLoader); d.Result.Action != Deny {
		t.Fatalf("loader with Identify: got %s\n%s", d.Reason(), spellingsOf(d))
	}
	if !reflect.DeepEqual(asked, []string{"/work/repo/bin/mygit"}) {
		t.Errorf("Identify was asked about %q, want only the loader's operand", asked)
	}
}

func TestProgramNames(t *testing.T) {
	p, _, err := Compile(Config{Env: Env{Home: "/home/u", Workspace: "/work/repo", TmpDir: "/tmp"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddSessionRule(SurfaceBash, "/opt/bin/deploy --prod"); err != nil {
		t.Fatal(err)
	}
	names := p.ProgramNames()
	for _, want := range []string{"git", "rm", "deploy", "bash", "sh", "env", "sudo", "xargs", "ld.so", "docker"} {
		if !slices.Contains(names, want) {
			t.Errorf("ProgramNames() lacks %q: %q", want, names)
		}
	}
	for _, n := range names {
		if strings.HasPrefix(n, "<") || strings.Contains(n, "*") || n == "" {
			t.Errorf("ProgramNames() holds %q", n)
		}
	}
	q := compileTest(t, `{"permission": {"bash": {"* push *": "deny", "git-push *": "deny", "/usr/bin/npm publish": "ask"}}}`)
	got := q.ProgramNames()
	if !slices.Contains(got, "git") || !slices.Contains(got, "git-push") || !slices.Contains(got, "npm") {
		t.Errorf("rules naming git-push and /usr/bin/npm: %q", got)
	}
}

func TestExecNeedsRead(t *testing.T) {
	p := compileTest(t, `{"permission": {"exec": "allow", "bash": "allow",
	  "read": {"*": "allow", "/opt/secret/**": {"action": "deny", "reason": "private"}, "/opt/ask/**": "ask"}}}`)
	d := p.DecideExec(ExecIntent{Path: "/opt/secret/tool", Resolved: "/opt/secret/tool", Argv: []string{"tool"}})
	if d.Result.Action != Deny || d.Decider != "read of /opt/secret/tool" || d.Result.Check.Surface != SurfaceRead {
		t.Fatalf("exec of an unreadable binary: %s (check %v)", d.Reason(), d.Result.Check)
	}
	d = p.DecideExec(ExecIntent{Path: "/opt/ask/tool", Resolved: "/opt/ask/tool", Argv: []string{"tool"}})
	if d.Result.Action != Ask {
		t.Fatalf("exec of a binary whose read asks: %s", d.Reason())
	}
	// The interpreter of a script is mapped too.
	d = p.DecideExec(ExecIntent{Path: "./x", Resolved: "/work/repo/x", Argv: []string{"./x"},
		Interpreters: []Interp{{Path: "/opt/secret/python", Resolved: "/opt/secret/python"}}})
	if d.Result.Action != Deny || d.Decider != "#! read of /opt/secret/python" {
		t.Fatalf("an unreadable interpreter: %s", d.Reason())
	}
	if d := p.DecideExec(ExecIntent{Path: "/usr/bin/ls", Resolved: "/usr/bin/ls", Argv: []string{"ls"}}); d.Result.Action != Allow {
		t.Fatalf("twin: %s", d.Reason())
	}
}

func TestShebangLines(t *testing.T) {
	p := compileTest(t, `{"permission": {"read": "allow", "write": "allow",
	  "exec": {"*": "allow", "/opt/evil/**": "deny"},
	  "bash": {"*": "allow", "python3 ./deploy.py --prod*": "deny", "sh /work/repo/tools/run *": "ask"}}}`)
	env := Interp{Path: "/usr/bin/env", Arg: "python3", Resolved: "/usr/bin/env"}
	d := p.DecideExec(ExecIntent{Path: "./deploy.py", Resolved: "/work/repo/deploy.py", Argv: []string{"./deploy.py", "--prod"}, Cwd: "/work/repo", Interpreters: []Interp{env}})
	if d.Result.Action != Deny || d.Decider != "python3 ./deploy.py --prod (via #!, env)" {
		t.Fatalf("kernel line through env: %s\n%s", d.Reason(), spellingsOf(d))
	}
	if d := p.DecideExec(ExecIntent{Path: "./deploy.py", Resolved: "/work/repo/deploy.py", Argv: []string{"./deploy.py", "--dry-run"}, Cwd: "/work/repo", Interpreters: []Interp{env}}); d.Result.Action != Allow {
		t.Fatalf("twin: %s", d.Reason())
	}
	// The kernel passes argv[0] of the script as its path, not argv[0].
	d = p.DecideExec(ExecIntent{Path: "./deploy.py", Resolved: "/work/repo/deploy.py", Argv: []string{"innocent", "--prod"}, Cwd: "/work/repo", Interpreters: []Interp{env}})
	if d.Result.Action != Deny {
		t.Fatalf("argv[0] is replaced by the path: %s", d.Reason())
	}
	// A chain: the script's interpreter is itself a script.
	d = p.DecideExec(ExecIntent{Path: "./x", Resolved: "/work/repo/x", Argv: []string{"./x", "a"}, Cwd: "/work/repo",
		Interpreters: []Interp{{Path: "/work/repo/tools/run", Resolved: "/work/repo/tools/run"}, {Path: "/bin/sh", Resolved: "/usr/bin/dash"}}})
	var kernel []string
	for _, u := range d.Units {
		if len(u.Unit.Via) > 0 && strings.HasPrefix(u.Unit.Via[0], "#!") {
			kernel = append(kernel, u.Unit.String())
		}
	}
	wantKernel := []string{"run ./x a (via #! (1 of 2))", "sh /work/repo/tools/run ./x a (via #! (2 of 2))"}
	if !reflect.DeepEqual(kernel, wantKernel) || d.Result.Action != Ask {
		t.Fatalf("chain: %s\nkernel lines %q\nwant %q", d.Reason(), kernel, wantKernel)
	}
	// The interpreter's own file is judged as an exec.
	d = p.DecideExec(ExecIntent{Path: "./x", Resolved: "/work/repo/x", Argv: []string{"./x"}, Interpreters: []Interp{{Path: "/opt/evil/sh", Resolved: "/opt/evil/sh"}}})
	if d.Result.Action != Deny || d.Decider != "#! /opt/evil/sh" {
		t.Fatalf("denied interpreter: %s", d.Reason())
	}
	// An interpreter that could not be resolved: never fail open.
	d = p.DecideExec(ExecIntent{Path: "./x", Resolved: "/work/repo/x", Argv: []string{"./x"}, Interpreters: []Interp{{Path: "python3"}}})
	if d.Result.Action != Deny {
		t.Fatalf("unresolved interpreter: %s", d.Reason())
	}
}

func TestSentinelsCountOnlyWhenNamed(t *testing.T) {
	// Every command asks unless allowed; the commands of these scripts are.
	strict := compileTest(t, `{"permission": {"exec": "allow", "read": "allow", "write": "allow",
	  "bash": {"*": "ask", "bash -c *": "allow", "eval *": "allow", "source *": "allow", "echo *": "allow"}}}`)
	named := compileTest(t, `{"permission": {"exec": "allow", "read": "allow", "write": "allow",
	  "bash": {"*": "allow", "<opaque-shell-wrapper>": "ask", "<unparseable-shell-script>": "deny"}}}`)
	for _, tc := range []struct {
		script        string
		strict, named Action
	}{
		{`eval "$X"`, Allow, Ask},
		{`"$CMD" --version`, Allow, Ask},
		{`echo 'unterminated`, Allow, Deny},
		{`source ./missing.sh`, Allow, Ask},
		{`echo hi > "$f"`, Allow, Allow}, // a computed redirect is no sentinel: its open is judged
	} {
		in := ExecIntent{Path: "/bin/bash", Resolved: "/usr/bin/bash", Argv: []string{"bash", "-c", tc.script}, Cwd: "/work/repo"}
		if d := strict.DecideExec(in); d.Result.Action != tc.strict {
			t.Errorf("%s, catch-all ask only: got %s, want %s", tc.script, d.Reason(), tc.strict)
		}
		if d := named.DecideExec(in); d.Result.Action != tc.named {
			t.Errorf("%s, sentinels named: got %s, want %s", tc.script, d.Reason(), tc.named)
		}
	}
	d := strict.DecideExec(ExecIntent{Path: "/bin/bash", Resolved: "/usr/bin/bash", Argv: []string{"bash", "-c", `eval "$X"; ls`}})
	var later int
	for _, u := range d.Units {
		if u.AtRunTime {
			later++
		}
	}
	// `ls` itself asks under the catch-all.
	if later != 1 || d.Result.Action != Ask || d.Decider != "ls (via bash -c)" {
		t.Errorf("units judged at run time: %d, result %s", later, d.Reason())
	}
}

const pathUsePolicy = `{"permission": {"exec": "allow", "read": {"*": "allow", "/work/repo/.env": "ask"},
  "write": {"*": "ask", "/work/repo/**": "allow", "/work/repo/asked/**": "ask", "/tmp/**": "allow",
            "/work/repo/guarded": {"action": "deny"}},
  "bash": {"*": "allow", "git push *": "ask"}}}`

func bashIn(script string) ExecIntent {
	return ExecIntent{Path: "/bin/bash", Resolved: "/usr/bin/bash", Argv: []string{"bash", "-c", script}, Cwd: "/work/repo"}
}

func TestPathUsesCoverTheScriptsOpens(t *testing.T) {
	p := compileTest(t, pathUsePolicy)
	d := p.DecideExec(bashIn("echo x > asked/a.txt"))
	if d.Result.Action != Ask {
		t.Fatalf("a redirect into an asked tree: %s", d.Reason())
	}
	if !d.CoversPath(AccessWrite, "/work/repo/asked/a.txt") {
		t.Errorf("the approval must cover the redirect's own open: %+v", d.PathUses)
	}
	for _, c := range []struct {
		a Access
		p string
	}{{AccessRead, "/work/repo/asked/a.txt"}, {AccessWrite, "/work/repo/asked/b.txt"}, {AccessWrite | AccessRead, "/work/repo/asked/a.txt"}, {0, "/work/repo/asked/a.txt"}} {
		if d.CoversPath(c.a, c.p) {
			t.Errorf("covers %s %s, which the script does not name", c.a, c.p)
		}
	}
	want := []SessionPattern{{SurfaceWrite, "/work/repo/asked/**"}}
	if got := p.SuggestSession(d); !reflect.DeepEqual(got, want) {
		t.Errorf("SuggestSession = %v, want %v (the shell line itself would cover only this text)", got, want)
	}

	// Commands and files together; narrow patterns for wide directories.
	d = p.DecideExec(bashIn("git push origin main && touch /etc/motd && cp build/app /srv/www/ && rm -rf /srv/cache/old && cat .env"))
	if d.Result.Action != Ask {
		t.Fatalf("%s", d.Reason())
	}
	got := p.SuggestSession(d)
	want = []SessionPattern{
		{SurfaceBash, "git push origin main"},
		{SurfaceWrite, "/etc/motd"},
		{SurfaceWrite, "/srv/www"},
		{SurfaceWrite, "/srv/www/**"},
		{SurfaceWrite, "/srv/cache/old/**"},
		{SurfaceRead, "/work/repo/.env"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SuggestSession = %v\nwant             %v", got, want)
	}
	for _, c := range []struct {
		a Access
		p string
	}{{AccessWrite, "/etc/motd"}, {AccessWrite, "/srv/www/app"}, {AccessRead, "/work/repo/build/app"},
		{AccessWrite, "/srv/cache/old/a/b"}, {AccessRead, "/work/repo/.env"}} {
		if !d.CoversPath(c.a, c.p) {
			t.Errorf("does not cover %s %s: %+v", c.a, c.p, d.PathUses)
		}
	}
	if d.CoversPath(AccessWrite, "/srv/cache/older") {
		t.Errorf("a tree covers only what is beneath it")
	}

	// The session pattern for a file in a deeper directory is that directory.
	d = p.DecideExec(bashIn("make > /srv/app/logs/build.log"))
	if got := p.SuggestSession(d); !reflect.DeepEqual(got, []SessionPattern{{SurfaceWrite, "/srv/app/logs/**"}}) {
		t.Errorf("SuggestSession = %v", got)
	}
	// A pattern another one of the list covers is left out: the person
	// reads each line.
	d = p.DecideExec(bashIn("git push origin main && mkdir -p /srv/app/a/b && touch /srv/app/x /srv/app/a/y"))
	want = []SessionPattern{{SurfaceBash, "git push origin main"}, {SurfaceWrite, "/srv/app/**"}}
	if got := p.SuggestSession(d); !reflect.DeepEqual(got, want) {
		t.Errorf("SuggestSession = %v, want %v", got, want)
	}
	// Redirects whose target is only known when it runs name no path.
	d = p.DecideExec(bashIn(`f=$(mktemp -p asked); echo x > "$f"`))
	if d.Result.Action != Allow || len(d.PathUses) != 0 {
		t.Errorf("computed redirect: %s, uses %+v", d.Reason(), d.PathUses)
	}
	// Nothing asked: nothing to suggest.
	if got := p.SuggestSession(p.DecideExec(bashIn("make test > out.log"))); len(got) != 0 {
		t.Errorf("SuggestSession of an allowed script = %v", got)
	}
}

func TestArgPathUses(t *testing.T) {
	resolve := func(p, dir string) (string, bool) { return resolveIn(p, dir, "/w", "/home/u") }
	for line, want := range map[string][]string{
		"touch a b":                    {"write /w/a", "write /w/b"},
		"touch -d yesterday -r ref f":  {"write /w/f"},
		"mkdir -p -m 0755 x/y":         {"write /w/x/y", "write /w/x"},
		"mkdir --parents a/b/c /abs/d": {"write /w/a/b/c", "write /w/a/b", "write /w/a", "write /abs/d"},
		"mkdir -p ../up/x ./y":         {"write /up/x", "write /up", "write /w/y"},
		"mkdir x/y":                    {"write /w/x/y"},
		"rm -rf -- d":                  {"write /w/d/**"},
		"rm f -r":                      {"write /w/f/**"},
		"rmdir --parents a/b":          {"write /w/a/b"},
		"tee -a log ~/x":               {"write /w/log", "write /home/u/x"},
		"truncate -s 0 log":            {"write /w/log"},
		"cp -t dst a b":                {"read /w/a", "write /w/dst/a", "read /w/b", "write /w/dst/b"},
		"cp a b":                       {"write /w/b", "read /w/a", "write /w/b/a"},
		"cp -T a b":                    {"write /w/b", "read /w/a"},
		"cp -r src /dst":               {"write /dst/**", "read /w/src/**", "write /dst/src/**"},
		"cp a b dir":                   {"read /w/a", "write /w/dir/a", "read /w/b", "write /w/dir/b"},
		"mv a b":                       {"write /w/b", "write /w/a", "write /w/b/a"},
		"ln -s target":                 {"write /w/target"},
		"ln -sf /x/y link":             {"write /w/link", "write /w/link/y"},
		"chmod 644 f g":                {"write /w/f", "write /w/g"},
		"chmod -R u+w d":               {"write /w/d/**"},
		"chmod --reference=r f":        {"write /w/f"},
		"chown -R u:g d":               {"write /w/d/**"},
		"cat -n f -":                   {"read /w/f"},
		"head -5 f":                    {"read /w/f"},
		"head -n 5 f":                  {"read /w/f"},
		"tail -f -n 100 log":           {"read /w/log"},
		"wc -l a":                      {"read /w/a"},
		"touch --bogus f":              nil, // not understood: nothing covered
		"chmod -x f":                   nil, // a mode that looks like an option
		"ls -la":                       nil,
		"touch ~other/f":               nil,
	} {
		a := AnalyzeScript(line)
		var got []string
		for _, u := range shell.ArgPathUses(a.Units[0], resolve) {
			s := accessName(Access(u.Access)) + " " + u.Path
			if u.Tree {
				s += "/**"
			}
			got = append(got, s)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q, want %q", line, got, want)
		}
	}
	// Relative to the directory the command runs in.
	a := AnalyzeScript("cd sub && touch f; cd /abs && touch g; cd \"$X\" && touch h")
	var got []string
	for _, u := range a.Units {
		for _, pu := range shell.ArgPathUses(u, resolve) {
			got = append(got, pu.Path)
		}
	}
	if !reflect.DeepEqual(got, []string{"/w/sub/f", "/abs/g"}) {
		t.Errorf("paths after cd: %q", got)
	}
}

func TestSourceAndEval(t *testing.T) {
	fsys := fstest.MapFS{
		"work/repo/env.sh":     {Data: []byte("export GOFLAGS=-mod=mod\ncd build\nDEPLOY=git\n")},
		"work/repo/args.sh":    {Data: []byte(`echo "$1" > "$2"` + "\n")},
		"work/repo/fifo":       {Mode: fs.ModeNamedPipe},
		"work/repo/huge.sh":    {Data: []byte(strings.Repeat("#", shell.MaxSourceBytes+1))},
		"work/repo/one.sh":     {Data: []byte("true\n")},
		"work/repo/pushing.sh": {Data: []byte("git push origin\n")},
	}
	var limits []int
	reader := func(p string, limit int) ([]byte, error) {
		limits = append(limits, limit)
		return shell.FSReader(fsys)(p, limit)
	}
	ctx := shell.ScriptContext{Cwd: "/work/repo", Home: "/home/u", ReadFile: reader}
	last := func(a shell.Analysis) shell.Unit { return a.Units[len(a.Units)-1] }

	// The sourced file changes the shell: its cd counts; its variables
	// are unknown afterwards, so that their values (an exported
	// environment, tokens) never surface in what is shown and logged.
	a := shell.AnalyzeScript(". ./env.sh && $DEPLOY status > st.txt; curl -u \"$DEPLOY\" x", ctx)
	if u := last(a); u.Line != `curl -u "$DEPLOY" x` || a.Redirects[0].Dir != "build" {
		t.Fatalf("after source: last unit %v, redirect %+v", u, a.Redirects)
	}
	for _, u := range a.Units {
		if strings.Contains(u.String(), "mod=mod") || strings.Contains(u.String(), "=git") {
			t.Errorf("a value from the sourced file is shown: %s", u)
		}
	}
	if limits[0] != shell.MaxSourceBytes {
		t.Errorf("reader asked for %d bytes, want the bound %d", limits[0], shell.MaxSourceBytes)
	}
	// Arguments are the file's positional parameters.
	a = shell.AnalyzeScript("source ./args.sh hi out.txt", ctx)
	if u := last(a); u.Line != "echo hi" || a.Redirects[0].Path != "out.txt" {
		t.Fatalf("source with arguments: %v %+v", a.Units, a.Redirects)
	}
	for src, why := range map[string]string{
		". ./fifo":                         "not a regular file",
		". ./huge.sh":                      "larger than",
		". ./missing.sh":                   "does not exist",
		"source env.sh":                    "looked up in PATH",
		`source "$F"`:                      "only known when it runs",
		`cd "$D"; source ./env.sh`:         "directory only known when it runs",
		strings.Repeat(". ./one.sh; ", 40): "more than 32 files",
	} {
		a := shell.AnalyzeScript(src, ctx)
		found := false
		for _, u := range a.Units {
			found = found || u.Sentinel == shell.SentinelOpaque && strings.Contains(u.Detail, why)
		}
		if !found {
			t.Errorf("%s: want a sentinel saying %q, got %v", src, why, a.Units)
		}
	}
	// After a part that could not be seen, the shell's state is unknown.
	a = shell.AnalyzeScript(`. ./missing.sh; echo > f; X=1; eval "$Y"; $X`, ctx)
	if a.Redirects[0].Dir != "" || !a.Opaque() || last(a).Sentinel == "" {
		t.Errorf("state after an unseen part: %+v %v", a.Redirects, a.Units)
	}
	// Without a reader nothing is read.
	a = shell.AnalyzeScript(". ./pushing.sh", shell.ScriptContext{Cwd: "/work/repo"})
	if u := last(a); u.Sentinel == "" || !strings.Contains(u.Detail, "not available") {
		t.Errorf("no reader: %v", a.Units)
	}
	// A reader error is no refusal; a readable file is judged.
	p := compileTest(t, identityPolicy)
	in := bashIn(". ./pushing.sh")
	in.ReadFile = reader
	if d := p.DecideExec(in); d.Result.Action != Deny || d.Decider != "git push origin (via bash -c, . ./pushing.sh)" {
		t.Errorf("sourced push: %s", d.Reason())
	}
	in.ReadFile = func(string, int) ([]byte, error) { return nil, errors.New("permission denied") }
	if d := p.DecideExec(in); d.Result.Action != Allow {
		t.Errorf("unreadable sourced file: %s", d.Reason())
	}

	// A file the policy protects is not read by the analysis: its contents
	// would be shown and logged. The shell's own open of it is judged.
	key := func(string, int) ([]byte, error) {
		return []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"), nil
	}
	dp, _, err := Compile(Config{Env: Env{Home: "/home/u", Workspace: "/work/repo", TmpDir: "/tmp"}})
	if err != nil {
		t.Fatal(err)
	}
	in = bashIn("source ~/.ssh/id_ed25519; ls")
	in.ReadFile = key
	d := dp.DecideExec(in)
	for _, u := range d.Units {
		if strings.Contains(u.Unit.String(), "b3BlbnNz") || strings.Contains(u.Unit.String(), "BEGIN") {
			t.Fatalf("the analysis read a protected file: %s", u.Unit)
		}
	}
	if d.Result.Action != Allow || !strings.Contains(d.Units[2].Unit.Detail, "not read before it runs: reading /home/u/.ssh/id_ed25519 is asked about") {
		t.Errorf("protected sourced file: %s, units %v", d.Reason(), d.Units[2].Unit)
	}
	if x := dp.ExplainCommandIn("source ~/.ssh/id_ed25519", shell.ScriptContext{ReadFile: key}); strings.Contains(x.Extra, "BEGIN") {
		t.Errorf("explain read a protected file:\n%s", x.Extra)
	}

	// eval runs in this shell.
	for src, want := range map[string]string{
		"eval 'cd /tmp'; echo > f":       "/tmp",
		`eval "$X"; echo > f`:            "",
		"eval cd sub; echo > f":          "sub",
		"X=git; eval \"$X push\"; true":  "",
		"eval 'f() { cd /x; }'; echo >f": "", // a later call may have run it
	} {
		a := shell.AnalyzeScript(src, ctx)
		if len(a.Redirects) > 0 && a.Redirects[0].Dir != want {
			t.Errorf("%s: redirect dir %q, want %q", src, a.Redirects[0].Dir, want)
		}
	}
	a = AnalyzeScript(`X=git; eval "$X push origin"`)
	if u := last(a); u.Line != "git push origin" {
		t.Errorf("eval of a known variable: %v", a.Units)
	}
}

func TestPositionalParameters(t *testing.T) {
	for src, want := range map[string]string{
		`sh -c 'shift 2; echo "$@" $#' _ a b c d`:        "echo c d 2",
		`sh -c 'echo "$1"' _`:                            "echo ''",
		`sh -c 'set -- x "y z"; echo "$2"' _`:            "echo 'y z'",
		`sh -c 'set -euo pipefail; echo "$1"' _ a`:       "echo a",
		`sh -c 'f() { echo "$1"; }' _ a`:                 `echo "$1"`,
		`sh -c 'shift; exec "$@"' _ drop git status`:     "git status",
		`sh -c 'shift 9; echo "$1"' _ a`:                 "echo a", // fails, changes nothing
		`sh -c 'shift "$N"; echo "$1"' _ a b`:            `echo "$1"`,
		`sh -c 'echo "a $@ b"' _ x y`:                    `echo "a $@ b"`,
		`sh -c 'while x; do shift; done; echo "$1"' _ a`: `echo "$1"`,
		`xargs sh -c 'echo "$@"' _`:                      `echo "$@"`,
	} {
		a := AnalyzeScript(src)
		if u := a.Units[len(a.Units)-1]; u.Line != want {
			t.Errorf("%s: last unit %q, want %q", src, u.Line, want)
		}
	}
}

func TestExplainShowsSpellings(t *testing.T) {
	p := compileTest(t, identityPolicy)
	got, _ := p.explainScript(`git -C /x push origin; eval "$X" > "$f"`, shell.ScriptContext{})
	for _, want := range []string{
		"judged as: git -C /x push origin | git push origin",
		"later  <opaque-shell-wrapper>: eval of a string only known when it runs",
		`later  write "$f" (computed: checked when opened)`,
		"overall: deny: git -C /x push origin",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ExplainScript lacks %q:\n%s", want, got)
		}
	}
	d := p.ExplainCommandIn("source ./s.sh", shell.ScriptContext{ReadFile: shell.FSReader(fstest.MapFS{"work/repo/s.sh": {Data: []byte("git push\n")}})})
	if d.Result.Action != Deny || !strings.Contains(d.Extra, "git push (via source ./s.sh)") {
		t.Errorf("ExplainCommandIn reads sourced files:\n%s", d.Extra)
	}
}

// A suggested pattern matches the command it was made from and no other:
// a star in the command is not a wildcard in the pattern.
func TestSuggestedPatternsAreLiteral(t *testing.T) {
	p := compileTest(t, `{"permission": {"bash": {"*": "ask"}}}`)
	for _, argv := range [][]string{{"rm", "-rf", "*"}, {"rm", "-rf", `a\*`}, {"frobnicate", "x*"}, {"git", "push", "*"}} {
		pat := shell.SuggestBashPattern(argv)
		if _, err := p.AddSessionRule(SurfaceBash, pat); err != nil {
			t.Fatal(err)
		}
		if r := p.Evaluate(Check{SurfaceBash, shell.RenderArgv(argv)}); r.Action != Allow {
			t.Errorf("%q: the suggestion %q does not match its own command", argv, pat)
		}
	}
	for _, other := range []string{"rm -rf /home/u", "rm -rf 'a\\b'", "git push origin"} {
		if r := p.Evaluate(Check{SurfaceBash, other}); r.Action != Ask {
			t.Errorf("%s: allowed by a suggestion made for another command (%s)", other, r)
		}
	}
}

// TestGitPushIntents: spellings that push without the subcommand push —
// git's autocorrection of an unknown subcommand, and its push plumbing —
// meet a `git push *` rule as a possible reading; their twins do not.
func TestGitPushIntents(t *testing.T) {
	p := compileTest(t, identityPolicy)
	for _, tc := range []struct {
		name string
		in   ExecIntent
		want Action
	}{
		// help.autocorrect, from any configuration or the command line.
		{"autocorrect: a substitution", gitExec("git", "pusx", "origin", "main"), Deny},
		{"autocorrect: an extra letter", gitExec("git", "pushh", "origin", "main"), Deny},
		{"autocorrect: a swap", gitExec("git", "psuh", "origin"), Deny},
		{"autocorrect: -c help.autocorrect", gitExec("git", "-c", "help.autocorrect=1", "pushh"), Deny},
		{"autocorrect: after -C", gitExec("git", "-C", ".", "puhs"), Deny},
		{"autocorrect to send-pack", gitExec("git", "send-pak", "../r.git", "main"), Deny},
		{"autocorrect twin: nearest is status", gitExec("git", "statsu"), Allow},
		{"autocorrect twin: nearest is pull", gitExec("git", "pulll"), Allow},
		{"an external subcommand far from push", gitExec("git", "lfs", "push", "origin"), Allow},
		{"an external subcommand, git-pr", gitExec("git", "pr", "list"), Allow},
		{"a known subcommand is not autocorrected", gitExec("git", "pull", "origin"), Allow},
		// A dashed name runs a builtin or nothing.
		{"argv[0] git-pusx is not autocorrected", gitExec("git-pusx", "origin"), Allow},
		// The push plumbing.
		{"send-pack", gitExec("git", "send-pack", "../remote.git", "main"), Deny},
		{"send-pack after options", gitExec("git", "-C", "w", "send-pack", "--all", "../remote.git"), Deny},
		{"http-push", gitExec("git", "http-push", "https://h/r.git", "main"), Deny},
		{"git-send-pack dashed", ExecIntent{Path: "/usr/lib/git-core/git-send-pack", Resolved: "/usr/lib/git-core/git", Argv: []string{"git-send-pack", "../r.git", "main"}}, Deny},
		{"argv[0] git-send-pack", gitExec("git-send-pack", "../r.git", "main"), Deny},
		{"git-http-push program", ExecIntent{Path: "/usr/lib/git-core/git-http-push", Resolved: "/usr/lib/git-core/git-http-push", Argv: []string{"git-http-push", "https://h/r", "main"}}, Deny},
		{"alias to send-pack", gitExec("git", "-c", "alias.sp=send-pack", "sp", "../r.git", "main"), Deny},
		{"alias to push (already read)", gitExec("git", "-c", "alias.p=push", "p", "origin"), Deny},
		{"plumbing twin: fetch-pack", gitExec("git", "fetch-pack", "../r.git", "main"), Allow},
		{"plumbing twin: the remote helpers are not read as push", gitExec("git", "remote-https", "origin", "https://h/r"), Allow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.DecideExec(tc.in)
			if d.Result.Action != tc.want {
				t.Fatalf("got %s, want %s\n%s", d.Reason(), tc.want, spellingsOf(d))
			}
		})
	}
}

// TestGitPushIntentsDefaultPolicy: the default policy's `git push *` ask
// meets the same spellings, and its twins stay quiet.
func TestGitPushIntentsDefaultPolicy(t *testing.T) {
	p, _, err := Compile(Config{Env: Env{Home: "/home/u", Workspace: "/work/repo", TmpDir: "/tmp"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv []string
		want Action
	}{
		{[]string{"git", "pushh", "origin", "main"}, Ask},
		{[]string{"git", "send-pack", "../remote.git", "main"}, Ask},
		{[]string{"git", "http-push", "--force", "https://h/r", "main"}, Ask},
		{[]string{"git", "status"}, Allow},
		{[]string{"git", "statsu"}, Allow},
		{[]string{"git", "lfs", "pull"}, Allow},
	} {
		d := p.DecideExec(gitExec(tc.argv...))
		if d.Result.Action != tc.want {
			t.Errorf("%q: got %s, want %s\n%s", tc.argv, d.Reason(), tc.want, spellingsOf(d))
		}
	}
	// Code loaded before main: the default policy lets the tree write the
	// workspace and asks before writes elsewhere.
	for _, tc := range []struct {
		in   ExecIntent
		env  string
		want Action
	}{
		{gitExec("git", "status"), "LD_PRELOAD=/work/repo/rewrite.so", Ask},
		{gitExec("git", "status"), "LD_LIBRARY_PATH=/work/repo/lib", Ask},
		{gitExec("git", "status"), "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", Allow},
		{gitExec("git", "status"), "LD_LIBRARY_PATH=/usr/local/cuda/lib64", Allow},
		{ExecIntent{Path: "/usr/bin/make", Resolved: "/usr/bin/make", Argv: []string{"make"}, Cwd: "/work/repo"}, "LD_LIBRARY_PATH=/work/repo/build", Allow},
	} {
		tc.in.Env = []string{"PATH=/usr/bin", tc.env}
		if d := p.DecideExec(tc.in); d.Result.Action != tc.want {
			t.Errorf("%s %q: got %s, want %s", tc.env, tc.in.Argv, d.Reason(), tc.want)
		}
	}
}

// TestLoaderEnv: code the dynamic loader loads before main, from a place
// the tree can write, makes git judged by its strictest rule; system
// libraries, and programs no command rule names, are not affected.
func TestLoaderEnv(t *testing.T) {
	// The tree may write the workspace and /tmp, not /usr.
	p := compileTest(t, `{"permission": {
  "exec": "allow", "read": "allow", "write": {"*": "deny", "/work/repo/**": "allow", "/tmp/**": "allow"},
  "bash": {"*": "allow", "git push *": "deny", "git status *": "allow"}
}}`)
	system := func(p string) bool { return strings.HasPrefix(p, "/usr/") || strings.HasPrefix(p, "/lib") }
	withEnv := func(in ExecIntent, env ...string) ExecIntent {
		in.Env = env
		in.SystemFile = system
		return in
	}
	for _, tc := range []struct {
		name string
		in   ExecIntent
		want Action
		why  string // in the decider
	}{
		{"LD_PRELOAD in the workspace", withEnv(gitExec("git", "status", "origin"), "LD_PRELOAD=/work/repo/x.so"), Deny, "a preloaded library can change what git runs: LD_PRELOAD=/work/repo/x.so, a file the tree can write"},
		{"LD_PRELOAD relative", withEnv(gitExec("git", "status"), "HOME=/home/u", "LD_PRELOAD=./x.so"), Deny, "LD_PRELOAD=./x.so: /work/repo/x.so, a file the tree can write"},
		{"LD_PRELOAD list", withEnv(gitExec("git", "status"), "LD_PRELOAD=/usr/lib/libz.so.1 /tmp/x.so"), Deny, "/tmp/x.so"},
		{"LD_AUDIT", withEnv(gitExec("git", "status"), "LD_AUDIT=/tmp/a.so"), Deny, "an audit library"},
		{"LD_LIBRARY_PATH to the workspace", withEnv(gitExec("git", "status"), "LD_LIBRARY_PATH=/usr/lib:/work/repo/build"), Deny, "a directory the tree can write"},
		{"LD_LIBRARY_PATH with an empty entry is the cwd", withEnv(gitExec("git", "status"), "LD_LIBRARY_PATH=/usr/lib:"), Deny, "/work/repo"},
		{"GCONV_PATH", withEnv(gitExec("git", "status"), "GCONV_PATH=/tmp/g"), Deny, "a character-set module"},
		{"$ORIGIN", withEnv(gitExec("git", "status"), "LD_LIBRARY_PATH=$ORIGIN/../lib"), Deny, "$ORIGIN"},
		{"a later duplicate counts", withEnv(gitExec("git", "status"), "LD_PRELOAD=", "LD_PRELOAD=/tmp/x.so"), Deny, ""},
		// Twins.
		{"system library", withEnv(gitExec("git", "status"), "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libz.so.1"), Allow, ""},
		{"a file the policy keeps the tree from writing", withEnv(gitExec("git", "status"), "LD_PRELOAD=/opt/lib/x.so"), Allow, ""},
		{"bare name", withEnv(gitExec("git", "status"), "LD_PRELOAD=libz.so.1"), Allow, ""},
		{"empty", withEnv(gitExec("git", "status"), "LD_PRELOAD="), Allow, ""},
		{"not a loader variable", withEnv(gitExec("git", "status"), "XLD_PRELOAD=/tmp/x.so", "LD_PRELOADX=/tmp/x.so"), Allow, ""},
		{"a program no rule names", withEnv(ExecIntent{Path: "/usr/bin/make", Resolved: "/usr/bin/make", Argv: []string{"make"}, Cwd: "/work/repo"}, "LD_LIBRARY_PATH=/work/repo/build"), Allow, ""},
		{"a build dir for the program built", withEnv(ExecIntent{Path: "./bin/app", Resolved: "/work/repo/bin/app", Argv: []string{"./bin/app"}, Cwd: "/work/repo"}, "LD_LIBRARY_PATH=/work/repo/build"), Allow, ""},
		// The loader's own options, and its environment, for the program it runs.
		{"ld.so --preload", ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Argv: []string{"ld.so", "--preload", "/tmp/x.so", "/usr/bin/git", "status"}, Cwd: "/work/repo", SystemFile: system}, Deny, "--preload"},
		{"ld.so --audit", ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Argv: []string{"ld.so", "--audit", "/tmp/x.so", "/usr/bin/git", "status"}, Cwd: "/work/repo", SystemFile: system}, Deny, ""},
		{"ld.so --library-path", ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Argv: []string{"ld.so", "--library-path", "/work/repo/l", "/usr/bin/git", "status"}, Cwd: "/work/repo", SystemFile: system}, Deny, ""},
		{"ld.so with LD_PRELOAD", withEnv(ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Argv: []string{"ld.so", "/usr/bin/git", "status"}, Cwd: "/work/repo"}, "LD_PRELOAD=/tmp/x.so"), Deny, ""},
		{"ld.so --preload in a script, a value known at run time", ExecIntent{Path: "/bin/bash", Resolved: "/usr/bin/bash", Argv: []string{"bash", "-c", `/lib64/ld-linux-x86-64.so.2 --preload "$L" /usr/bin/git status`}, Cwd: "/work/repo", SystemFile: system}, Deny, `--preload="$L"`},
		{"ld.so --preload of a system library", ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Argv: []string{"ld.so", "--preload", "/usr/lib/libz.so.1", "/usr/bin/git", "status"}, Cwd: "/work/repo", SystemFile: system}, Allow, ""},
		{"ld.so --preload for a program no rule names", ExecIntent{Path: "/lib64/ld-linux-x86-64.so.2", Resolved: ldso, Argv: []string{"ld.so", "--preload", "/tmp/x.so", "/usr/bin/make"}, Cwd: "/work/repo", SystemFile: system}, Allow, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.DecideExec(tc.in)
			if d.Result.Action != tc.want || !strings.Contains(d.Decider, tc.why) {
				t.Fatalf("got %s, want %s (%q)\n%s", d.Reason(), tc.want, tc.why, spellingsOf(d))
			}
		})
	}
	// Approving such an exec for the session suggests its own line, not
	// the line of the rule that decided it.
	ask := compileTest(t, `{"permission": {"exec": "allow", "read": "allow", "write": "allow",
  "bash": {"*": "allow", "git push *": "ask"}}}`)
	d := ask.DecideExec(withEnv(gitExec("git", "status"), "LD_PRELOAD=/tmp/x.so"))
	if d.Result.Action != Ask {
		t.Fatalf("preloaded git status under a git push ask: %s", d.Reason())
	}
	for _, sp := range ask.SuggestSession(d) {
		if strings.Contains(sp.Pattern, "push") {
			t.Errorf("session suggestion %s for a git status", sp)
		}
	}
	// Unknown system files: the policy's write rules alone decide.
	in := gitExec("git", "status")
	in.Env = []string{"LD_PRELOAD=/usr/lib/x.so"}
	if d := p.DecideExec(in); d.Result.Action != Allow {
		t.Errorf("a library the policy does not let the tree write: %s", d.Reason())
	}
	if got := LoaderEnv([]string{"A=1", "LD_PRELOAD=x", "GCONV_PATH=", "LD_AUDIT", "LD_LIBRARY_PATH=y"}); !slices.Equal(got, []string{"LD_PRELOAD=x", "GCONV_PATH=", "LD_LIBRARY_PATH=y"}) {
		t.Errorf("LoaderEnv: %q", got)
	}
}

// TestMayBeLoaderEntry: every entry LoaderEnv keeps passes the
// supervisor's prefilter (an entry it failed would never be judged or
// verified), and ordinary entries do not.
func TestMayBeLoaderEntry(t *testing.T) {
	var entries []string
	for _, v := range loaderVars {
		entries = append(entries, v+"=", v+"=/tmp/x.so", v+"=a b:c")
	}
	entries = append(entries, "PATH=/usr/bin", "HOME=/h", "L=", "LANG=C", "GIT_DIR=.git", "=x", "")
	kept := 0
	for _, e := range entries {
		if isLoaderEntry(e) {
			kept++
			if !MayBeLoaderEntry([]byte(e)) {
				t.Errorf("%q: LoaderEnv keeps it, the prefilter drops it", e)
			}
		}
	}
	if kept != 3*len(loaderVars) {
		t.Errorf("%d entries kept, want %d", kept, 3*len(loaderVars))
	}
	for _, e := range []string{"PATH=/usr/bin", "HOME=/h", "=x", "", "L="} {
		if MayBeLoaderEntry([]byte(e)) {
			t.Errorf("%q passes the prefilter", e)
		}
	}
}
