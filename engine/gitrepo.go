package engine

import (
	"bytes"
	"errors"
	"io/fs"
	"path"
	"strings"

	"github.com/permwrap/permwrap/engine/shell"
)

// What finding an effect reads of git (effects.go): a repository found as
// git finds it, and the part of its configuration that says where a push
// goes, read through the policy-guarded reader and parsed as git parses
// it. Anything it cannot read exactly is "not known", never a guess.

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
