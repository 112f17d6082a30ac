/* read_race_ptrace_poke: the path-flip race driven by ptrace. The child
 * has two threads: one opens the path buffer in a loop, the other only
 * exists to be traced. The parent seizes and stops that second thread and
 * rewrites the (shared) buffer through it with PTRACE_POKEDATA between
 * "free/a" and "secret/key" while the first thread keeps running. Runs
 * until it wins, at most PERMWRAP_RACE_SECONDS.
 * Judged by: the token on stdout. */
#include "common.h"
#include <pthread.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
static char buf[32] __attribute__((aligned(8))) = "free/a";
static int tidpipe[2];
static void *idle(void *arg)
{
	(void)arg;
	pid_t tid = gettid();
	(void)!write(tidpipe[1], &tid, sizeof tid);
	for (;;)
		pause();
	return NULL;
}
int main(void)
{
	if (pipe(tidpipe) < 0)
		return 1;
	pid_t c = fork();
	if (c == 0) {
		long odd = 0;
		pthread_t t;
		pthread_create(&t, NULL, idle, NULL);
		for (;;) {
			char got[256];
			int fd = open(buf, O_RDONLY);
			if (fd < 0)
				continue;
			ssize_t n = read(fd, got, sizeof got);
			close(fd);
			if (n > 0 && !(n == 8 && memcmp(got, "ALLOWED\n", 8) == 0)) {
				race_won();
				if (++odd <= 20)
					(void)!write(1, got, n);
			}
		}
	}
	pid_t tid;
	if (read(tidpipe[0], &tid, sizeof tid) != sizeof tid)
		return 1;
	if (check(ptrace(PTRACE_SEIZE, tid, 0, 0), "PTRACE_SEIZE helper thread") < 0 ||
	    check(ptrace(PTRACE_INTERRUPT, tid, 0, 0), "PTRACE_INTERRUPT") < 0 ||
	    check(waitpid(tid, NULL, __WALL), "wait for the stop") < 0) {
		kill(c, SIGKILL);
		return 1;
	}
	long words[2][2];
	memcpy(words[0], "secret/key\0\0\0\0\0\0", 16);
	memcpy(words[1], "free/a\0\0\0\0\0\0\0\0\0\0", 16);
	long pokes = 0, fails = 0;
	while (race_on()) {
		for (int i = 0; i < 2; i++)
			for (int w = 0; w < 2; w++) {
				if (ptrace(PTRACE_POKEDATA, tid, buf + 8 * w, (void *)words[i][w]) < 0)
					fails++;
				else
					pokes++;
			}
	}
	/* detach first: a traced thread is only reaped by its tracer */
	ptrace(PTRACE_DETACH, tid, 0, 0);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	race_done();
	note("%ld pokes succeeded, %ld failed", pokes, fails);
	return 0;
}
