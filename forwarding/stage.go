package forwarding

import (
	"encoding/json"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/engine"
)

// The inner permwrap's helper stages (docs/nesting.md, "Which node a
// process belongs to"). An inner permwrap does not exec its command
// itself; three processes:
//
//	permwrap --name reviewer -- CMD      the inner permwrap (RunInner):
//	│                                    loads its configuration, opens
//	│                                    its --log, forwards signals,
//	│                                    exits with CMD's status
//	└── permwrap __nest-keeper           the keeper (RunKeeper): knocks,
//	    │                                registers the node, is a child
//	    │                                subreaper, writes the records the
//	    │                                root sends into the --log, and
//	    │                                lives until its subtree is empty
//	    └── permwrap __nest-exec → CMD   the exec stage (ExecSpec): enters
//	                                     a new Landlock domain (the inner
//	                                     policy's floor, signals scoped)
//	                                     and executes CMD
//
// Every child of the keeper is in the node; the keeper, the inner
// permwrap and whatever started them stay in the parent's node. Specs
// travel over inherited pipes, never argv (argv is world-readable).

// The hidden first arguments of the two helper stages: cmd/permwrap
// dispatches on them.
const (
	KeeperArg = "__nest-keeper"
	ExecArg   = "__nest-exec"
)

// Descriptors of the helper stages.
const (
	stageSpecFd   = 3 // the spec, JSON, closed by the writer
	stageStatusFd = 4 // keeper → inner permwrap: JSON lines
	stageLogFd    = 5 // the --log file, when there is one
)

// Exit codes of the stages, as cmd/permwrap's.
const (
	exitOK       = 0
	exitInternal = 125 // permwrap's own failure: nothing of the command ran
)

// ExecSpec is what the keeper tells the exec stage.
type ExecSpec struct {
	Argv            []string
	Env             []string
	Floor           engine.Floor
	RequireLandlock bool
}

// ReadExecSpec reads the exec stage's spec, from the descriptor the
// keeper gave it.
func ReadExecSpec() (ExecSpec, error) {
	var spec ExecSpec
	err := readStageSpec(&spec)
	return spec, err
}

// readStageSpec reads a helper stage's spec from stageSpecFd.
func readStageSpec(v any) error {
	f := os.NewFile(stageSpecFd, "spec")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// startStage starts a helper stage (arg: KeeperArg or ExecArg) and
// writes its spec into the pipe it reads, specW's other end. The
// descriptors only the stage keeps (that other end among them) are
// closed here once it has them, or failed to start.
func startStage(self, arg string, attr *os.ProcAttr, spec []byte, specW *os.File, theirs ...*os.File) (*os.Process, error) {
	proc, err := os.StartProcess(self, []string{"permwrap", arg}, attr)
	for _, f := range theirs {
		f.Close()
	}
	if err != nil {
		specW.Close()
		return nil, err
	}
	go func() {
		_, _ = specW.Write(spec)
		specW.Close()
	}()
	return proc, nil
}

// forwardedSignals are passed on to the command, as the root passes
// them on.
var forwardedSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2}

// Attach modes of the command (as the root's, supervisor/watchdog.go).
const (
	attachGroup      = "group"      // its own process group
	attachForeground = "foreground" // its own process group, the terminal's foreground
)
