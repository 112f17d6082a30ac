package engine

import (
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/permwrap/permwrap/engine/shell"
)

// An effect is a place a command's job is to write in, which the command
// names: a `git push` to a repository on this machine writes that
// repository's objects and refs, a `git worktree add DIR` writes DIR and
// the repository's record of it. When a person approves the command, or
// a rule allows it, the writes into that place are approved with it
// (supervisor/scripts.go): one ask per intent, not one for the push and
// three for its lock files.
//
// An effect is found only when everything that decides the place can be
// read: the command line is literal, and the repository's configuration
// (remote names, url.<base>.insteadOf and pushInsteadOf) is read through
// the same reader the analysis reads sourced files with, which reads only
// what the policy lets the tree read without asking. Anything else — a
// remote on another machine, an option the model does not know, a
// configuration it cannot read, a place that is not a repository — gives
// no effect, and the writes ask as before.

// EffectKind is what kind of place an effect is.
type EffectKind uint8

const (
	// EffectPushRemote: the git directory of a repository a push writes
	// into. Its objects/, refs/, logs/, reftable/, packed-refs, HEAD,
	// FETCH_HEAD, shallow and their lock files; never hooks/ or config.
	EffectPushRemote EffectKind = iota + 1
	// EffectWorktree: a new worktree's directory (everything beneath it)
	// and the repository's worktrees/NAME directory that records it
	// (except config.worktree).
	EffectWorktree
)

// Effect is one place a command writes in to do its job.
type Effect struct {
	Kind EffectKind
	// Place is absolute and clean: the remote's git directory, or the new
	// worktree's directory.
	Place string
	// Admin is, for a worktree, the repository's worktrees/NAME directory
	// git records it in ("" when its name is not known); git takes NAME1,
	// NAME2… when NAME is taken, and those are covered too.
	Admin string
	// Unit is the index in ExecDecision.Units of the command this is an
	// effect of: 0 is the exec's own command line.
	Unit int
	// ByRule says a rule's allow of the command grants the effect too (a
	// person's approval grants every one): always for a push, which
	// writes only a repository's own files; for a worktree only beside
	// the workspace (ruleMayGrantWorktree), since a rule — the bash
	// catch-all among them — allows the command wherever it points.
	ByRule bool
}

// ruleMayGrantWorktree reports whether a rule's allow of `git worktree
// add` may grant writes in dir: a new directory beside the workspace
// (beneath the workspace's parent, not /), with no hidden name on the
// way (~/.emacs.d and its kind are configuration other programs run).
func (p *Policy) ruleMayGrantWorktree(dir string) bool {
	ws := strings.TrimSuffix(p.env.Workspace, "/")
	if !path.IsAbs(ws) {
		return false
	}
	parent := path.Dir(ws)
	rel, ok := relBeneath(dir, parent)
	if parent == "/" || !ok {
		return false
	}
	for _, c := range strings.Split(rel, "/") {
		if strings.HasPrefix(c, ".") {
			return false
		}
	}
	return true
}

// pushFiles are the files at the top of a git directory a push (and the
// receive-pack and gc it runs there) writes.
var pushFiles = map[string]bool{
	"HEAD": true, "HEAD.lock": true, "packed-refs": true, "packed-refs.lock": true,
	"FETCH_HEAD": true, "FETCH_HEAD.lock": true, "shallow": true, "shallow.lock": true,
	"gc.pid": true, "gc.pid.lock": true, "gc.log": true, "gc.log.lock": true,
}

// pushTrees are the directories of a git directory whose whole tree a
// push writes.
var pushTrees = map[string]bool{"objects": true, "refs": true, "logs": true, "reftable": true}

// Covers reports whether a read or write of the absolute path p is part
// of the effect. Execs never are.
func (e Effect) Covers(a Access, p string) bool {
	if a == 0 || a&^(AccessRead|AccessWrite) != 0 {
		return false
	}
	switch e.Kind {
	case EffectPushRemote:
		rel, ok := relBeneath(p, e.Place)
		if !ok {
			return false
		}
		first, rest, _ := strings.Cut(rel, "/")
		return pushTrees[first] || rest == "" && pushFiles[first]
	case EffectWorktree:
		if p == e.Place || isBeneath(p, e.Place) {
			return true
		}
		if e.Admin == "" {
			return false
		}
		dir, name := path.Dir(e.Admin), path.Base(e.Admin)
		if p == dir {
			return true // git creates worktrees/ for the first one
		}
		rel, ok := relBeneath(p, dir)
		if !ok {
			return false
		}
		first, rest, _ := strings.Cut(rel, "/")
		if !adminName(first, name) {
			return false
		}
		return rest != "config.worktree" && rest != "config.worktree.lock"
	}
	return false
}

// String says what the effect covers, for the prompt and the log:
// "writes into /srv/repo.git (the push's remote)".
func (e Effect) String() string {
	switch e.Kind {
	case EffectPushRemote:
		return "writes into " + e.Place + " (the push's remote; not its hooks or config)"
	case EffectWorktree:
		s := "writes in " + e.Place + " (the new worktree)"
		if e.Admin != "" {
			s += " and " + e.Admin + " (git's record of it)"
		}
		return s
	}
	return "nothing"
}

// relBeneath is p relative to dir when p is beneath it.
func relBeneath(p, dir string) (string, bool) {
	if !isBeneath(p, dir) {
		return "", false
	}
	if dir == "/" {
		return p[1:], true
	}
	return p[len(dir)+1:], true
}

// adminName reports whether s is name or name followed by digits (git's
// NAME1, NAME2… when NAME is taken).
func adminName(s, name string) bool {
	rest, ok := strings.CutPrefix(s, name)
	if !ok {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] < '0' || rest[i] > '9' {
			return false
		}
	}
	return true
}

// Bounds on what finding an effect reads.
const (
	maxGitConfigBytes = 256 << 10
	maxGitConfigFiles = 16
	maxGitIncludes    = 8 // include depth
	maxEffectsPerUnit = 8 // a remote's push URLs
	maxRepoWalk       = 64
)

// effectsOf finds the effects of one unit: prog is the program it runs
// (by identity when known), dir the directory it runs in (absolute; ""
// unknown), read the reader of the exec (guarded here: only what the
// policy lets the tree read without asking is read).
func (p *Policy) effectsOf(u shell.Unit, prog, dir string, read shell.FileReader, index int) []Effect {
	if prog != "git" || u.Sentinel != "" || len(u.Dynamic) > 0 || u.InProcess || len(u.Argv) < 2 || read == nil || !path.IsAbs(dir) {
		return nil
	}
	g := &gitReader{read: p.guardReads(read), home: p.env.Home}
	// git's global options: -C moves, the flags below change nothing
	// about where a push goes; any other (-c, --git-dir, --work-tree,
	// --config-env, …) may, and gives no effect.
	args := u.Argv[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch {
		case args[0] == "-C" && len(args) > 1:
			d, ok := resolveIn(args[1], dir, dir, p.env.Home)
			if !ok {
				return nil
			}
			dir, args = d, args[2:]
		case gitHarmlessGlobals[args[0]]:
			args = args[1:]
		default:
			return nil
		}
	}
	if len(args) == 0 {
		return nil
	}
	var out []Effect
	switch args[0] {
	case "push":
		for _, place := range g.pushRemotes(dir, args[1:]) {
			out = append(out, Effect{Kind: EffectPushRemote, Place: place, Unit: index, ByRule: true})
		}
	case "worktree":
		if len(args) > 1 && args[1] == "add" {
			if e, ok := g.worktreeAdd(dir, args[2:]); ok {
				e.Unit, e.ByRule = index, p.ruleMayGrantWorktree(e.Place)
				out = append(out, e)
			}
		}
	}
	return out
}

// gitHarmlessGlobals are git's global options that change nothing about
// which repository a command works on or where it pushes.
var gitHarmlessGlobals = wordSetOf("-p", "--paginate", "-P", "--no-pager", "--no-replace-objects",
	"--literal-pathspecs", "--no-literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs",
	"--icase-pathspecs", "--no-optional-locks", "--no-advice", "--no-lazy-fetch")

func wordSetOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// pushRemotes resolves where `git push ARGS` run in dir pushes, and
// returns the git directories of those that are repositories on this
// machine. Unknown options, remotes it cannot resolve and remotes
// elsewhere give nothing.
func (g *gitReader) pushRemotes(dir string, args []string) []string {
	var positional []string
	repoOpt := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case !strings.HasPrefix(a, "-") || a == "-":
			positional = append(positional, a)
		case strings.HasPrefix(a, "--"):
			name, value, hasEq := strings.Cut(a, "=")
			switch {
			case pushLongFlags[name] && !hasEq:
			case pushLongOptional[name]:
			case name == "--recurse-submodules" || name == "--push-option":
				if !hasEq {
					i++
				}
			case name == "--repo":
				if !hasEq {
					if i+1 >= len(args) {
						return nil
					}
					i++
					value = args[i]
				}
				repoOpt = value
			default:
				// --receive-pack/--exec run another program; the rest
				// this model does not know (or is an abbreviation).
				return nil
			}
		default:
			// A cluster of short options; -o takes a value.
			for j := 1; j < len(a); j++ {
				c := a[j]
				if c == 'o' {
					if j == len(a)-1 {
						i++
					}
					break
				}
				if !strings.ContainsRune("vqdnfu46", rune(c)) {
					return nil
				}
			}
		}
	}
	if len(positional) > 0 && positional[0] == "" {
		return nil
	}
	gitDir, common, ok := g.discover(dir)
	if !ok {
		return nil
	}
	cfg, ok := g.config(common)
	if !ok {
		return nil
	}
	name := repoOpt
	if len(positional) > 0 {
		name = positional[0]
	}
	if name == "" {
		name = g.defaultPushRemote(gitDir, cfg)
		if name == "" || !cfg.hasRemote(name) {
			return nil
		}
	}
	var urls []string
	if cfg.hasRemote(name) {
		urls = cfg.pushURLs(name)
	} else {
		if validRemoteNick(name) {
			// git reads $GIT_DIR/remotes/NAME and branches/NAME for a
			// name its configuration does not have: not modelled.
			for _, legacy := range []string{"remotes", "branches"} {
				if _, missing, _ := g.readFile(path.Join(common, legacy, name), 4096); !missing {
					return nil
				}
			}
		}
		urls = cfg.pushURLsOf(nil, []string{name})
	}
	var out []string
	for _, u := range urls {
		if len(out) == maxEffectsPerUnit {
			break
		}
		p, ok := localPath(u, dir, g.home)
		if !ok {
			continue
		}
		if gd, ok := g.repoAt(p); ok && !containsString(out, gd) {
			out = append(out, gd)
		}
	}
	return out
}

// push's options: flags, options whose value is only given after '='.
var (
	pushLongFlags = wordSetOf("--verbose", "--quiet", "--all", "--branches", "--mirror", "--delete",
		"--tags", "--dry-run", "--porcelain", "--force", "--atomic", "--no-atomic", "--thin", "--no-thin",
		"--set-upstream", "--progress", "--no-progress", "--no-verify", "--verify", "--follow-tags",
		"--no-follow-tags", "--ipv4", "--ipv6", "--prune", "--no-prune", "--no-signed",
		"--no-force-with-lease", "--force-if-includes", "--no-force-if-includes", "--no-recurse-submodules")
	pushLongOptional = wordSetOf("--force-with-lease", "--signed")
)

// validRemoteNick is git's valid_remote_nick: a name that may be a
// configured remote, not a path.
func validRemoteNick(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.Contains(s, "/")
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// defaultPushRemote is the remote `git push` with none named pushes to:
// branch.B.pushRemote, remote.pushDefault, branch.B.remote, origin.
func (g *gitReader) defaultPushRemote(gitDir string, cfg *gitConfig) string {
	branch := ""
	if b, _, err := g.readFile(path.Join(gitDir, "HEAD"), 4096); err == nil {
		if ref, ok := strings.CutPrefix(strings.TrimRight(string(b), "\n"), "ref: refs/heads/"); ok {
			branch = ref
		}
	}
	if branch != "" {
		if v, ok := cfg.last("branch", branch, "pushremote"); ok {
			return v
		}
	}
	if v, ok := cfg.last("remote", "", "pushdefault"); ok {
		return v
	}
	if branch != "" {
		if v, ok := cfg.last("branch", branch, "remote"); ok {
			return v
		}
	}
	return "origin"
}

// localPath is the path a remote URL names when it is a repository on
// this machine (transport.c: a path, or a file:// URL), absolute; false
// for a URL of another transport (https://, ssh://, host:path) and for
// one it cannot read exactly (file://HOST/, %-escapes, ~user).
func localPath(u, cwd, home string) (string, bool) {
	switch {
	case u == "":
		return "", false
	case strings.HasPrefix(u, "file://"):
		rest := u[len("file://"):]
		if !strings.HasPrefix(rest, "/") || strings.Contains(rest, "%") {
			return "", false
		}
		return path.Clean(rest), true
	case strings.Contains(u, "://"):
		return "", false
	}
	// url_is_local_not_ssh: a ':' before the first '/' makes host:path.
	if c := strings.IndexByte(u, ':'); c >= 0 {
		if s := strings.IndexByte(u, '/'); s < 0 || c < s {
			return "", false
		}
	}
	// receive-pack expands ~/ (enter_repo); ~user is someone else's.
	return resolveIn(u, ".", cwd, home)
}

// worktreeAdd reads `git worktree add OPTIONS PATH [COMMIT]` run in dir:
// the new worktree's directory, which must not exist yet (git makes it),
// and the repository's worktrees/NAME directory.
func (g *gitReader) worktreeAdd(dir string, args []string) (Effect, bool) {
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case !strings.HasPrefix(a, "-") || a == "-":
			positional = append(positional, a)
		case strings.HasPrefix(a, "--"):
			name, _, hasEq := strings.Cut(a, "=")
			switch {
			case worktreeLongFlags[name] && !hasEq:
			case name == "--reason":
				if !hasEq {
					i++
				}
			default:
				return Effect{}, false
			}
		default:
			for j := 1; j < len(a); j++ {
				c := a[j]
				if c == 'b' || c == 'B' {
					if j == len(a)-1 {
						i++
					}
					break
				}
				if !strings.ContainsRune("fdq", rune(c)) {
					return Effect{}, false
				}
			}
		}
	}
	if len(positional) == 0 {
		return Effect{}, false
	}
	wt, ok := resolveIn(positional[0], ".", dir, g.home)
	if !ok || wt == "/" {
		return Effect{}, false
	}
	// git makes the directory (an empty one it may reuse is not
	// modelled): one that exists is not the new worktree's to cover.
	if _, err := g.read(wt, 0); !errors.Is(err, fs.ErrNotExist) {
		return Effect{}, false
	}
	_, common, ok := g.discover(dir)
	if !ok {
		return Effect{}, false
	}
	e := Effect{Kind: EffectWorktree, Place: wt}
	if name := path.Base(wt); worktreeNameOK(name) {
		e.Admin = path.Join(common, "worktrees", name)
	}
	return e, true
}

var worktreeLongFlags = wordSetOf("--force", "--detach", "--checkout", "--no-checkout", "--lock",
	"--orphan", "--track", "--no-track", "--guess-remote", "--no-guess-remote", "--quiet",
	"--relative-paths", "--no-relative-paths")

// worktreeNameOK reports whether git names the worktree's record after
// the directory unchanged (sanitize_refname_component leaves it alone).
func worktreeNameOK(name string) bool {
	if name == "" || name[0] == '.' || strings.HasSuffix(name, ".lock") || strings.Contains(name, "..") {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// AsksUnnamed reports whether the policy asks about access a to the
// absolute path p only because no rule names the place: the catch-all of
// its surface (`"*": "ask"`) or the built-in default decided. An effect
// lifts only such an ask. A rule that names the place — a guard with a
// reason (`~/.bashrc`, `**/.git/hooks/?**`), a person's own
// `"/srv/**": "ask"` — still asks, as a deny, a hard guard and a
// protected write still hold.
func (p *Policy) AsksUnnamed(a Access, path string) bool {
	if r := p.DecidePath(a, path); r.Action != Ask || !unnamedAsk(r) {
		return false
	}
	// Each surface on its own too: an ask of the catch-all may stand for
	// the whole answer while a rule on another surface (path) names the
	// place and asks as well.
	var buf [4]Check
	for _, c := range pathChecks(&buf, a, path) {
		if r := p.Decide(c); r.Action == Ask && !unnamedAsk(r) || r.Action == Deny {
			return false
		}
	}
	return true
}

// unnamedAsk reports whether the ask r came from a catch-all or from no
// rule at all, and only a person's word is not required.
func unnamedAsk(r Result) bool {
	if r.HumanOnly || r.DependsOnContent {
		return false
	}
	switch r.Layer {
	case LayerFallback, LayerBuiltin:
		return true
	case LayerPolicy:
		return r.Rule.Pattern == "*"
	}
	return false
}
