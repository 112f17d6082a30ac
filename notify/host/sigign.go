package host

/*
#include <signal.h>

// permwrap_ignored_at_start holds, bit n for signal n, the signals this
// process was started with ignored (SIG_IGN), and permwrap_ignored_known
// says the constructor ran. It runs before Go's runtime installs its own
// handlers, which replace an inherited SIG_IGN for every signal but
// SIGHUP and SIGINT: after that, the process cannot tell, and its
// children, exec'd with the runtime's handlers reset to SIG_DFL, would
// lose what the person (nohup, a shell's background job) asked for.
static unsigned long long permwrap_ignored_at_start;
static int permwrap_ignored_known;

__attribute__((constructor)) static void permwrap_record_ignored(void) {
	for (int s = 1; s < 64; s++) {
		struct sigaction sa;
		if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			permwrap_ignored_at_start |= 1ULL << s;
	}
	permwrap_ignored_known = 1;
}

static unsigned long long permwrap_ignored(void) { return permwrap_ignored_at_start; }
static int permwrap_ignored_recorded(void) { return permwrap_ignored_known; }
*/
import "C"

import (
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// passedSignals are the signals whose ignored disposition permwrap keeps
// for the command: those a person or a shell sets to SIG_IGN for a
// program and its children (nohup's SIGHUP; SIGINT and SIGQUIT for a
// background job of a shell without job control; SIGPIPE, SIGTERM, the
// job-control and limit signals). Not SIGCHLD (ignoring it reaps
// children for us, which the supervisor and the watchdog cannot allow)
// nor the signals Go's runtime needs (SIGURG, SIGPROF, the synchronous
// ones).
var passedSignals = []unix.Signal{
	unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGTERM, unix.SIGPIPE,
	unix.SIGUSR1, unix.SIGUSR2, unix.SIGALRM, unix.SIGVTALRM,
	unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU, unix.SIGXCPU, unix.SIGXFSZ,
}

// IgnoredAtStart reports whether sig was ignored when this process
// started. Without the record (a binary linked without running C
// constructors) it is what Go's runtime kept: SIGHUP and SIGINT only.
func IgnoredAtStart(sig os.Signal) bool {
	n, ok := sig.(unix.Signal)
	if !ok || n <= 0 || n >= 64 {
		return false
	}
	if C.permwrap_ignored_recorded() == 0 {
		return signal.Ignored(sig)
	}
	return uint64(C.permwrap_ignored())&(1<<uint(n)) != 0
}

// KeepIgnoredSignals gives back SIG_IGN to every passed signal this
// process was started with ignored, where Go's runtime replaced it with
// its handler: every process permwrap execs (its stages, the command)
// then inherits it, as it would have from the shell without permwrap.
// Call it first, and catch signals only through Catchable. It makes no
// system call when nothing was ignored.
func KeepIgnoredSignals() {
	for _, sig := range passedSignals {
		if IgnoredAtStart(sig) && !signal.Ignored(sig) {
			signal.Ignore(sig)
		}
	}
}

// Notify is signal.Notify for sigs without those this process was
// started with ignored: catching one would undo KeepIgnoredSignals, and
// what the person ignored for the run is not for permwrap to pass on
// either. With none left it catches nothing (signal.Notify with no
// signals would catch them all).
func Notify(ch chan<- os.Signal, sigs ...os.Signal) {
	catch := make([]os.Signal, 0, len(sigs))
	for _, sig := range sigs {
		if !IgnoredAtStart(sig) {
			catch = append(catch, sig)
		}
	}
	if len(catch) > 0 {
		signal.Notify(ch, catch...)
	}
}
