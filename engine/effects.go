package engine

import (
	"bytes"
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

// gitReader reads a repository's files and configuration for effectsOf.
type gitReader struct {
	read  shell.FileReader
	home  string
	files int // configuration files read
}

// readFile reads p. missing is set when it does not exist; err is any
// other failure (refused by the policy, not a regular file, too large).
func (g *gitReader) readFile(p string, limit int) (b []byte, missing bool, err error) {
	b, err = g.read(p, limit)
	if err != nil {
		return nil, errors.Is(err, fs.ErrNotExist), err
	}
	if len(b) > limit {
		return nil, false, errors.New("too large")
	}
	return b, false, nil
}

// validHead reports whether b is a HEAD file: a symbolic ref or an
// object name.
func validHead(b []byte) bool {
	s := strings.TrimRight(string(b), "\n")
	if ref, ok := strings.CutPrefix(s, "ref: "); ok {
		return strings.HasPrefix(ref, "refs/") && !strings.ContainsAny(ref, "\n\x00")
	}
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// isGitDir reports whether d is a git directory, as git's
// is_git_directory tells: a valid HEAD, objects/ and refs/ present (and
// not files). missing says d has no HEAD at all; err that something
// could not be read.
func (g *gitReader) isGitDir(d string) (ok, missing bool, err error) {
	b, missing, err := g.readFile(path.Join(d, "HEAD"), 4096)
	if err != nil {
		return false, missing, err
	}
	if !validHead(b) {
		return false, false, nil
	}
	for _, sub := range []string{"objects", "refs"} {
		if _, err := g.read(path.Join(d, sub), 0); err == nil || errors.Is(err, fs.ErrNotExist) {
			// A file where git needs a directory, or nothing.
			return false, false, nil
		}
	}
	return true, false, nil
}

// gitFile reads a .git file ("gitdir: PATH"), returning the git directory
// it names, absolute.
func gitFile(b []byte, file string) (string, bool) {
	s := strings.TrimRight(string(b), "\r\n")
	dir, ok := strings.CutPrefix(s, "gitdir: ")
	if !ok || dir == "" || strings.ContainsAny(dir, "\n\x00") {
		return "", false
	}
	if !path.IsAbs(dir) {
		dir = path.Join(path.Dir(file), dir)
	}
	return path.Clean(dir), true
}

// repoAt finds the repository of a path git is given (a remote's path,
// receive-pack's enter_repo): PATH/.git, PATH, PATH.git/.git, PATH.git in
// that order, a .git file followed. It returns the git directory.
func (g *gitReader) repoAt(p string) (string, bool) {
	for _, suffix := range []string{"/.git", "", ".git/.git", ".git"} {
		cand := path.Clean(p + suffix)
		if suffix == "" {
			cand = path.Clean(p)
		}
		b, missing, err := g.readFile(cand, 4096)
		switch {
		case missing:
			continue
		case err == nil:
			// A regular file: git reads it as a .git file or fails.
			dir, ok := gitFile(b, cand)
			if !ok {
				return "", false
			}
			if ok, _, _ := g.isGitDir(dir); ok {
				return dir, true
			}
			return "", false
		}
		// A directory (or something the reader would not read).
		ok, missing, err := g.isGitDir(cand)
		if ok {
			return cand, true
		}
		if !missing && err != nil {
			return "", false // could not tell: nothing
		}
	}
	return "", false
}

// discover finds the repository a git command run in dir works on, as
// git's discovery does (without GIT_DIR, which the command line does not
// show): at each directory up from dir, DIR/.git (a directory or a .git
// file), then DIR itself as a bare repository. gitDir is the command's
// own git directory (a linked worktree's), common the repository's.
func (g *gitReader) discover(dir string) (gitDir, common string, ok bool) {
	for i := 0; i < maxRepoWalk; i++ {
		dotgit := path.Join(dir, ".git")
		b, missing, err := g.readFile(dotgit, 4096)
		switch {
		case err == nil:
			d, ok := gitFile(b, dotgit)
			if !ok {
				return "", "", false
			}
			if isDir, _, _ := g.isGitDir(d); !isDir {
				return "", "", false
			}
			return g.withCommon(d)
		case !missing:
			if isDir, _, _ := g.isGitDir(dotgit); isDir {
				return g.withCommon(dotgit)
			}
		}
		if isDir, _, _ := g.isGitDir(dir); isDir {
			return g.withCommon(dir)
		}
		if dir == "/" {
			break
		}
		dir = path.Dir(dir)
	}
	return "", "", false
}

// withCommon adds a git directory's common directory (a linked
// worktree's commondir file; itself otherwise).
func (g *gitReader) withCommon(d string) (string, string, bool) {
	b, missing, err := g.readFile(path.Join(d, "commondir"), 4096)
	if missing {
		return d, d, true
	}
	if err != nil {
		return "", "", false
	}
	c := strings.TrimRight(string(b), "\r\n")
	if c == "" || strings.ContainsAny(c, "\n\x00") {
		return "", "", false
	}
	if !path.IsAbs(c) {
		c = path.Join(d, c)
	}
	return d, path.Clean(c), true
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

// gitConfig is what effectsOf needs of git's configuration: the entries
// of the remote, branch and url sections, in the order git reads them
// (system, global, the repository's).
type gitConfig struct {
	entries []gitEntry
}

type gitEntry struct {
	section, sub, name string // section and name lower case; sub as written
	value              string
	noValue            bool
}

func (c *gitConfig) last(section, sub, name string) (string, bool) {
	for i := len(c.entries) - 1; i >= 0; i-- {
		e := c.entries[i]
		if e.section == section && e.sub == sub && e.name == name && !e.noValue {
			return e.value, true
		}
	}
	return "", false
}

// all is the values of a multi-valued key; an empty value clears those
// before it (git's remote.NAME.url and pushurl).
func (c *gitConfig) all(section, sub, name string) []string {
	var out []string
	for _, e := range c.entries {
		if e.section == section && e.sub == sub && e.name == name {
			if e.noValue || e.value == "" {
				out = nil
				continue
			}
			out = append(out, e.value)
		}
	}
	return out
}

func (c *gitConfig) hasRemote(name string) bool {
	return len(c.all("remote", name, "url")) > 0 || len(c.all("remote", name, "pushurl")) > 0
}

// pushURLs are the URLs a push to the configured remote name goes to.
func (c *gitConfig) pushURLs(name string) []string {
	return c.pushURLsOf(c.all("remote", name, "pushurl"), c.all("remote", name, "url"))
}

// pushURLsOf is remote.c's alias_all_urls and push_url_of_remote: push
// URLs are rewritten by insteadOf; without any, each URL that a
// pushInsteadOf rewrites becomes one; without those either, the URLs
// (rewritten by insteadOf) are pushed to.
func (c *gitConfig) pushURLsOf(pushurls, urls []string) []string {
	if len(pushurls) > 0 {
		out := make([]string, len(pushurls))
		for i, u := range pushurls {
			out[i] = c.rewrite(u, "insteadof")
		}
		return out
	}
	var aliased []string
	for _, u := range urls {
		if r := c.rewrite(u, "pushinsteadof"); r != u {
			aliased = append(aliased, r)
		}
	}
	if len(aliased) > 0 {
		return aliased
	}
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = c.rewrite(u, "insteadof")
	}
	return out
}

// rewrite is alias_url: the url.BASE.KEY value that is the longest prefix
// of u is replaced by BASE (the first of equal length wins).
func (c *gitConfig) rewrite(u, key string) string {
	best, base := -1, ""
	for _, e := range c.entries {
		if e.section != "url" || e.name != key || e.noValue {
			continue
		}
		if strings.HasPrefix(u, e.value) && len(e.value) > best {
			best, base = len(e.value), e.sub
		}
	}
	if best < 0 {
		return u
	}
	return base + u[best:]
}

// config reads the configuration a git command in a repository whose
// common directory is common sees: /etc/gitconfig, ~/.gitconfig,
// ~/.config/git/config and common/config, with their include.path
// files. A file includeIf brings in may or may not apply: when it sets
// anything of the remote, branch or url sections, the configuration is
// not known (false), as when a file cannot be read or parsed.
func (g *gitReader) config(common string) (*gitConfig, bool) {
	c := &gitConfig{}
	files := []string{"/etc/gitconfig"}
	if path.IsAbs(g.home) {
		files = append(files, path.Join(g.home, ".gitconfig"), path.Join(g.home, ".config/git/config"))
	}
	files = append(files, path.Join(common, "config"))
	for _, f := range files {
		if !g.readConfig(c, f, 0, false) {
			return nil, false
		}
	}
	return c, true
}

// readConfig adds file's entries (and its includes') to c. conditional:
// the file came from an includeIf.
func (g *gitReader) readConfig(c *gitConfig, file string, depth int, conditional bool) bool {
	if depth > maxGitIncludes || g.files >= maxGitConfigFiles {
		return false
	}
	g.files++
	b, missing, err := g.readFile(file, maxGitConfigBytes)
	if missing {
		return true // git skips a missing file (and include)
	}
	if err != nil {
		return false
	}
	entries, ok := parseGitConfig(b)
	if !ok {
		return false
	}
	for _, e := range entries {
		switch {
		case e.section == "include" && e.sub == "" && e.name == "path",
			e.section == "includeif" && e.sub != "" && e.name == "path":
			inc, ok := g.includePath(e.value, file)
			if !ok || !g.readConfig(c, inc, depth+1, conditional || e.section == "includeif") {
				return false
			}
		case e.section == "remote" || e.section == "branch" || e.section == "url":
			if conditional {
				return false
			}
			c.entries = append(c.entries, e)
		}
	}
	return true
}

// includePath is an include's file: ~/ expanded, relative to the
// including file's directory.
func (g *gitReader) includePath(v, from string) (string, bool) {
	switch {
	case v == "":
		return "", false
	case strings.HasPrefix(v, "~/"):
		if !path.IsAbs(g.home) {
			return "", false
		}
		return path.Join(g.home, v[2:]), true
	case strings.HasPrefix(v, "~"):
		return "", false
	case path.IsAbs(v):
		return path.Clean(v), true
	}
	return path.Join(path.Dir(from), v), true
}

// parseGitConfig parses a git configuration file (config.c's syntax:
// [section], [section "sub"], [section.sub], name = value with quotes,
// escapes, comments and continued lines). false: it is not one git
// would read.
func parseGitConfig(b []byte) ([]gitEntry, bool) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	var out []gitEntry
	section, sub := "", ""
	i := 0
	for i < len(b) {
		c := b[i]
		switch {
		case c == '\n' || c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#' || c == ';':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case c == '[':
			var ok bool
			section, sub, i, ok = parseSection(b, i+1)
			if !ok {
				return nil, false
			}
		case isAlpha(c):
			if section == "" {
				return nil, false
			}
			j := i
			for j < len(b) && (isAlpha(b[j]) || b[j] >= '0' && b[j] <= '9' || b[j] == '-') {
				j++
			}
			name := strings.ToLower(string(b[i:j]))
			for j < len(b) && (b[j] == ' ' || b[j] == '\t') {
				j++
			}
			e := gitEntry{section: section, sub: sub, name: name}
			switch {
			case j >= len(b) || b[j] == '\n' || b[j] == '#' || b[j] == ';' || b[j] == '\r':
				e.noValue = true
				i = j
			case b[j] == '=':
				var ok bool
				e.value, i, ok = parseValue(b, j+1)
				if !ok {
					return nil, false
				}
			default:
				return nil, false
			}
			out = append(out, e)
		default:
			return nil, false
		}
	}
	return out, true
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// parseSection reads a section header after its '['.
func parseSection(b []byte, i int) (section, sub string, next int, ok bool) {
	j := i
	for j < len(b) && (isAlpha(b[j]) || b[j] >= '0' && b[j] <= '9' || b[j] == '-' || b[j] == '.') {
		j++
	}
	name := strings.ToLower(string(b[i:j]))
	if name == "" || j >= len(b) {
		return "", "", 0, false
	}
	if b[j] == ']' {
		// [section.sub]: the old form, sub lower case.
		if s, rest, found := strings.Cut(name, "."); found {
			return s, rest, j + 1, rest != ""
		}
		return name, "", j + 1, true
	}
	if b[j] != ' ' && b[j] != '\t' || strings.Contains(name, ".") {
		return "", "", 0, false
	}
	for j < len(b) && (b[j] == ' ' || b[j] == '\t') {
		j++
	}
	if j >= len(b) || b[j] != '"' {
		return "", "", 0, false
	}
	j++
	var s strings.Builder
	for ; j < len(b) && b[j] != '"'; j++ {
		switch b[j] {
		case '\n', 0:
			return "", "", 0, false
		case '\\':
			j++
			if j >= len(b) || b[j] == '\n' {
				return "", "", 0, false
			}
		}
		s.WriteByte(b[j])
	}
	if j+1 >= len(b) || b[j] != '"' || b[j+1] != ']' {
		return "", "", 0, false
	}
	return name, s.String(), j + 2, true
}

// parseValue reads a value after its '=' to the end of its line.
func parseValue(b []byte, i int) (string, int, bool) {
	var v strings.Builder
	quoted := false
	pending := 0 // unquoted spaces after some of the value, not yet known to be inside it
	for ; i < len(b); i++ {
		c := b[i]
		if c == '\n' {
			if quoted {
				return "", 0, false
			}
			break
		}
		if !quoted && (c == ';' || c == '#') {
			for i < len(b) && b[i] != '\n' {
				i++
			}
			break
		}
		if !quoted && (c == ' ' || c == '\t' || c == '\r') {
			if v.Len() > 0 {
				pending++
			}
			continue
		}
		for ; pending > 0; pending-- {
			v.WriteByte(' ')
		}
		switch c {
		case '"':
			quoted = !quoted
		case '\\':
			i++
			if i >= len(b) {
				return "", 0, false
			}
			switch b[i] {
			case '\n':
				continue // a continued line
			case '\r':
				if i+1 < len(b) && b[i+1] == '\n' {
					i++
					continue
				}
				return "", 0, false
			case 't':
				v.WriteByte('\t')
			case 'n':
				v.WriteByte('\n')
			case 'b':
				v.WriteByte('\b')
			case '\\', '"':
				v.WriteByte(b[i])
			default:
				return "", 0, false
			}
		default:
			v.WriteByte(c)
		}
	}
	if quoted {
		return "", 0, false
	}
	return v.String(), i, true
}

// AsksUnnamed reports whether the policy asks about access a to the
// absolute path p only because no rule names the place: the catch-all of
// its surface (`"*": "ask"`) or the built-in default decided. An effect
// lifts only such an ask. A rule that names the place — a guard with a
// reason (`~/.bashrc`, `**/.git/hooks/?**`), a person's own
// `"/srv/**": "ask"` — still asks, as a deny, a hard guard and a
// protected write still hold.
func (p *Policy) AsksUnnamed(a Access, path string) bool {
	r := p.DecidePath(a, path)
	if r.Action != Ask || r.HumanOnly || r.DependsOnContent {
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
