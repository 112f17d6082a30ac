/* read_ptrace_suspend_seccomp: a tracer sets PTRACE_O_SUSPEND_SECCOMP on
 * its tracee, whose syscalls then skip every seccomp filter: the
 * supervisor would never hear of its open of secret/key. The option needs
 * CAP_SYS_ADMIN (the suite runs as root) and a tracer that is not itself
 * under seccomp; permwrap's filter refuses it in PTRACE_SEIZE and
 * PTRACE_SETOPTIONS as well. Both spellings are tried; each tracee reads
 * the secret only if its tracer's call succeeded, so a bare run proves
 * the option works.
 * The allowed twin: PTRACE_SEIZE without the option works under permwrap
 * (ptrace is allowed), and the traced child reads free/a.
 * Judged by: the token on stdout; ALLOWED printed in both runs. */
#include "common.h"
#include <signal.h>
#include <sys/ptrace.h>
#ifndef PTRACE_O_SUSPEND_SECCOMP
#define PTRACE_O_SUSPEND_SECCOMP (1 << 21)
#endif

/* traced runs a child that waits for a go byte: 'y' makes it read path. */
static pid_t traced(const char *path, int go[2])
{
	if (pipe(go) < 0)
		return -1;
	pid_t c = fork();
	if (c == 0) {
		char b = 0;
		close(go[1]);
		if (read(go[0], &b, 1) == 1 && b == 'y')
			dump_path(AT_FDCWD, path);
		_exit(0);
	}
	close(go[0]);
	return c;
}

static void finish(pid_t c, int go[2], long ok)
{
	char b = ok >= 0 ? 'y' : 'n';
	(void)!write(go[1], &b, 1);
	close(go[1]);
	int st;
	while (waitpid(c, &st, __WALL) == c && !WIFEXITED(st) && !WIFSIGNALED(st))
		ptrace(PTRACE_CONT, c, 0, 0);
}

int main(void)
{
	int go[2];
	/* The twin: an ordinary seize, then an allowed read. */
	pid_t c = traced("free/a", go);
	finish(c, go, check(ptrace(PTRACE_SEIZE, c, 0, PTRACE_O_EXITKILL), "PTRACE_SEIZE"));

	/* PTRACE_SEIZE with the option. */
	c = traced("secret/key", go);
	finish(c, go, check(ptrace(PTRACE_SEIZE, c, 0, PTRACE_O_EXITKILL | PTRACE_O_SUSPEND_SECCOMP),
			    "PTRACE_SEIZE with PTRACE_O_SUSPEND_SECCOMP"));

	/* PTRACE_SETOPTIONS on a stopped tracee. */
	c = traced("secret/key", go);
	long r = check(ptrace(PTRACE_SEIZE, c, 0, PTRACE_O_EXITKILL), "PTRACE_SEIZE");
	if (r >= 0) {
		r = check(ptrace(PTRACE_INTERRUPT, c, 0, 0), "PTRACE_INTERRUPT");
		if (r >= 0)
			r = check(waitpid(c, NULL, __WALL), "wait for the stop");
		if (r >= 0)
			r = check(ptrace(PTRACE_SETOPTIONS, c, 0, PTRACE_O_EXITKILL | PTRACE_O_SUSPEND_SECCOMP),
				  "PTRACE_SETOPTIONS with PTRACE_O_SUSPEND_SECCOMP");
		ptrace(PTRACE_CONT, c, 0, 0);
	}
	finish(c, go, r);
	return 0;
}
