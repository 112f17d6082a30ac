// Command roundtrip runs a command the way permwrap does — the same
// launch, Landlock floor and seccomp filter, derived from the same syscall
// table and policy — but answers every notification with CONTINUE: the
// kernel's round trip alone, what scripts/bench compares permwrap with
// (internal/roundtrip).
//
//	roundtrip [-sync] [-emulate] -- CMD [ARG...]
//
// The policy is loaded as permwrap loads it without flags ($PERMWRAP_CONFIG_DIR,
// else the usual places); only which opens are watched depends on it.
// It enforces nothing beyond Landlock and the filter's refusals: a
// benchmark tool, never a sandbox.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/internal/roundtrip"
	"github.com/permwrap/permwrap/supervisor"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == supervisor.InitArg {
		os.Exit(supervisor.RunInit(os.Args[2:]))
	}
	fs := flag.NewFlagSet("roundtrip", flag.ExitOnError)
	sync := fs.Bool("sync", false, "set SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP on the listener")
	emulate := fs.Bool("emulate", false, "answer opens by opening the path and installing the fd (ADDFD|SEND), judging nothing")
	_ = fs.Parse(os.Args[1:])
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: roundtrip [-sync] [-emulate] -- CMD [ARG...]")
		os.Exit(2)
	}
	env, err := engine.NewEnv("")
	if err != nil {
		fmt.Fprintln(os.Stderr, "roundtrip:", err)
		os.Exit(supervisor.ExitInternal)
	}
	p, _, err := engine.Load(engine.LoadOptions{Env: env})
	if err != nil {
		fmt.Fprintln(os.Stderr, "roundtrip:", err)
		os.Exit(supervisor.ExitInternal)
	}
	status, err := roundtrip.Run(context.Background(), supervisor.Config{Policy: p, Argv: fs.Args()},
		roundtrip.Options{SyncWakeUp: *sync, Emulate: *emulate})
	if err != nil {
		fmt.Fprintln(os.Stderr, "roundtrip:", err)
	}
	os.Exit(status)
}
