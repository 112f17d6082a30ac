package engine

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// ExpandPathPattern turns a path pattern as written into the absolute
// pattern it is matched as:
//
//   - a leading ~ or ~/ is the home directory; ~user is an error (write
//     the absolute path);
//   - ${HOME}, ${WORKSPACE}, ${TMPDIR} expand anywhere, their values
//     escaped so a directory named "a[1]" is literal;
//   - a trailing "/" means the directory and everything beneath it
//     ("X/**"), and "NAME/" with no other "/" a directory of that name at
//     any depth in the workspace ("${WORKSPACE}/**/NAME/**"), as in
//     .gitignore;
//   - a pattern with a "/" that starts with neither "/", "~", "${" nor
//     "**" is relative to the workspace (leading "./" and "../" are
//     resolved against it), as Claude Code and sandbox-runtime read it.
//
// A pattern with no "/" at all stays a basename pattern (`.env`,
// `*.pem`), matched against the last component anywhere.
func ExpandPathPattern(pat string, env Env) (string, error) {
	if strings.HasPrefix(pat, "~") && pat != "~" && !strings.HasPrefix(pat, "~/") {
		user, _, _ := strings.Cut(pat[1:], "/")
		return "", fmt.Errorf("~%s: only ~ (your home directory) is expanded; write the absolute path (for example /home/%s or /root)", user, user)
	}
	if len(pat) > 1 && strings.HasSuffix(pat, "/") && !strings.HasSuffix(pat, `\/`) {
		dir := strings.TrimRight(pat, "/")
		switch {
		case dir == "":
			pat = "/"
		case !strings.Contains(dir, "/") && dir != "." && dir != ".." && dir != "~":
			// gitignore: a directory of that name at any depth beneath
			// the root, here the workspace.
			pat = "./**/" + dir + "/**"
		default:
			pat = dir + "/**"
		}
	}
	if pat == "." || pat == "./" {
		pat = "${WORKSPACE}"
	} else if relativePattern(pat) {
		if env.Workspace == "" {
			return "", errors.New("a relative pattern needs the workspace, which is not known here")
		}
		base, rest := env.Workspace, pat
		for {
			switch {
			case strings.HasPrefix(rest, "./"):
				rest = rest[2:]
				continue
			case strings.HasPrefix(rest, "../"):
				base = path.Dir(base)
				rest = rest[3:]
				continue
			case rest == "..":
				base, rest = path.Dir(base), ""
			}
			break
		}
		pat = QuoteGlob(strings.TrimSuffix(base, "/"))
		if rest != "" {
			if strings.Contains(rest, "${") {
				var err error
				if rest, err = expandVars(rest, env, QuoteGlob); err != nil {
					return "", err
				}
			}
			pat += "/" + rest
		}
		if pat == "" {
			pat = "/"
		}
		return pat, nil
	}
	return expandVars(pat, env, QuoteGlob)
}

// relativePattern reports whether a path pattern names a place relative
// to the workspace.
func relativePattern(p string) bool {
	if !strings.Contains(p, "/") {
		return false // a basename pattern: anywhere
	}
	for _, abs := range []string{"/", "~", "${", "**"} {
		if strings.HasPrefix(p, abs) {
			return false
		}
	}
	return true
}

// unmatchable says why no path permwrap checks can ever match the
// expanded pattern, or "": checked paths are absolute and cleaned, so
// they never hold an empty, "." or ".." component nor end in "/".
func unmatchable(exp string) string {
	if !strings.Contains(exp, "/") {
		return "" // basename patterns match a component
	}
	comps := strings.Split(exp, "/")
	for i, c := range comps {
		switch {
		case c == "" && i > 0 && i < len(comps)-1:
			return "it holds \"//\", and checked paths are cleaned (write one \"/\")"
		case c == ".":
			return "it holds a \".\" component, and checked paths are cleaned"
		case c == "..":
			return "it holds a \"..\" component, and checked paths are cleaned (write the path it leads to)"
		}
	}
	return ""
}

// expandPattern expands a leading ~ and ${HOME}, ${WORKSPACE}, ${TMPDIR}
// anywhere into a path (typoPaths "to", log.path): values are inserted
// as they are. Any other ${…} is an error: a typo must not silently
// become a path that means nothing.
func expandPattern(p string, env Env) (string, error) {
	return expandVars(p, env, func(s string) string { return s })
}

// expandVars expands ~ and ${VAR}, passing each value through quote.
func expandVars(p string, env Env, quote func(string) string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if env.Home == "" {
			return "", errors.New("~ used but the home directory is unknown")
		}
		p = quote(strings.TrimSuffix(env.Home, "/")) + p[1:]
	}
	if !strings.Contains(p, "${") {
		return p, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(p, "${")
		if i < 0 {
			b.WriteString(p)
			break
		}
		b.WriteString(p[:i])
		j := strings.IndexByte(p[i:], '}')
		if j < 0 {
			return "", errors.New("unterminated ${")
		}
		name := p[i+2 : i+j]
		var val string
		switch name {
		case "HOME":
			val = env.Home
		case "WORKSPACE":
			val = env.Workspace
		case "TMPDIR":
			val = env.TmpDir
		default:
			return "", fmt.Errorf("unknown variable ${%s} (want ${HOME}, ${WORKSPACE} or ${TMPDIR})", name)
		}
		if val == "" {
			return "", fmt.Errorf("${%s} is not known in this environment", name)
		}
		b.WriteString(quote(strings.TrimSuffix(val, "/")))
		p = p[i+j+1:]
	}
	return b.String(), nil
}
