package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify"
)

// InitArg is the hidden first argument that selects the init stage when
// permwrap re-executes itself. cmd/permwrap checks for it before anything
// else.
const InitArg = "__permwrap_init"

// handoffFd is the socket the init stage sends the listener fd over; it is
// the first of ExtraFiles in the child.
const handoffFd = 3

// handoffWaitKillable is set in the hand-off's data byte when the filter
// was loaded with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV.
const handoffWaitKillable = 1

// initSpec is what the supervisor tells the init stage, as JSON in argv.
type initSpec struct {
	Argv            []string
	Env             []string // the command's environment
	WriteDirs       []string
	WriteAnywhere   bool
	RequireLandlock bool
	Filter          notify.FilterOptions
}

// Init-stage exit codes, mirrored by the supervisor into its own status.
const (
	initExitInternal = 125
	initExitNoExec   = 126
	initExitNotFound = 127
)

// RunInit is the init stage: it runs in the re-executed child, never
// returns on success (the process becomes the command) and returns the exit
// code to use otherwise. Everything it reports goes to stderr prefixed with
// "permwrap:".
//
// The order matters: the command is looked up first (that needs no
// supervision), then Landlock, then the seccomp filter; from the moment the
// filter is loaded, every notified syscall blocks until the supervisor
// answers, so between loading and handing the listener over this stage
// makes no notified syscall (sendmsg and close are not watched).
func RunInit(args []string) int {
	runtime.LockOSThread()
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "permwrap: "+format+"\n", a...)
		// Tell the supervisor that no listener is coming.
		_, _ = unix.Write(handoffFd, []byte{0xff})
		return code
	}
	if len(args) != 1 {
		return fail(initExitInternal, "init stage: bad arguments")
	}
	var spec initSpec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil || len(spec.Argv) == 0 {
		return fail(initExitInternal, "init stage: bad spec: %v", err)
	}
	// The lookup uses the command's PATH, not the init stage's.
	for _, kv := range spec.Env {
		if strings.HasPrefix(kv, "PATH=") {
			os.Setenv("PATH", kv[len("PATH="):])
		}
	}
	path, err := exec.LookPath(spec.Argv[0])
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return fail(initExitNotFound, "%s: command not found", spec.Argv[0])
		}
		if errors.Is(err, os.ErrPermission) {
			return fail(initExitNoExec, "%s: permission denied", spec.Argv[0])
		}
		return fail(initExitNotFound, "%s: %v", spec.Argv[0], err)
	}
	if err := applyLandlock(spec); err != nil {
		return fail(initExitInternal, "landlock: %v", err)
	}
	prog, err := notify.BuildFilter(spec.Filter)
	if err != nil {
		return fail(initExitInternal, "seccomp filter: %v", err)
	}
	lfd, used, err := notify.Install(prog)
	if err != nil {
		return fail(initExitInternal, "seccomp: %v", err)
	}
	// The one data byte says how the filter was loaded.
	var flags byte
	if used.WaitKillable {
		flags |= handoffWaitKillable
	}
	if err := unix.Sendmsg(handoffFd, []byte{flags}, unix.UnixRights(lfd), nil, 0); err != nil {
		return fail(initExitInternal, "handing over the seccomp listener: %v", err)
	}
	unix.Close(lfd)
	unix.Close(handoffFd)
	// The execve is the first notification the supervisor judges: the
	// command itself is held to the policy like anything it runs later.
	err = unix.Exec(path, spec.Argv, spec.Env)
	code := initExitNoExec
	if errors.Is(err, unix.ENOENT) {
		code = initExitNotFound
	}
	fmt.Fprintf(os.Stderr, "permwrap: %s: %v\n", spec.Argv[0], err)
	return code
}

// applyLandlock applies the static floor: read and execute beneath /,
// every filesystem right beneath the directories where the policy could
// allow a write (or beneath / when a pattern could match anywhere), and
// the signal scope, so no sandboxed process can signal permwrap itself.
// Network access is not handled here.
func applyLandlock(spec initSpec) error {
	cfg := landlock.Config{
		HandledAccessFS: landlock.V7.HandledAccessFS,
		Scoped:          llsys.ScopeSignal,
	}
	if !spec.RequireLandlock {
		cfg = cfg.BestEffort()
	}
	all := landlock.PathAccess(landlock.V7.HandledAccessFS, "/")
	var rules []landlock.Rule
	if spec.WriteAnywhere {
		rules = append(rules, all)
	} else {
		rules = append(rules, landlock.RODirs("/"))
		if len(spec.WriteDirs) > 0 {
			rules = append(rules, landlock.PathAccess(landlock.V7.HandledAccessFS, spec.WriteDirs...).IgnoreIfMissing())
		}
	}
	return cfg.Restrict(rules...)
}
