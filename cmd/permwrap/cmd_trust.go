package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/permwrap/permwrap/engine"
)

const trustAbout = `Trust the project policies that apply in DIR (default: the current
directory): every .permwrap/policy.jsonc from DIR up to the repository
root. An untrusted project policy only tightens: its rules can deny or
ask, never allow. A trusted one is merged like a --policy scope and may
loosen too.

Trust is recorded in the configuration directory (trusted-projects.json),
by path and by the SHA-256 of the content: a changed file is untrusted
again until you trust it again. Nothing running under permwrap can write
that record or a project policy.

  --list     show every trusted project policy and whether it changed
  --revoke   forget the trust of the project policies in DIR`

// cmdTrust implements `permwrap trust [DIR]`.
func cmdTrust(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("trust", "permwrap trust [--config-dir DIR] [--list] [--revoke] [DIR]", trustAbout, stderr)
	var configDir onceString
	var list, revoke onceBool
	fs.Var(&configDir, "config-dir", "configuration `DIR`")
	fs.Var(&list, "list", "list the trusted project policies")
	fs.Var(&revoke, "revoke", "forget the trust of the project policies in DIR")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 1 || list.v && (fs.NArg() > 0 || revoke.v) {
		fmt.Fprintln(stderr, "permwrap trust: at most one DIR; --list takes none")
		return exitInternal
	}
	cfgDir, err := engine.ConfigDir(configDir.v)
	if err != nil {
		printErr(stderr, "permwrap trust: ", err)
		return exitInternal
	}
	store, err := engine.ReadTrust(cfgDir)
	if err != nil {
		printErr(stderr, "permwrap trust: ", err)
		return exitInternal
	}
	if list.v {
		if len(store.Projects) == 0 {
			fmt.Fprintln(stdout, "no trusted project policies")
		}
		for _, r := range store.Projects {
			status := "trusted"
			if data, err := os.ReadFile(r.Policy); err != nil {
				status = "missing"
			} else if ok, why := store.Check(r.Policy, data); !ok {
				status = why
			}
			fmt.Fprintf(stdout, "%s  %s  %s\n", r.TrustedAt.Local().Format("2006-01-02"), r.Policy, status)
		}
		return exitOK
	}
	if !revoke.v {
		// The managed policy may forbid trusting projects (docs/teams.md).
		why, err := engine.ManagedTrustForbidden("")
		if err != nil {
			printErr(stderr, "permwrap trust: ", err)
			return exitInternal
		}
		if why != "" {
			fmt.Fprintf(stderr, "permwrap trust: refused: %s; project policies are applied tighten-only and nothing was trusted\n", why)
			return exitInternal
		}
	}
	env, err := engine.NewEnv(fs.Arg(0))
	if err != nil {
		printErr(stderr, "permwrap trust: ", err)
		return exitInternal
	}
	var files []string
	for _, d := range engine.ProjectChain(env.Workspace) {
		name := filepath.Join(d, engine.ProjectDirName, engine.ProjectPolicyFileName)
		if _, err := os.Stat(name); err == nil {
			files = append(files, name)
		}
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "permwrap trust: no project policy (%s/%s) from %s up to the repository root\n", engine.ProjectDirName, engine.ProjectPolicyFileName, env.Workspace)
		return exitFailure
	}
	now := time.Now()
	for _, name := range files {
		if revoke.v {
			if store.Untrust(name) {
				fmt.Fprintf(stdout, "%s: no longer trusted\n", name)
			} else {
				fmt.Fprintf(stdout, "%s: was not trusted\n", name)
			}
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			printErr(stderr, "permwrap trust: ", err)
			return exitFailure
		}
		n, warns, err := engine.CheckFile(name, data, engine.FileProject, env)
		printWarnings(stderr, "warning: ", warns)
		if err != nil {
			fmt.Fprintln(stderr, err)
			fmt.Fprintf(stderr, "permwrap trust: %s is invalid; nothing was trusted\n", name)
			return exitFailure
		}
		if ok, _ := store.Check(name, data); ok {
			fmt.Fprintf(stdout, "%s: already trusted (%d rules)\n", name, n)
			continue
		}
		store.Trust(name, data, now)
		fmt.Fprintf(stdout, "%s: trusted (%d rules, sha256 %.12s); its allow rules now apply\n", name, n, engine.ContentHash(data))
	}
	if err := engine.WriteTrust(cfgDir, store); err != nil {
		printErr(stderr, "permwrap trust: ", err)
		return exitFailure
	}
	return exitOK
}
