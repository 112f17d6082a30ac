package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/permwrap/permwrap/engine"
)

const policyAbout = `Subcommands:
  show PROFILE   print an embedded profile (default, read-only, strict)
                 byte for byte; without PROFILE, list the profiles
  default        the same as 'show default'
  edit           open policy.jsonc in $VISUAL or $EDITOR (creating it
                 if needed) and save it only when it is valid
  suggest [LOG]  read a review log (default: the one permwrap writes)
                 and print the narrowest rules that would have allowed
                 what was asked about, denied, or approved there, as a
                 JSONC fragment to review; run with --audit first to
                 collect a session without interruptions

policy.jsonc extends the default profile unless it says
"extends": "none" or names another profile; see docs/policy.md.`

// cmdPolicy implements `permwrap policy SUBCOMMAND`.
func cmdPolicy(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "edit":
			return cmdPolicyEdit(args[1:], stdin, stdout, stderr)
		case "suggest":
			return cmdPolicySuggest(args[1:], stdout, stderr)
		case "show", "default", "list":
			return cmdPolicyShow(args, stdout, stderr)
		}
	}
	fs := newFlagSet("policy", "permwrap policy show|default|edit|suggest", policyAbout, stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "permwrap policy: missing subcommand")
	} else {
		fmt.Fprintf(stderr, "permwrap policy: unknown subcommand %q\n", fs.Arg(0))
	}
	fs.Usage()
	return exitInternal
}

func cmdPolicyShow(args []string, stdout, stderr io.Writer) int {
	name := ""
	switch {
	case args[0] == "default" && len(args) == 1:
		name = engine.DefaultProfile
	case args[0] == "show" && len(args) == 2:
		name = args[1]
	case len(args) == 1:
		for _, n := range engine.ProfileNames() {
			f, _ := engine.Profile(n)
			fmt.Fprintf(stdout, "%-10s %s\n", n, profileSummary(f.Data))
		}
		return exitOK
	default:
		fmt.Fprintf(stderr, "permwrap policy %s: too many arguments\n", args[0])
		return exitInternal
	}
	f, ok := engine.Profile(name)
	if !ok {
		fmt.Fprintf(stderr, "permwrap policy show: no profile %q (want %s)\n", name, strings.Join(engine.ProfileNames(), ", "))
		return exitInternal
	}
	if _, err := stdout.Write(f.Data); err != nil {
		fmt.Fprintln(stderr, "permwrap policy:", err)
		return exitInternal
	}
	return exitOK
}

// profileSummary is the first sentence of a profile's opening comment
// after its title line.
func profileSummary(data []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(l, "//") {
			break
		}
		lines = append(lines, strings.TrimSpace(strings.TrimPrefix(l, "//")))
	}
	if len(lines) > 0 {
		if _, title, ok := strings.Cut(lines[0], ": "); ok {
			return title
		}
		return lines[0]
	}
	return ""
}

const newPolicy = `// Your permwrap policy. It extends the default profile: every rule of
// 'permwrap policy show default' applies, a rule here with the same
// pattern replaces the default's, and the most specific rule wins across
// both. Write "extends": "none" to start from nothing, or name another
// profile (read-only, strict). See docs/policy.md.
{
  "permission": {
  }
}
`

const editAbout = `Open policy.jsonc (in the configuration directory) in $VISUAL, else
$EDITOR, else vi. The edit happens on a copy; the copy replaces
policy.jsonc only when it is valid. When it is not, the errors are shown
and, on a terminal, you can edit again; otherwise the copy is kept and
named, and policy.jsonc is left as it was.`

// cmdPolicyEdit implements `permwrap policy edit`.
func cmdPolicyEdit(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	set := newFlagSet("policy edit", "permwrap policy edit [--config-dir DIR]", editAbout, stderr)
	var configDir onceString
	set.Var(&configDir, "config-dir", "configuration `DIR`")
	if code, ok := parseFlags(set, args); !ok {
		return code
	}
	if set.NArg() > 0 {
		fmt.Fprintln(stderr, "permwrap policy edit: takes no arguments")
		return exitInternal
	}
	dir, err := engine.ConfigDir(configDir.v)
	if err != nil {
		printErr(stderr, "permwrap policy edit: ", err)
		return exitInternal
	}
	e := &policyEdit{target: filepath.Join(dir, engine.PolicyFileName)}
	if err := e.readTarget(); err != nil {
		printErr(stderr, "permwrap policy edit: ", err)
		return exitInternal
	}
	if err := e.writeCopy(); err != nil {
		printErr(stderr, "permwrap policy edit: ", err)
		return exitInternal
	}
	e.env, _ = engine.NewEnv("")
	return e.editUntilValid(stdin, stdout, stderr)
}

// policyEdit is one `permwrap policy edit`: policy.jsonc (target), what
// it held (orig, nil when there was none) and its mode, and the copy
// (tmpName) the person edits.
type policyEdit struct {
	target, tmpName string
	orig            []byte
	mode            fs.FileMode
	env             engine.Env
}

// readTarget reads policy.jsonc and its mode; a missing file is no
// error (orig stays nil, the mode 0600).
func (e *policyEdit) readTarget() error {
	orig, err := os.ReadFile(e.target)
	e.mode = fs.FileMode(0o600)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	e.orig = orig
	if st, err := os.Stat(e.target); err == nil {
		e.mode = st.Mode().Perm()
	}
	return nil
}

// writeCopy writes the copy to edit: policy.jsonc as it is, or the new
// policy's template.
func (e *policyEdit) writeCopy() error {
	content := e.orig
	if content == nil {
		content = []byte(newPolicy)
	}
	tmp, err := os.CreateTemp("", "permwrap-policy-*.jsonc")
	if err != nil {
		return err
	}
	e.tmpName = tmp.Name()
	_, werr := tmp.Write(content)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(e.tmpName)
		return werr
	}
	return nil
}

// editUntilValid runs the editor on the copy until the copy is unchanged
// or valid (and saved), or, when it is not, the person stops or cannot
// be asked.
func (e *policyEdit) editUntilValid(stdin io.Reader, stdout, stderr io.Writer) int {
	interactive := isTerminal(stderr) && isTerminalReader(stdin)
	in := bufio.NewReader(stdin)
	for {
		if code, done := e.editOnce(stdin, stdout, stderr); done {
			return code
		}
		if !interactive {
			fmt.Fprintf(stderr, "permwrap policy edit: %s is invalid and was not changed; your copy is %s\n", e.target, e.tmpName)
			return exitFailure
		}
		fmt.Fprint(stderr, "edit again? [Y/n] ")
		ans, _ := in.ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(ans)); a == "n" || a == "no" {
			fmt.Fprintf(stderr, "permwrap policy edit: %s was not changed; your copy is %s\n", e.target, e.tmpName)
			return exitFailure
		}
	}
}

// editOnce runs the editor once and saves the copy if it changed and is
// valid. It returns done with the exit code, or, when the copy is
// invalid, its errors printed and not done.
func (e *policyEdit) editOnce(stdin io.Reader, stdout, stderr io.Writer) (int, bool) {
	if err := runEditor(e.tmpName, stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "permwrap policy edit: the editor failed: %v; your copy is %s\n", err, e.tmpName)
		return exitFailure, true
	}
	edited, err := os.ReadFile(e.tmpName)
	if err != nil {
		printErr(stderr, "permwrap policy edit: ", err)
		return exitInternal, true
	}
	if bytes.Equal(edited, e.orig) || e.orig == nil && bytes.Equal(edited, []byte(newPolicy)) {
		os.Remove(e.tmpName)
		fmt.Fprintln(stderr, "permwrap policy edit: no change")
		return exitOK, true
	}
	_, warns, err := engine.CheckFile(e.target, edited, engine.FileGlobal, e.env)
	if err != nil {
		fmt.Fprintln(stderr, strings.ReplaceAll(err.Error(), e.target, e.tmpName))
		return 0, false
	}
	printWarnings(stderr, "warning: ", warns)
	if err := engine.WriteFileAtomic(e.target, edited, e.mode); err != nil {
		fmt.Fprintf(stderr, "permwrap policy edit: %v; your copy is %s\n", err, e.tmpName)
		return exitFailure, true
	}
	os.Remove(e.tmpName)
	fmt.Fprintf(stdout, "%s: saved\n", e.target)
	return exitOK, true
}

// runEditor runs the person's editor on name: $VISUAL, $EDITOR (either
// may hold arguments, as in "code --wait") or vi.
func runEditor(name string, stdin io.Reader, stdout, stderr io.Writer) error {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	cmd := exec.Command("/bin/sh", "-c", editor+` "$1"`, "permwrap-editor", name)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	return cmd.Run()
}

func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTerminal(f)
}
