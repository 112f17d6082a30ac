package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/permwrap/permwrap/engine"
)

const explainAbout = `Show how the effective policy decides one access: the decision, the
deciding rule with its origin and position, the runner-up rules it beat,
and for a path every surface consulted (write → write and path).

SURFACE is read, write, exec, path, bash or net. For path surfaces VALUE
may start with ~ and may be relative to the current directory; it is made
absolute and cleaned, and its symlinks are resolved as far as it exists
(the path a run would check). For bash, several VALUE words are joined with
spaces (quote the command line to keep it intact). For net, VALUE is a
destination (github.com:443, 140.82.112.3:443, [::1]:22, unix:/run/x.sock,
udp:10.0.0.2:53); further words are the names permwrap resolved to an
address, or the address a name resolved to (see docs/network.md).

Exit status: 0 allow, 1 deny, 2 ask, 125 bad configuration or usage.`

// exitAsk is explain's status for an ask.
const exitAsk = 2

// cmdExplain implements `permwrap explain SURFACE VALUE`.
func cmdExplain(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("explain", "permwrap explain [--policy FILE]... [--config-dir DIR] [--workspace DIR] [--profile P] [--yolo] [--audit] SURFACE VALUE", explainAbout, stderr)
	var pf policyFlags
	pf.register(fs, policyFlagSet{modes: true})
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() < 2 {
		fmt.Fprintln(stderr, "permwrap explain: need SURFACE and VALUE")
		fs.Usage()
		return exitInternal
	}
	surface, ok := engine.ParseSurface(fs.Arg(0))
	if !ok {
		fmt.Fprintf(stderr, "permwrap explain: unknown surface %q (want read, write, exec, path, bash or net)\n", fs.Arg(0))
		return exitInternal
	}
	if surface.IsPath() && fs.NArg() != 2 {
		fmt.Fprintf(stderr, "permwrap explain: %s takes one path\n", surface)
		return exitInternal
	}
	ld, err := loadPolicy(&pf, "")
	printWarnings(stderr, "permwrap: warning: ", ld.warnings)
	if err != nil {
		printErr(stderr, "permwrap: ", err)
		return exitInternal
	}
	p := ld.policy
	var d engine.DecisionExplanation
	switch surface {
	case engine.SurfaceBash:
		// Files the line sources are read, so their commands are shown.
		d = p.ExplainCommandIn(strings.Join(fs.Args()[1:], " "), engine.ScriptContext{ReadFile: engine.FSReader(os.DirFS("/"))})
	case engine.SurfaceNet:
		in, err := engine.ParseNetTarget(fs.Arg(1), fs.Args()[2:])
		if err != nil {
			fmt.Fprintln(stderr, "permwrap explain: net:", err)
			return exitInternal
		}
		d = p.ExplainNet(in)
	default:
		path, err := absPath(fs.Arg(1), ld.env.Home)
		if err != nil {
			fmt.Fprintln(stderr, "permwrap explain:", err)
			return exitInternal
		}
		switch surface {
		case engine.SurfaceRead:
			d = p.ExplainPath(engine.AccessRead, path)
		case engine.SurfaceWrite:
			d = p.ExplainPath(engine.AccessWrite, path)
		case engine.SurfaceExec:
			d = p.ExplainPath(engine.AccessExec, path)
		default:
			d = p.ExplainDecision(engine.Check{Surface: engine.SurfacePath, Value: path})
		}
	}
	fmt.Fprint(stdout, d)
	switch d.Result.Action {
	case engine.Allow:
		return exitOK
	case engine.Ask:
		return exitAsk
	}
	return exitFailure
}

// absPath expands a leading ~ and makes p absolute, clean and
// symlink-resolved (as far as it exists): the form the supervisor hands
// the engine, so explain answers what a run would.
func absPath(p, home string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home == "" {
			return "", fmt.Errorf("%s: the home directory is unknown", p)
		}
		p = home + p[1:]
	}
	if !filepath.IsAbs(p) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		p = filepath.Join(wd, p)
	}
	return engine.ResolveExisting(p), nil
}
