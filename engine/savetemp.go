package engine

import (
	"strings"

	"github.com/permwrap/permwrap/engine/shell"
)

// SaveTarget recognises the name of a temporary file a program saves a
// file through — written in full, then renamed over the file it replaces
// (Claude Code's Write and Edit, npm's write-file-atomic, Gemini CLI's
// state) — and returns the name of that file, in the same directory. ok
// is false for any other name.
//
// The name is F, a dot, and a suffix whose dot-separated parts are each
// "tmp" (or "temp"), a number, or a hex id of six or more (dashes
// allowed: a uuid), with at least one "tmp" or six hex digits in all:
//
//	w.txt.tmp.31016.43ba22cd161f                     Claude Code
//	projects.json.3fc56420-1378-4d4f-a9c3-0cdb0d29acc5.tmp   Gemini CLI
//	package.json.2310989474                          write-file-atomic
//	settings.json.tmp
//
// F is the shortest such start with a name of its own (not "", "." or
// ".."): a.b.tmp saves a.b. A backup (F~, F.bak) is not a temporary
// file.
func SaveTarget(name string) (string, bool) {
	for i := 1; i < len(name); i++ {
		if name[i] != '.' {
			continue
		}
		f := name[:i]
		if f == "." || f == ".." || strings.Trim(f, ".") == "" {
			continue
		}
		if tmpSuffix(name[i+1:]) {
			return f, true
		}
	}
	return "", false
}

// tmpSuffix reports whether s marks a temporary file (see SaveTarget).
func tmpSuffix(s string) bool {
	if s == "" {
		return false
	}
	word, hex := false, 0
	for _, part := range strings.Split(s, ".") {
		switch {
		case strings.EqualFold(part, "tmp") || strings.EqualFold(part, "temp"):
			word = true
		case shell.IsDigits(part):
			hex += len(part)
		case hexID(part):
			hex += len(part)
		default:
			return false
		}
	}
	return word || hex >= 6
}

// hexID is six or more hex digits, dashes between them allowed.
func hexID(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
			n++
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return n >= 6
}
