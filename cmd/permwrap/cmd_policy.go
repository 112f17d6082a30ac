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
	target := filepath.Join(dir, engine.PolicyFileName)
	orig, err := os.ReadFile(target)
	mode := fs.FileMode(0o600)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		orig = nil
	case err != nil:
		printErr(stderr, "permwrap policy edit: ", err)
		return exitInternal
	default:
		if st, err := os.Stat(target); err == nil {
			mode = st.Mode().Perm()
		}
	}
	content := orig
	if content == nil {
		content = []byte(newPolicy)
	}
	tmp, err := os.CreateTemp("", "permwrap-policy-*.jsonc")
	if err != nil {
		printErr(stderr, "permwrap policy edit: ", err)
		return exitInternal
	}
	tmpName := tmp.Name()
	_, werr := tmp.Write(content)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		printErr(stderr, "permwrap policy edit: ", werr)
		os.Remove(tmpName)
		return exitInternal
	}
	env, _ := engine.NewEnv("")
	interactive := isTerminal(stderr) && isTerminalReader(stdin)
	in := bufio.NewReader(stdin)
	for {
		if err := runEditor(tmpName, stdin, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "permwrap policy edit: the editor failed: %v; your copy is %s\n", err, tmpName)
			return exitFailure
		}
		edited, err := os.ReadFile(tmpName)
		if err != nil {
			printErr(stderr, "permwrap policy edit: ", err)
			return exitInternal
		}
		if bytes.Equal(edited, orig) || orig == nil && bytes.Equal(edited, []byte(newPolicy)) {
			os.Remove(tmpName)
			fmt.Fprintln(stderr, "permwrap policy edit: no change")
			return exitOK
		}
		_, warns, err := engine.CheckFile(target, edited, engine.FileGlobal, env)
		if err == nil {
			printWarnings(stderr, "warning: ", warns)
			if err := engine.WriteFileAtomic(target, edited, mode); err != nil {
				fmt.Fprintf(stderr, "permwrap policy edit: %v; your copy is %s\n", err, tmpName)
				return exitFailure
			}
			os.Remove(tmpName)
			fmt.Fprintf(stdout, "%s: saved\n", target)
			return exitOK
		}
		fmt.Fprintln(stderr, strings.ReplaceAll(err.Error(), target, tmpName))
		if !interactive {
			fmt.Fprintf(stderr, "permwrap policy edit: %s is invalid and was not changed; your copy is %s\n", target, tmpName)
			return exitFailure
		}
		fmt.Fprint(stderr, "edit again? [Y/n] ")
		ans, _ := in.ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(ans)); a == "n" || a == "no" {
			fmt.Fprintf(stderr, "permwrap policy edit: %s was not changed; your copy is %s\n", target, tmpName)
			return exitFailure
		}
	}
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
