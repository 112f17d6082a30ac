package engine

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/permwrap/permwrap/engine/shell"
)

// gitRepoFiles adds a git directory at dir (a HEAD, objects/ and refs/).
func gitRepoFiles(fs fstest.MapFS, dir string) {
	fs[dir+"/HEAD"] = &fstest.MapFile{Data: []byte("ref: refs/heads/main\n")}
	fs[dir+"/objects/info/packs"] = &fstest.MapFile{}
	fs[dir+"/refs/heads/main"] = &fstest.MapFile{Data: []byte("0123456789012345678901234567890123456789\n")}
	fs[dir+"/hooks/post-receive"] = &fstest.MapFile{Data: []byte("#!/bin/sh\n")}
	fs[dir+"/config"] = &fstest.MapFile{Data: []byte("[core]\n\tbare = true\n")}
}

const effectsRepoConfig = `[core]
	repositoryformatversion = 0
[remote "origin"]
	url = /srv/repo.git
	fetch = +refs/heads/*:refs/remotes/origin/*
[remote "file"]
	url = file:///srv/repo.git
[remote "filehost"]
	url = file://host/srv/repo.git
[remote "rel"]
	url = ../other.git
[remote "gh"]
	url = https://github.com/x/y.git
[remote "scp"]
	url = srv:repo.git
[remote "both"]
	url = /srv/repo.git
	pushurl = /srv/mirror.git
[remote "quoted"]
	url = "/srv/repo" ; a comment
[remote "Hooks"]
	url = /home/u/src/proj/.git/hooks
[remote "home"]
	url = ~
[remote "cleared"]
	url = /srv/repo.git
	url =
	url = https://example.com/r.git
[url "/srv/"]
	insteadOf = local:
[url "/srv/mirror.git"]
	pushInsteadOf = /srv/pushed.git
[branch "main"]
	remote = origin
`

func effectsFS() fstest.MapFS {
	fs := fstest.MapFS{}
	gitRepoFiles(fs, "home/u/src/proj/.git")
	fs["home/u/src/proj/.git/config"] = &fstest.MapFile{Data: []byte(effectsRepoConfig)}
	fs["home/u/src/proj/main.go"] = &fstest.MapFile{}
	gitRepoFiles(fs, "srv/repo.git")
	gitRepoFiles(fs, "srv/mirror.git")
	gitRepoFiles(fs, "home/u/src/other.git")
	fs["srv/notrepo/README"] = &fstest.MapFile{}
	// A repository made where guarded files live: the workspace's own
	// hooks directory, and the home directory.
	gitRepoFiles(fs, "home/u/src/proj/.git/hooks")
	gitRepoFiles(fs, "home/u")
	fs["home/u/.bashrc"] = &fstest.MapFile{}
	fs["home/u/.gitconfig"] = &fstest.MapFile{Data: []byte("[url \"/srv/\"]\n\tinsteadOf = glob:\n[include]\n\tpath = .gitconfig.local\n")}
	fs["home/u/.gitconfig.local"] = &fstest.MapFile{Data: []byte("[url \"/srv/mirror.git\"]\n\tinsteadOf = mirror\n")}
	return fs
}

func gitEffects(t *testing.T, p *Policy, fs fstest.MapFS, cwd string, argv ...string) []Effect {
	t.Helper()
	d := p.DecideExec(ExecIntent{Path: "/usr/bin/" + argv[0], Resolved: "/usr/bin/" + argv[0], Argv: argv, Cwd: cwd, ReadFile: shell.FSReader(fs)})
	return d.Effects
}

func places(es []Effect) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Place)
	}
	return out
}

func TestPushEffectRemotes(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	fs := effectsFS()
	ws := "/home/u/src/proj"
	for _, c := range []struct {
		cwd  string
		argv []string
		want []string
	}{
		{ws, []string{"git", "push"}, []string{"/srv/repo.git"}}, // branch.main.remote
		{ws, []string{"git", "push", "origin", "main"}, []string{"/srv/repo.git"}},
		{ws, []string{"git", "push", "-q", "origin", "main"}, []string{"/srv/repo.git"}},
		{ws, []string{"git", "push", "--force-with-lease=main", "-u", "origin", "main"}, []string{"/srv/repo.git"}},
		{ws, []string{"git", "push", "-o", "ci.skip", "origin", "main"}, []string{"/srv/repo.git"}},
		{ws, []string{"git", "push", "--repo=origin"}, []string{"/srv/repo.git"}},
		{ws, []string{"git", "push", "/srv/repo.git", "main"}, []string{"/srv/repo.git"}},
		{ws, []string{"git", "push", "/srv/repo", "main"}, []string{"/srv/repo.git"}}, // PATH.git
		{ws, []string{"git", "push", "file:///srv/repo.git", "main"}, []string{"/srv/repo.git"}},
		{ws, []string{"git", "push", "file"}, []string{"/srv/repo.git"}},
		{ws, []string{"git", "push", "rel"}, []string{"/home/u/src/other.git"}}, // relative to the cwd
		{ws, []string{"git", "push", "../other.git"}, []string{"/home/u/src/other.git"}},
		{ws, []string{"git", "push", "both"}, []string{"/srv/mirror.git"}}, // pushurl
		{ws, []string{"git", "push", "quoted"}, []string{"/srv/repo.git"}},
		{ws, []string{"git", "push", "local:repo.git"}, []string{"/srv/repo.git"}},    // url.insteadOf
		{ws, []string{"git", "push", "/srv/pushed.git"}, []string{"/srv/mirror.git"}}, // pushInsteadOf
		{ws, []string{"git", "push", "glob:repo.git"}, []string{"/srv/repo.git"}},     // ~/.gitconfig
		{ws, []string{"git", "push", "mirror"}, []string{"/srv/mirror.git"}},          // its include
		{"/tmp", []string{"git", "-C", ws, "push", "origin"}, []string{"/srv/repo.git"}},
		{ws + "/.git", []string{"git", "push", "origin"}, []string{"/srv/repo.git"}},
		// Elsewhere, or not known: nothing.
		{ws, []string{"git", "push", "gh"}, nil},
		{ws, []string{"git", "push", "scp"}, nil},
		{ws, []string{"git", "push", "filehost"}, nil},
		{ws, []string{"git", "push", "cleared"}, nil}, // an empty url clears those before it
		{ws, []string{"git", "push", "nosuch"}, nil},
		{ws, []string{"git", "push", "/srv/notrepo"}, nil},
		{ws, []string{"git", "push", "--receive-pack=/tmp/x", "origin"}, nil},
		{ws, []string{"git", "push", "--exec", "/tmp/x", "origin"}, nil},
		{ws, []string{"git", "push", "--rec", "origin"}, nil}, // an abbreviation
		{ws, []string{"git", "-c", "remote.origin.url=/srv/mirror.git", "push", "origin"}, nil},
		{ws, []string{"git", "--git-dir=/srv/mirror.git", "push", "origin"}, nil},
		{"/srv/notrepo", []string{"git", "push", "origin"}, nil}, // no repository
		{ws, []string{"git", "fetch", "origin"}, nil},
	} {
		if got := places(gitEffects(t, p, fs, c.cwd, c.argv...)); !slices.Equal(got, c.want) {
			t.Errorf("%v in %s: effects %v, want %v", c.argv, c.cwd, got, c.want)
		}
	}
}

// A configuration the analysis cannot read, or one a condition may
// change, gives nothing: the writes ask as before.
func TestPushEffectUnknownConfig(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	ws := "/home/u/src/proj"
	for name, gitconfig := range map[string]string{
		"include the policy keeps from being read": "[include]\n\tpath = ~/.ssh/gitconfig\n",
		"includeIf that sets a url":                "[includeIf \"gitdir:~/src/\"]\n\tpath = ~/.gitconfig.work\n",
		"not a configuration file":                 "[url \"/srv/\"\n",
		"an unterminated quote":                    "[user]\n\tname = \"x\n",
	} {
		fs := effectsFS()
		fs["home/u/.gitconfig"] = &fstest.MapFile{Data: []byte(gitconfig)}
		fs["home/u/.ssh/gitconfig"] = &fstest.MapFile{Data: []byte("[user]\n\tname = x\n")}
		fs["home/u/.gitconfig.work"] = &fstest.MapFile{Data: []byte("[url \"/srv/mirror.git\"]\n\tinsteadOf = /srv/repo.git\n")}
		if got := gitEffects(t, p, fs, ws, "git", "push", "origin"); len(got) != 0 {
			t.Errorf("%s: effects %v, want none", name, places(got))
		}
	}
	// An includeIf that sets nothing about remotes changes nothing.
	fs := effectsFS()
	fs["home/u/.gitconfig"] = &fstest.MapFile{Data: []byte("[includeIf \"gitdir:~/src/\"]\n\tpath = ~/.gitconfig.work\n")}
	fs["home/u/.gitconfig.work"] = &fstest.MapFile{Data: []byte("[user]\n\temail = u@example.com\n")}
	if got := places(gitEffects(t, p, fs, ws, "git", "push", "origin")); !slices.Equal(got, []string{"/srv/repo.git"}) {
		t.Errorf("includeIf of user settings: effects %v", got)
	}
}

func TestPushEffectCovers(t *testing.T) {
	e := Effect{Kind: EffectPushRemote, Place: "/srv/repo.git"}
	for _, c := range []struct {
		a    Access
		p    string
		want bool
	}{
		{AccessWrite, "/srv/repo.git/objects/tmp_objdir-incoming-bOovua", true},
		{AccessWrite, "/srv/repo.git/objects/tmp_objdir-incoming-bOovua/pack/tmp_pack_x", true},
		{AccessWrite, "/srv/repo.git/refs/heads/main.lock", true},
		{AccessRead | AccessWrite, "/srv/repo.git/HEAD.lock", true},
		{AccessWrite, "/srv/repo.git/packed-refs", true},
		{AccessWrite, "/srv/repo.git/logs/refs/heads/main", true},
		{AccessWrite, "/srv/repo.git/FETCH_HEAD", true},
		{AccessWrite, "/srv/repo.git/shallow.lock", true},
		{AccessWrite, "/srv/repo.git/hooks/post-receive", false},
		{AccessWrite, "/srv/repo.git/hooks", false},
		{AccessWrite, "/srv/repo.git/config", false},
		{AccessWrite, "/srv/repo.git/config.lock", false},
		{AccessWrite, "/srv/repo.git/info/attributes", false},
		{AccessWrite, "/srv/repo.git", false},
		{AccessWrite, "/srv/repo.gitx/refs/heads/main", false},
		{AccessWrite, "/srv/other/refs/x", false},
		{AccessExec, "/srv/repo.git/objects/x", false},
	} {
		if got := e.Covers(c.a, c.p); got != c.want {
			t.Errorf("Covers(%s, %s) = %v, want %v", c.a, c.p, got, c.want)
		}
	}
}

// A remote that names a guarded place cannot reach what is guarded:
// what it covers is a git directory's own files, and a rule that names a
// place still asks (AsksUnnamed).
func TestPushEffectGuardedPlaces(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	fs := effectsFS()
	ws := "/home/u/src/proj"
	hooks := gitEffects(t, p, fs, ws, "git", "push", "Hooks")
	home := gitEffects(t, p, fs, ws, "git", "push", "home")
	if len(hooks) != 1 || len(home) != 1 {
		t.Fatalf("effects %v and %v, want one each", places(hooks), places(home))
	}
	for _, c := range []struct {
		e    Effect
		path string
	}{
		{hooks[0], ws + "/.git/hooks/pre-commit"},
		{hooks[0], ws + "/.git/hooks/refs/heads/main"},
		{hooks[0], ws + "/.git/hooks/HEAD"},
		{home[0], "/home/u/.bashrc"},
		{home[0], "/home/u/.ssh/authorized_keys"},
		{home[0], "/home/u/.gitconfig"},
	} {
		if c.e.Covers(AccessWrite, c.path) && p.AsksUnnamed(AccessWrite, c.path) {
			t.Errorf("a push to %s would lift the ask on %s", c.e.Place, c.path)
		}
	}
	// What a push to an ordinary remote covers is asked about only by the
	// catch-all, so the effect lifts it.
	for _, f := range []string{"/srv/repo.git/refs/heads/main.lock", "/srv/repo.git/objects/tmp_objdir-incoming-x", "/srv/repo.git/HEAD.lock"} {
		if !p.AsksUnnamed(AccessWrite, f) {
			t.Errorf("AsksUnnamed(%s) = false under the default policy", f)
		}
	}
	for _, f := range []string{"/home/u/.bashrc", ws + "/.git/hooks/pre-commit", "/home/u/.config/permwrap/policy.jsonc", ws + "/x"} {
		if p.AsksUnnamed(AccessWrite, f) {
			t.Errorf("AsksUnnamed(%s) = true", f)
		}
	}
}

func TestWorktreeEffect(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	fs := effectsFS()
	ws := "/home/u/src/proj"
	for _, argv := range [][]string{
		{"git", "worktree", "add", "../wt"},
		{"git", "worktree", "add", "-b", "feature", "../wt", "main"},
		{"git", "worktree", "add", "--detach", "-q", "../wt", "HEAD~1"},
	} {
		got := gitEffects(t, p, fs, ws, argv...)
		if len(got) != 1 || got[0].Place != "/home/u/src/wt" || got[0].Admin != ws+"/.git/worktrees/wt" {
			t.Errorf("%v: effects %+v", argv, got)
		}
	}
	for _, argv := range [][]string{
		{"git", "worktree", "add", "../other.git"}, // exists
		{"git", "worktree", "add", "--frobnicate", "../wt"},
		{"git", "worktree", "list"},
	} {
		if got := gitEffects(t, p, fs, ws, argv...); len(got) != 0 {
			t.Errorf("%v: effects %+v, want none", argv, got)
		}
	}
	e := Effect{Kind: EffectWorktree, Place: "/home/u/src/wt", Admin: ws + "/.git/worktrees/wt"}
	for path, want := range map[string]bool{
		"/home/u/src/wt":                          true,
		"/home/u/src/wt/main.go":                  true,
		"/home/u/src/wt/.git":                     true,
		ws + "/.git/worktrees":                    true,
		ws + "/.git/worktrees/wt/HEAD":            true,
		ws + "/.git/worktrees/wt1/locked":         true,
		ws + "/.git/worktrees/wt/config.worktree": false,
		ws + "/.git/worktrees/wtx/HEAD":           false,
		ws + "/.git/worktrees/other/HEAD":         false,
		"/home/u/src/wt2/x":                       false,
		"/home/u/src":                             false,
	} {
		if got := e.Covers(AccessWrite, path); got != want {
			t.Errorf("Covers(%s) = %v, want %v", path, got, want)
		}
	}
}

// The effect of a script's command names the unit it belongs to: a rule
// that allows the exec's own command line grants only that command's.
func TestEffectUnitIndex(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	fs := effectsFS()
	ws := "/home/u/src/proj"
	d := p.DecideExec(ExecIntent{Path: "/bin/bash", Resolved: "/bin/bash", Argv: []string{"bash", "-c", "make && git push origin main"}, Cwd: ws, ReadFile: shell.FSReader(fs)})
	if len(d.Effects) != 1 || d.Effects[0].Unit != 2 || d.Units[2].Unit.Line != "git push origin main" {
		t.Fatalf("effects %+v of units %v", d.Effects, d.Units)
	}
	d = p.DecideExec(ExecIntent{Path: "/usr/bin/git", Resolved: "/usr/bin/git", Argv: []string{"git", "push", "origin", "main"}, Cwd: ws, ReadFile: shell.FSReader(fs)})
	if len(d.Effects) != 1 || d.Effects[0].Unit != 0 {
		t.Fatalf("effects %+v", d.Effects)
	}
	// Without a reader nothing can be resolved.
	d = p.DecideExec(ExecIntent{Path: "/usr/bin/git", Resolved: "/usr/bin/git", Argv: []string{"git", "push", "origin", "main"}, Cwd: ws})
	if len(d.Effects) != 0 {
		t.Fatalf("effects without a reader: %+v", d.Effects)
	}
}

func TestParseGitConfig(t *testing.T) {
	src := "# c\n[Remote \"Or\\\"ig\"] URL = \" a b \"  c  ; x\n\tpushurl=/p\\\n/q\n[branch.Main]\n\tremote\n[url \"/s/\"]\n\tinsteadOf = \"x\\ty\"\n"
	got, ok := parseGitConfig([]byte(src))
	want := []gitEntry{
		{section: "remote", sub: `Or"ig`, name: "url", value: " a b   c"},
		{section: "remote", sub: `Or"ig`, name: "pushurl", value: "/p/q"},
		{section: "branch", sub: "main", name: "remote", noValue: true},
		{section: "url", sub: "/s/", name: "insteadof", value: "x\ty"},
	}
	if !ok || !slices.Equal(got, want) {
		t.Errorf("parse:\n got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{"x = 1\n", "[a \"b]\n", "[a]\nk = \"open\n", "[a]\nk = \\q\n", "[a]\n=v\n"} {
		if _, ok := parseGitConfig([]byte(bad)); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestEffectString(t *testing.T) {
	for e, want := range map[Effect]string{
		{Kind: EffectPushRemote, Place: "/srv/repo.git"}:                        "writes into /srv/repo.git (the push's remote; not its hooks or config)",
		{Kind: EffectWorktree, Place: "/w/wt", Admin: "/w/p/.git/worktrees/wt"}: "writes in /w/wt (the new worktree) and /w/p/.git/worktrees/wt (git's record of it)",
		{Kind: EffectWorktree, Place: "/w/wt"}:                                  "writes in /w/wt (the new worktree)",
	} {
		if got := e.String(); got != want {
			t.Errorf("%+v: %q, want %q", e, got, want)
		}
	}
}

// explain says what allowing a command covers.
func TestExplainShowsEffects(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := p.explainScript("git push origin main", shell.ScriptContext{Cwd: "/home/u/src/proj", ReadFile: shell.FSReader(effectsFS())})
	if !strings.Contains(got, "what allowing it covers") || !strings.Contains(got, "  writes into /srv/repo.git (the push's remote; not its hooks or config)\n") {
		t.Errorf("explain:\n%s", got)
	}
	if got, _ := p.explainScript("git push origin main", shell.ScriptContext{Cwd: "/home/u/src/proj"}); strings.Contains(got, "covers") {
		t.Errorf("explain without a reader:\n%s", got)
	}
}

// A rule's allow grants a new worktree only beside the workspace, with no
// hidden name on the way: the bash catch-all allows `git worktree add`
// wherever it points, and a new ~/.emacs.d is code another program runs.
func TestWorktreeEffectByRule(t *testing.T) {
	p, _, err := Compile(Config{Env: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	fs := effectsFS()
	ws := "/home/u/src/proj"
	for wt, want := range map[string]bool{
		"../wt":             true,
		"../a/b":            true,
		"/home/u/src/other": true,
		"../.hidden":        false,
		"../a/.config/x":    false,
		"/home/u/.emacs.d":  false,
		"/home/u/wt":        false, // beside the workspace's parent, not the workspace
		"/srv/wt":           false,
	} {
		got := gitEffects(t, p, fs, ws, "git", "worktree", "add", wt)
		if len(got) != 1 || got[0].ByRule != want {
			t.Errorf("git worktree add %s: %+v, want one with ByRule %v", wt, got, want)
		}
	}
	if got := gitEffects(t, p, fs, ws, "git", "push", "origin"); len(got) != 1 || !got[0].ByRule {
		t.Errorf("a push: %+v", got)
	}
}

// No configuration file, however broken, panics the parser, and what it
// accepts it accepts whole (every entry has a section).
func FuzzParseGitConfig(f *testing.F) {
	f.Add([]byte(effectsRepoConfig))
	f.Add([]byte("[a \"b\\\"c\"] k = \"v ; x\" # c\n\tk2\n[x.y]\nz=1\\\n2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, ok := parseGitConfig(b)
		if !ok {
			return
		}
		for _, e := range entries {
			if e.section == "" || e.name == "" {
				t.Fatalf("entry without a section or name: %+v", e)
			}
		}
	})
}

// A rule on the path surface that names the place keeps its ask, even
// where the write surface's catch-all asks too.
func TestAsksUnnamedEverySurface(t *testing.T) {
	p := compileTest(t, `{"extends": "none", "permission": {"read": "allow", "write": {"*": "ask"}, "path": {"/srv/named/**": "ask"}}}`)
	if !p.AsksUnnamed(AccessWrite, "/srv/other/refs/x") {
		t.Error("the catch-all's ask is not unnamed")
	}
	if p.AsksUnnamed(AccessWrite, "/srv/named/refs/x") {
		t.Error("a path rule's ask counts as unnamed")
	}
}
