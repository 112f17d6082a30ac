/* read_ptrace_setregs: a tracer rewrites a tracee's syscall after it was
 * checked. The tracee calls getppid(), which nothing watches; the tracer
 * turns it into openat(AT_FDCWD, path, O_RDONLY) by rewriting the
 * registers, and the tracee dumps the fd it gets back. Two stops:
 *   - the syscall-enter stop (PTRACE_SYSCALL), which the kernel reports
 *     before seccomp runs;
 *   - the PTRACE_EVENT_SECCOMP stop of a filter the tracee installs itself
 *     (SECCOMP_RET_TRACE for getppid), which comes after every filter ran
 *     — ours said "allow" for getppid — after which the kernel runs all
 *     filters again on the new registers.
 * Either way the openat must reach the supervisor.
 * The allowed twin: each variant first aims at free/a, which must be
 * printed in both runs (ptrace is allowed in the sandbox).
 * Judged by: the token on stdout. */
#include "common.h"
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/user.h>

static char path[64];

static void tracee(int seccomp_trace)
{
	if (seccomp_trace) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
			note("seccomp filter: %s", strerror(errno));
			_exit(1);
		}
	}
	if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0) {
		note("PTRACE_TRACEME: %s", strerror(errno));
		_exit(1);
	}
	raise(SIGSTOP);
	long fd = syscall(SYS_getppid);
	if (fd < 0) {
		note("the rewritten call failed: %s", strerror(errno));
		_exit(0);
	}
	if (fd == getppid()) {
		note("the call was not rewritten");
		_exit(0);
	}
	dump(fd);
	_exit(0);
}

/* rewrite turns the getppid at the tracee's current stop into openat. */
static int rewrite(pid_t c)
{
	struct user_regs_struct regs;
	if (ptrace(PTRACE_GETREGS, c, 0, &regs) < 0)
		return check(-1, "PTRACE_GETREGS");
	if (regs.orig_rax != SYS_getppid)
		return 0;
	regs.orig_rax = SYS_openat;
	regs.rdi = (unsigned long)AT_FDCWD;
	regs.rsi = (unsigned long)path;
	regs.rdx = O_RDONLY;
	return check(ptrace(PTRACE_SETREGS, c, 0, &regs), "PTRACE_SETREGS") < 0 ? -1 : 1;
}

static void attack(const char *target, int seccomp_trace)
{
	snprintf(path, sizeof path, "%s", target);
	pid_t c = fork();
	if (c == 0)
		tracee(seccomp_trace);
	int st;
	if (waitpid(c, &st, 0) < 0 || !WIFSTOPPED(st)) {
		note("the tracee did not stop");
		return;
	}
	long opts = PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD | (seccomp_trace ? PTRACE_O_TRACESECCOMP : 0);
	if (check(ptrace(PTRACE_SETOPTIONS, c, 0, opts), "PTRACE_SETOPTIONS") < 0) {
		kill(c, SIGKILL);
		waitpid(c, NULL, 0);
		return;
	}
	int req = seccomp_trace ? PTRACE_CONT : PTRACE_SYSCALL;
	int entering = 1, done = 0;
	ptrace(req, c, 0, 0);
	while (waitpid(c, &st, 0) == c && WIFSTOPPED(st)) {
		int sig = WSTOPSIG(st), event = st >> 16;
		if (!done && ((!seccomp_trace && sig == (SIGTRAP | 0x80) && entering) ||
			      (seccomp_trace && sig == SIGTRAP && event == PTRACE_EVENT_SECCOMP))) {
			int r = rewrite(c);
			if (r != 0) {
				done = 1;
				ptrace(PTRACE_DETACH, c, 0, 0);
				break;
			}
		}
		if (sig == (SIGTRAP | 0x80))
			entering = !entering;
		int pass = (sig == SIGTRAP || sig == (SIGTRAP | 0x80)) ? 0 : sig;
		ptrace(req, c, 0, pass);
	}
	waitpid(c, NULL, 0);
}

int main(void)
{
	attack("free/a", 0);
	attack("secret/key", 0);
	attack("free/a", 1);
	attack("secret/key", 1);
	return 0;
}
