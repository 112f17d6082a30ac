package supervisor

import (
	"fmt"
	"net/netip"
	"os"
	"sync/atomic"

	"github.com/permwrap/permwrap/authority"
	"github.com/permwrap/permwrap/engine"
	"github.com/permwrap/permwrap/supervisor/egress"
	"github.com/permwrap/permwrap/supervisor/terminal"
)

// egressRun is the run's egress proxy: started before the command (its
// address goes into the command's environment), judged by the run's
// policy, authority chain and review log, closed when the run ends.
type egressRun struct {
	proxy *egress.Proxy // nil: it could not start
	peers *egress.ExactPeers
	// net is the supervisor's view of the network, once it exists: the
	// proxy asks it who serves a destination on this machine.
	net atomic.Pointer[netState]
}

// startEgress starts the proxy. A proxy that cannot start (no loopback)
// is said once; the run goes on, and connections are judged by their
// addresses only.
func startEgress(cfg Config, notices *terminal.Noticer) *egressRun {
	peers := &egress.ExactPeers{Fallback: &egress.ProcPeers{Root: os.Getpid()}}
	judge := &egress.PolicyJudge{
		Policy: cfg.Policy,
		Agent:  cfg.Argv,
		Process: func(pid int) authority.Process {
			return processInfo(nil, pid, true, "")
		},
		Denied: func(_ engine.NetIntent, reason string) {
			notices.Line("permwrap: " + reason)
		},
	}
	if cfg.Decider != nil {
		judge.Decider = cfg.Decider
	}
	if cfg.Log != nil {
		judge.Log = cfg.Log
	}
	upstream, err := egress.UpstreamFromEnv(os.Environ())
	if err != nil {
		fmt.Fprintf(cfg.Stderr, "permwrap: ignoring the proxy settings in the environment: %v\n", err)
	}
	run := &egressRun{peers: peers}
	service := func(ap netip.AddrPort) *engine.NetService {
		if n := run.net.Load(); n != nil {
			return n.proxyService(ap)
		}
		return nil
	}
	px, err := egress.Start(egress.Config{Judge: judge, Peers: peers, Upstream: upstream, Service: service})
	if err != nil {
		fmt.Fprintf(cfg.Stderr, "permwrap: the egress proxy could not start (%v); connections are judged by address only\n", err)
		return &egressRun{}
	}
	run.proxy = px
	return run
}

// environ points the command's proxy variables at the proxy.
func (e *egressRun) environ(env []string) []string {
	if e.proxy == nil {
		return env
	}
	return e.proxy.Environ(env)
}

func (e *egressRun) stop() {
	if e.proxy != nil {
		e.proxy.Close()
	}
}
