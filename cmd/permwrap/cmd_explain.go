package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/engine/shell"
	"github.com/permwrap/permwrap/forwarding"
	"github.com/permwrap/permwrap/supervisor"
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

With --node FILE (repeatable), the access is judged as a process of a
nested permwrap would be: one started inside this one with --policy FILE
(and otherwise this configuration); a second --node nests inside the
first. Every layer's explanation is shown, then the combined decision
(most restrictive wins) and the layer that gave it (docs/nesting.md).
NAME=FILE names the node (default: the file's base name).

Exit status: 0 allow, 1 deny, 2 ask, 125 bad configuration or usage.`

// exitAsk is explain's status for an ask.
const exitAsk = 2

// cmdExplain implements `permwrap explain SURFACE VALUE`.
func cmdExplain(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("explain", "permwrap explain [--policy FILE]... [--config-dir DIR] [--workspace DIR] [--profile P] [--yolo] [--audit] [--node [NAME=]FILE]... SURFACE VALUE", explainAbout, stderr)
	var pf policyFlags
	pf.register(fs, policyFlagSet{modes: true})
	var nodes scopeList
	fs.Var(&nodes, "node", "judge as a process of a nested permwrap started with --policy `FILE` (repeatable: each nests in the previous; NAME=FILE names it)")
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
	// explainIn explains the access with one policy; nil error.
	var explainIn func(p *engine.Policy) engine.DecisionExplanation
	switch surface {
	case engine.SurfaceBash:
		// Files the line sources are read, so their commands are shown.
		line := strings.Join(fs.Args()[1:], " ")
		explainIn = func(p *engine.Policy) engine.DecisionExplanation {
			return p.ExplainCommandIn(line, shell.ScriptContext{ReadFile: shell.FSReader(os.DirFS("/"))})
		}
	case engine.SurfaceNet:
		in, err := engine.ParseNetTarget(fs.Arg(1), fs.Args()[2:])
		if err != nil {
			fmt.Fprintln(stderr, "permwrap explain: net:", err)
			return exitInternal
		}
		// A destination on this machine is looked up as it is now: who
		// serves it decides whether `<outside…>` rules apply.
		var note string
		in.Service, note = supervisor.LookupService(in)
		if note != "" {
			fmt.Fprintln(stdout, "note:", note)
		}
		explainIn = func(p *engine.Policy) engine.DecisionExplanation { return p.ExplainNet(in) }
	default:
		path, err := absPath(fs.Arg(1), ld.env.Home)
		if err != nil {
			fmt.Fprintln(stderr, "permwrap explain:", err)
			return exitInternal
		}
		explainIn = func(p *engine.Policy) engine.DecisionExplanation {
			switch surface {
			case engine.SurfaceRead:
				return p.ExplainPath(engine.AccessRead, path)
			case engine.SurfaceWrite:
				return p.ExplainPath(engine.AccessWrite, path)
			case engine.SurfaceExec:
				return p.ExplainPath(engine.AccessExec, path)
			}
			return p.ExplainDecision(engine.Check{Surface: engine.SurfacePath, Value: path})
		}
	}
	var action engine.Action
	if len(nodes) == 0 {
		d := explainIn(ld.policy)
		fmt.Fprint(stdout, d)
		action = d.Result.Action
	} else {
		layers, err := nestedLayers(ld.policy, nodes)
		if err != nil {
			printErr(stderr, "permwrap explain: ", err)
			return exitInternal
		}
		action = explainNested(stdout, layers, explainIn)
	}
	switch action {
	case engine.Allow:
		return exitOK
	case engine.Ask:
		return exitAsk
	}
	return exitFailure
}

// nestedLayers builds the chain of a nested set-up offline: this
// configuration at the root, and for each --node FILE a node started
// with --policy FILE on top of the same configuration, each inside the
// previous. The root's --yolo and --audit are its own.
func nestedLayers(root *engine.Policy, nodes []string) ([]forwarding.Layer, error) {
	base := root.Config()
	names := []string{"root"}
	cfgs := []engine.Config{base}
	for _, spec := range nodes {
		name, file := "", spec
		if i := strings.IndexByte(spec, '='); i > 0 && forwarding.ValidName(spec[:i]) {
			name, file = spec[:i], spec[i+1:]
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--node %s: %w", spec, err)
		}
		if name == "" {
			name = forwarding.SanitizeName(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)))
		}
		c := base
		c.Scopes = append(append([]engine.File(nil), base.Scopes...), engine.File{Name: file, Data: data})
		c.ScopesRequired, c.Yolo, c.Audit = true, false, false
		names = append(names, name)
		cfgs = append(cfgs, c)
	}
	layers, _, err := forwarding.OfflineChain(names, cfgs)
	return layers, err
}

// explainNested shows every layer's explanation and the combined answer.
func explainNested(w io.Writer, layers []forwarding.Layer, explainIn func(*engine.Policy) engine.DecisionExplanation) engine.Action {
	var each []engine.DecisionExplanation // in layer order, as Judge asks
	d, v := forwarding.Judge(layers, func(p *engine.Policy) engine.DecisionExplanation {
		d := explainIn(p)
		each = append(each, d)
		return d
	}, func(d engine.DecisionExplanation) engine.Result { return d.Result })
	for i, l := range v.Layers {
		what := "this configuration"
		if i > 0 {
			scopes := layers[i].Policy.Config().Scopes
			what = "nested in " + layers[i-1].Node.Label() + ", --policy " + scopes[len(scopes)-1].Name
		}
		fmt.Fprintf(w, "== layer %s (%s)\n", l.Node.Label(), what)
		for _, line := range strings.Split(strings.TrimRight(each[i].String(), "\n"), "\n") {
			fmt.Fprintf(w, "   %s\n", line)
		}
	}
	fmt.Fprintf(w, "== combined (most restrictive of %d layers wins)\n", len(layers))
	for _, l := range v.Layers {
		mark := " "
		if l.Node == v.Decider {
			mark = "*"
		}
		fmt.Fprintf(w, " %s %-12s %s\n", mark, l.Node.Label()+":", l.Result.Action)
	}
	fmt.Fprintf(w, "decision: %s, by layer %s\n", d.Result.Action, v.Decider.Label())
	return d.Result.Action
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
