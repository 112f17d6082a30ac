package supervisor

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify"
	"github.com/permwrap/permwrap/notify/host"
)

// InitArg is the hidden first argument that selects one of the two
// helper stages when permwrap re-executes itself. cmd/permwrap checks for
// it before anything else. The stage's own arguments follow it: nothing in
// them is secret, because /proc/PID/cmdline is readable by every local
// user. What the stages need that may be (the command line and its
// environment) comes through inherited file descriptors.
const InitArg = "__permwrap_init"

// The stages behind InitArg: the watchdog (outside the sandbox, the
// command's parent, see watchdog.go) and the sandbox stage (applies the
// sandbox to itself and becomes the command).
const (
	roleWatchdog = "watchdog"
	roleSandbox  = "sandbox"
)

// File descriptors of the sandbox stage, set up by the watchdog.
const (
	// handoffFd is the socket over which the sandbox stage tells the
	// supervisor where its listener is (its pid and the fd number), and
	// waits until the supervisor has taken it.
	handoffFd = 3
	// specFd is the read end of a pipe carrying the initSpec as JSON; the
	// supervisor writes it and closes its end.
	specFd = 4
)

// handoffWaitKillable is set in the hand-off's data byte when the filter
// was loaded with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV.
const handoffWaitKillable = 1

// handoffFailed is the hand-off's only byte when the sandbox stage failed
// before it had a listener to send (it said why on stderr).
const handoffFailed = 0xff

// handoffTaken is the supervisor's answer once it holds the listener: the
// sandbox stage may close its copy and become the command.
const handoffTaken = 1

// maxSpec bounds the spec the sandbox stage reads. The kernel limits a
// command line and environment to a quarter of the stack limit, so a spec
// over this is not one the supervisor wrote.
const maxSpec = 256 << 20

// initSpec is what the supervisor tells the sandbox stage, as JSON on
// specFd (never in argv: the environment holds API keys).
type initSpec struct {
	Argv            []string
	Env             []string // the command's environment
	WriteDirs       []string
	WriteAnywhere   bool
	RequireLandlock bool
	// Filter is the seccomp program, compiled by the supervisor
	// (sendSpec): the init stage only loads it.
	Filter []unix.SockFilter
	// Underscore: the environment's `_` names permwrap, as the shell
	// that started it set it; the command gets its own path there, as
	// the shell would have set it for the command run bare.
	Underscore bool
}

// Init-stage exit codes, mirrored by the supervisor into its own status.
const (
	initExitInternal = 125
	initExitNoExec   = 126
	initExitNotFound = 127
)

// RunInit runs the helper stage named by args[0] (the arguments after
// InitArg) and returns the exit code to use; the sandbox stage never
// returns on success (the process becomes the command).
func RunInit(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case roleWatchdog:
			return runWatchdog(args[1:])
		case roleSandbox:
			if len(args) == 1 {
				return runSandboxStage()
			}
		}
	}
	fmt.Fprintln(os.Stderr, "permwrap: init stage: bad arguments (a permwrap binary of another version?)")
	_, _ = host.Write(handoffFd, []byte{handoffFailed})
	return initExitInternal
}

// runSandboxStage is the sandbox stage. Everything it reports goes to
// stderr prefixed with "permwrap:".
//
// The order matters: the spec is read and the command looked up first
// (that needs no supervision), then Landlock, then the seccomp filter;
// from the moment the filter is loaded, every notified syscall blocks
// until the supervisor answers, so between loading and handing the
// listener over this stage makes no notified syscall.
//
// The listener is not sent (SCM_RIGHTS needs sendmsg, which the filter
// watches: a datagram's destination is in memory). The stage writes where
// it is — its pid and the fd number — and waits; the supervisor takes it
// with pidfd_getfd (it is this stage's ancestor and the same user, and the
// stage makes itself dumpable for it), checks that it is a seccomp
// listener, and answers. write, read and close are not watched.
func runSandboxStage() int {
	runtime.LockOSThread()
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "permwrap: "+format+"\n", a...)
		// Tell the supervisor that no listener is coming.
		_, _ = host.Write(handoffFd, []byte{handoffFailed})
		return code
	}
	spec, err := readSpec(os.NewFile(specFd, "spec"))
	if errors.Is(err, errNoSpec) {
		// The supervisor could not make the spec, and says why.
		_, _ = host.Write(handoffFd, []byte{handoffFailed})
		return initExitInternal
	}
	if err != nil {
		return fail(initExitInternal, "init stage: %v", err)
	}
	path, code, err := lookCommand(spec.Argv[0], spec.Env)
	if err != nil {
		return fail(code, "%v", err)
	}
	// No core dumps: the kernel writes them itself, in the process's
	// working directory, past every check (docs/security.md). The hard
	// limit 0 holds for the whole tree; raising it is refused
	// (process.go).
	if err := host.NoCoreDumps(); err != nil {
		return fail(initExitInternal, "limiting core dumps: %v", err)
	}
	// pidfd_getfd needs the supervisor to be allowed to ptrace this
	// process; a permwrap binary installed unreadable (mode 0711) would
	// leave it non-dumpable.
	if err := host.SetDumpable(); err != nil {
		return fail(initExitInternal, "prctl(PR_SET_DUMPABLE): %v", err)
	}
	if err := applyLandlock(spec); err != nil {
		return fail(initExitInternal, "landlock: %v", err)
	}
	lfd, used, err := notify.Install(&notify.Program{Insns: spec.Filter})
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EBUSY) {
			// An outer supervisor's filter refuses a listener of our own,
			// and it did not answer the knock (docs/nesting.md).
			return fail(initExitInternal, "nested under a supervisor that did not answer (a permwrap without nesting, or another seccomp supervisor): refusing to run the command with fewer rules than it enforces (%v)", err)
		}
		return fail(initExitInternal, "seccomp: %v", err)
	}
	// The data says how the filter was loaded, which process the
	// supervisor forwards signals to (this one, soon the command) and
	// takes the listener from, and its fd number there.
	if _, err := host.Write(handoffFd, handoffData(used.WaitKillable, os.Getpid(), lfd)); err != nil {
		return fail(initExitInternal, "handing over the seccomp listener: %v", err)
	}
	if err := awaitTaken(handoffFd); err != nil {
		// The supervisor is gone or refused: nobody would serve the filter.
		fmt.Fprintf(os.Stderr, "permwrap: handing over the seccomp listener: %v\n", err)
		return initExitInternal
	}
	host.Close(lfd)
	host.Close(handoffFd)
	if spec.Underscore {
		setUnderscore(spec.Env, path)
	}
	// The execve is the first notification the supervisor judges: the
	// command itself is held to the policy like anything it runs later.
	err = host.Exec(path, spec.Argv, spec.Env)
	code = initExitNoExec
	if errors.Is(err, unix.ENOENT) {
		code = initExitNotFound
	}
	fmt.Fprintf(os.Stderr, "permwrap: %s: %v\n", spec.Argv[0], err)
	return code
}

// setUnderscore sets `_`, which a shell sets to the path of the command
// it runs, to path.
func setUnderscore(env []string, path string) {
	for i, kv := range env {
		if strings.HasPrefix(kv, "_=") {
			env[i] = "_=" + path
		}
	}
}

// underscoreNamesSelf reports whether env's `_` is the path of this
// executable (the shell that started permwrap set it so).
func underscoreNamesSelf(env []string) bool {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "_="); ok {
			var a, b unix.Stat_t
			return v != "" && unix.Stat(v, &a) == nil && unix.Stat("/proc/self/exe", &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
		}
	}
	return false
}

// lookCommand finds the command as env(1) would, on the command's own
// PATH (env, not this stage's): its path, or the exit code to use (127
// not found, 126 not executable) and the message.
func lookCommand(name string, env []string) (string, int, error) {
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			os.Setenv("PATH", kv[len("PATH="):])
		}
	}
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path, 0, nil
	case errors.Is(err, exec.ErrNotFound):
		return "", initExitNotFound, fmt.Errorf("%s: command not found", name)
	case errors.Is(err, os.ErrPermission):
		return "", initExitNoExec, fmt.Errorf("%s: permission denied", name)
	}
	return "", initExitNotFound, fmt.Errorf("%s: %v", name, err)
}

// errNoSpec: the supervisor closed the spec pipe without writing one.
var errNoSpec = errors.New("no spec")

// readSpec reads the whole spec from f and closes it.
func readSpec(f *os.File) (initSpec, error) {
	defer f.Close()
	var spec initSpec
	b, err := io.ReadAll(io.LimitReader(f, maxSpec+1))
	if err != nil {
		return spec, fmt.Errorf("reading the spec: %w", err)
	}
	if len(b) == 0 {
		return spec, errNoSpec
	}
	if len(b) > maxSpec {
		return spec, fmt.Errorf("spec over %d bytes", maxSpec)
	}
	if err := json.Unmarshal(b, &spec); err != nil {
		return spec, fmt.Errorf("bad spec: %w", err)
	}
	if len(spec.Argv) == 0 {
		return spec, errors.New("bad spec: no command")
	}
	return spec, nil
}

// handoffData is the hand-off message: a flags byte, the sandbox stage's
// pid and the listener's fd number in it (little endian).
func handoffData(waitKillable bool, pid, lfd int) []byte {
	var flags byte
	if waitKillable {
		flags |= handoffWaitKillable
	}
	b := make([]byte, handoffLen)
	b[0] = flags
	binary.LittleEndian.PutUint32(b[1:], uint32(pid))
	binary.LittleEndian.PutUint32(b[5:], uint32(lfd))
	return b
}

// handoffLen is the length of the hand-off message.
const handoffLen = 9

// awaitTaken waits for the supervisor's handoffTaken.
func awaitTaken(fd int) error {
	var b [1]byte
	for {
		n, err := host.Read(fd, b[:])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		case n != 1 || b[0] != handoffTaken:
			return errors.New("the supervisor did not take it")
		}
		return nil
	}
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
