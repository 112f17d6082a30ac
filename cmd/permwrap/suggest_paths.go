package main

import (
	"path"
	"strings"

	"github.com/permwrap/permwrap/engine"
)

// How `policy suggest` turns the paths a run touched into rules a person
// would accept as they are: temporary and numbered names become
// patterns, a directory the run filled becomes DIR/**, and nothing is
// ever suggested for a directory broader than the workspace or a tool's
// own directory (/, /home, ~, ~/.cache, an ancestor of the workspace).

// tooBroad reports whether a rule for dir itself, or for everything
// beneath it, would be broader than the workspace or a tool's own
// directory: the root and every top-level directory, the home directory
// and its ancestors, the strict ancestors of the workspace, the temporary
// directories, the places many tools share (~/.cache, ~/.config,
// ~/.local/…, /usr/local/lib, …) and those that hold secrets.
func tooBroad(dir string, env engine.Env) bool {
	dir = path.Clean(dir)
	if dir == "/" || strings.Count(dir, "/") == 1 {
		return true
	}
	within := func(a, b string) bool { return b != "" && (a == b || strings.HasPrefix(b, a+"/")) }
	if within(dir, env.Home) || within(dir, env.TmpDir) {
		return true // home, the temporary directory, or an ancestor
	}
	if dir != env.Workspace && within(dir, env.Workspace) {
		return true // a strict ancestor of the workspace
	}
	if env.Home != "" {
		if rest, ok := strings.CutPrefix(dir, env.Home+"/"); ok {
			return sharedHomeDirs[rest]
		}
	}
	return sharedSystemDirs[dir]
}

// sharedHomeDirs are directories under home that many tools share, or
// that hold secrets: a rule goes one level further down (~/.cache/go-build/**).
var sharedHomeDirs = map[string]bool{
	".cache": true, ".config": true, ".local": true, ".local/share": true, ".local/state": true,
	".local/bin": true, ".local/lib": true, ".ssh": true, ".gnupg": true, ".aws": true,
	".kube": true, ".docker": true, ".config/gcloud": true, "bin": true,
}

// sharedSystemDirs are system directories that many packages share.
var sharedSystemDirs = map[string]bool{
	"/usr/local": true, "/usr/local/lib": true, "/usr/local/share": true, "/usr/local/bin": true,
	"/usr/local/include": true, "/usr/lib": true, "/usr/share": true, "/usr/include": true,
	"/usr/lib/x86_64-linux-gnu": true, "/usr/lib/aarch64-linux-gnu": true, "/usr/libexec": true,
	"/var/lib": true, "/var/cache": true, "/var/log": true, "/var/tmp": true, "/var/run": true,
	"/run/user": true, "/opt/homebrew": true, "/usr/local/go": true,
}

// genName is a file name with its temporary or numbered parts written as
// `*`, glob-quoted otherwise: `tmp_objdir-incoming-bOovua` →
// `tmp_objdir-incoming-*`, `__init__.cpython-311.pyc.140233263125760` →
// `__init__.cpython-311.pyc.*`, `tmp_obj_FDFId8` → `tmp_obj_*`, a git
// object's 38 hex digits → `*`. It reports whether anything was replaced.
func genName(name string) (string, bool) {
	if isTempToken(name) {
		return "*", true
	}
	var b strings.Builder
	changed := false
	start := 0
	flush := func(end int) {
		tok := name[start:end]
		switch {
		case start > 0 && isTempToken(tok):
			b.WriteString("*")
			changed = true
		case numberedWord(tok) > 0:
			// go-build2837462 → go-build*
			b.WriteString(engine.QuoteGlob(tok[:numberedWord(tok)]) + "*")
			changed = true
		default:
			b.WriteString(engine.QuoteGlob(tok))
		}
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == '-' || c == '_' || c == '.' {
			flush(i)
			b.WriteByte(c)
			start = i + 1
		}
	}
	flush(len(name))
	if !changed {
		return engine.QuoteGlob(name), false
	}
	// Two stars side by side (a-1234-5678) are one.
	out := b.String()
	for strings.Contains(out, "*-*") || strings.Contains(out, "*.*") || strings.Contains(out, "*_*") {
		out = strings.NewReplacer("*-*", "*", "*.*", "*", "*_*", "*").Replace(out)
	}
	return out, true
}

// numberedWord is the length of the letters of a word followed by a
// number of 5 digits or more (build2837462, tmp12345), else 0.
func numberedWord(s string) int {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if len(s)-i < 5 || i == 0 {
		return 0
	}
	for j := 0; j < i; j++ {
		if c := s[j]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return 0
		}
	}
	return i
}

// isTempToken reports whether a part of a name looks made up by a
// program rather than chosen by a person: a number of 4 digits or more (a
// pid, a time), a run of 8 hex digits or more with a digit (a hash), or 6
// letters and digits or more that mix classes the way mkstemp does
// (bOovua, Vz4QsL, FDFId8).
func isTempToken(s string) bool {
	if len(s) == 0 {
		return false
	}
	digits, hex, lower, upper := 0, 0, 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
			hex++
		case c >= 'a' && c <= 'f':
			hex++
			lower++
		case c >= 'g' && c <= 'z':
			lower++
		case c >= 'A' && c <= 'Z':
			upper++
		default:
			return false
		}
	}
	n := len(s)
	switch {
	case digits == n:
		return n >= 4
	case hex == n && n >= 8 && digits > 0:
		return true
	case n < 6:
		return false
	}
	classes := 0
	for _, k := range []int{digits, lower, upper} {
		if k > 0 {
			classes++
		}
	}
	return classes >= 2 && classTransitions(s) >= 2 && !wordLike(s)
}

// classTransitions counts the places where a name changes between lower
// case, upper case and digits after its first character.
func classTransitions(s string) int {
	class := func(c byte) int {
		switch {
		case c >= '0' && c <= '9':
			return 0
		case c >= 'a' && c <= 'z':
			return 1
		}
		return 2
	}
	n := 0
	for i := 2; i < len(s); i++ {
		if class(s[i]) != class(s[i-1]) {
			n++
		}
	}
	if len(s) > 1 && class(s[1]) != class(s[0]) && !(class(s[0]) == 2 && class(s[1]) == 1) {
		n++ // a capital first letter is a word's, not a change
	}
	return n
}

// wordLike reports a CamelCase or numbered name a person writes
// (MyFile, README2, Python311): capitals only at the start of lower-case
// runs, digits only at the end.
func wordLike(s string) bool {
	digitsFrom := len(s)
	for digitsFrom > 0 && s[digitsFrom-1] >= '0' && s[digitsFrom-1] <= '9' {
		digitsFrom--
	}
	body := s[:digitsFrom]
	// Each hump of a CamelCase name is a word of two letters or more
	// (myFile, MyFile), not one (bOovua).
	hump := 0
	for i := 0; i < len(body); i++ {
		if c := body[i]; c >= 'A' && c <= 'Z' && i > 0 {
			if hump < 2 {
				return false
			}
			hump = 0
		}
		hump++
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c >= '0' && c <= '9' {
			return false
		}
		if c >= 'A' && c <= 'Z' && i+1 < len(body) && body[i+1] >= 'A' && body[i+1] <= 'Z' {
			return false // two capitals together: not CamelCase
		}
		if c >= 'A' && c <= 'Z' && (i+1 == len(body)) && i > 0 {
			return false // a capital at the end
		}
	}
	return true
}

// genPath is a path with each name generalised (genName); a git object's
// two-hex-digit directory under objects/ (or an incoming directory in
// it) is one of 256 and becomes `*`.
func genPath(p string) string {
	parts := strings.Split(p, "/")
	for i, part := range parts {
		if part == "" {
			continue
		}
		if len(part) == 2 && isHex(part) && underObjects(parts[:i]) {
			parts[i] = "*"
			continue
		}
		parts[i], _ = genName(part)
	}
	return strings.Join(parts, "/")
}

// underObjects reports whether a git objects/ directory holds the path
// these names lead to (objects/, or an incoming directory in it).
func underObjects(dirs []string) bool {
	for i := len(dirs) - 1; i >= 0 && i >= len(dirs)-2; i-- {
		if dirs[i] == "objects" {
			return true
		}
	}
	return false
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
