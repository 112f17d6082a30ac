package main

// A permwrap started inside another one (docs/nesting.md): the command
// line's side. Nesting itself — the inner permwrap's keeper and exec
// stages, the wire, and the root's side — is the forwarding package's
// (forwarding/stage.go); here are the flags, the --log, the messages and
// the dispatch to the helper stages.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/forwarding"
	"github.com/permwrap/permwrap/supervisor"
)

// nodeName is --name, or the command's base name made a valid name.
func nodeName(flag onceString, argv []string) (string, error) {
	if flag.set {
		if !forwarding.ValidName(flag.v) {
			return "", fmt.Errorf("--name %q: use 1 to %d letters, digits or ._+@:-", flag.v, forwarding.MaxNameBytes)
		}
		return flag.v, nil
	}
	return forwarding.SanitizeName(filepath.Base(argv[0])), nil
}

// nestedRun is a node of the permwrap above on its way: its name, its
// --log and its keeper, started while the inner permwrap loads its
// policy (forwarding.StartKeeper). The keeper waits for the node's
// registration, which run sends once the policy is loaded.
type nestedRun struct {
	name    string
	logFile *os.File
	keeper  *forwarding.Keeper
}

// startNested checks the node's name, opens its --log and starts its
// keeper. The error is said as it is.
func startNested(f *runFlags, argv []string, stdin io.Reader) (*nestedRun, error) {
	name, err := nodeName(f.name, argv)
	if err != nil {
		return nil, err
	}
	n := &nestedRun{name: name}
	// The node's records go to the --log given. Neither the default log
	// nor the policy's log.path: the root writes every record of the tree
	// there already, and protects its own log from what it runs (the
	// same configuration names the same file).
	if logPath := f.logPath.v; logPath != "" {
		if n.logFile, err = authority.OpenLogFile(logPath); err != nil {
			return nil, err
		}
	}
	if n.keeper, err = forwarding.StartKeeper(stdin, n.logFile); err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

// abort ends the node before anything of it ran.
func (n *nestedRun) abort() {
	if n != nil {
		n.keeper.Abort()
		n.close()
	}
}

func (n *nestedRun) close() {
	if n.logFile != nil {
		n.logFile.Close()
	}
}

// run runs argv as the node (forwarding.Keeper.Run): it returns the
// command's exit status, or 125 when the node could not be set up
// (nothing ran).
func (n *nestedRun) run(f *runFlags, ld loaded, argv []string, stderr io.Writer) int {
	defer n.close()
	status, err := n.keeper.Run(forwarding.Inner{
		Register:        forwarding.NewRegister(n.name, argv, ld.policy.Config(), ld.warnings, n.logFile != nil),
		Argv:            argv,
		Env:             os.Environ(),
		Floor:           ld.policy.LandlockFloor(),
		RequireLandlock: f.requireLandlock.v,
		Software:        "permwrap " + version(),
		Warn:            func(text string) { printLines(stderr, "permwrap: warning: ", text) },
	})
	if err != nil {
		printErr(stderr, "permwrap: ", err)
		return exitInternal
	}
	return status
}

// runNestExec is the exec stage: the inner policy's Landlock floor with
// the signal scope, then the command (supervisor.ExecNested).
func runNestExec() int {
	spec, err := forwarding.ReadExecSpec()
	if err != nil {
		fmt.Fprintln(os.Stderr, "permwrap: nested exec stage: reading its spec:", err)
		return exitInternal
	}
	return supervisor.ExecNested(spec.Argv, spec.Env, spec.Floor, spec.RequireLandlock)
}

// nestingReport is `permwrap doctor`'s nesting section: whether a
// permwrap supervises this process, and in which node. It reports true
// when one does.
func nestingReport(w func(string, ...any)) bool {
	mode, filters, err := forwarding.SelfSeccomp()
	if err == nil && mode == 0 {
		w("nesting: not under any seccomp filter; permwrap here supervises by itself (the root)")
		return false
	}
	c, kerr := forwarding.Knock()
	switch {
	case errors.Is(kerr, forwarding.ErrParentBusy):
		w("nesting: inside a permwrap that refuses more nesting connections right now (too many pending); a permwrap started here exits 125")
		return true
	case kerr != nil:
		w("nesting: under %d seccomp filter(s) that do not answer permwrap's knock (a container runtime, a permwrap without nesting, another supervisor)", filters)
		w("         permwrap here tries to supervise by itself; if that is refused it exits 125 rather than run with fewer rules")
		return false
	}
	defer c.Close()
	wel, err := c.Handshake(5*time.Second, "permwrap "+version()+" doctor")
	if err != nil {
		w("nesting: inside a permwrap, which did not complete the handshake: %v", err)
		return true
	}
	w("nesting: inside a permwrap (protocol %d); this process is in node %s", wel.Version, wel.Parent)
	w("         a permwrap started here registers a node beneath %s: both policies judge its subtree, and its asks", wel.Parent)
	w("         go to the outermost permwrap's reviewers and prompt (docs/nesting.md)")
	return true
}
