package supervisor

import (
	"os"
	"os/signal"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/notify/host"
)

// runSignals are the signals Run passes on to the command or handles
// itself (SIGWINCH, SIGCHLD).
var runSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGCHLD}

// Signals are runSignals, caught for Run before the watchdog exists so
// none is lost.
//
// Go's runtime sets each signal up with a round trip to its
// signal-mask thread: about 0.3 ms a signal on a busy two-CPU machine,
// 2 ms for the six, on the path to the command when Run catches them
// itself. CatchSignals does it in the background, while the caller
// loads the policy.
type Signals struct {
	ch     chan os.Signal
	caught chan struct{} // closed once every signal is caught
}

// CatchSignals starts catching runSignals in the background. The caller
// passes the result to Run (Config.Signals), which then owns it, or,
// when it will not call Run, releases it (Release).
func CatchSignals() *Signals {
	s := &Signals{ch: make(chan os.Signal, 16), caught: make(chan struct{})}
	go func() {
		host.Notify(s.ch, runSignals...)
		close(s.caught)
	}()
	return s
}

// wait waits until every signal is caught and returns the channel.
func (s *Signals) wait() <-chan os.Signal {
	<-s.caught
	return s.ch
}

// stop stops catching (Run's, once the command is gone).
func (s *Signals) stop() {
	<-s.caught
	signal.Stop(s.ch)
}

// Release stops catching, for a caller that will not call Run. A signal
// that came meanwhile is raised again, now with the disposition it had
// before CatchSignals (SIGINT, SIGTERM, SIGHUP and SIGQUIT end the
// process, as they would have without it).
func (s *Signals) Release() {
	s.stop()
	for {
		select {
		case sig := <-s.ch:
			if n, ok := sig.(unix.Signal); ok && n != unix.SIGWINCH && n != unix.SIGCHLD {
				_ = host.Kill(os.Getpid(), n)
			}
		default:
			return
		}
	}
}
