/* exec_race_ptrace_poke: the TOCTOU race on exec, with the path rewritten
 * by another process through ptrace. Until it wins (at most
 * PERMWRAP_RACE_SECONDS), fork children whose main thread calls
 * execve(buf) with buf "free/ok" (allowed, exits at once) while the
 * parent, tracing the child's idle second thread (stopped, sharing the
 * memory), flips buf between "free/ok" and "forbidden/prog" with
 * PTRACE_POKEDATA. exec cannot be emulated: permwrap continues an allowed
 * exec and verifies /proc/PID/exe afterwards, so a child that loaded
 * forbidden/prog must be killed before its first watched syscall, and
 * ./forbidden-ran (created by forbidden/prog right after printing its
 * marker) must never appear.
 * Judged by: ./forbidden-ran existing. */
#include "common.h"
#include <pthread.h>
#include <signal.h>
#include <sys/ptrace.h>
static char buf[32] __attribute__((aligned(8))) = "free/ok";
static int tidpipe[2], gopipe[2];
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
	long tries = 0, killed = 0, pokes = 0;
	long words[2][2];
	memcpy(words[0], "forbidden/prog\0\0", 16);
	memcpy(words[1], "free/ok\0\0\0\0\0\0\0\0\0", 16);
	while (race_on()) {
		if (pipe(tidpipe) < 0 || pipe(gopipe) < 0)
			break;
		pid_t c = fork();
		if (c < 0)
			break;
		if (c == 0) {
			pthread_t t;
			char *argv[] = { "x", NULL };
			char b;
			pthread_create(&t, NULL, idle, NULL);
			if (read(gopipe[0], &b, 1) != 1)
				_exit(1);
			for (int i = 0; i < 200; i++)
				execve(buf, argv, (char *[]){ NULL });
			_exit(0);
		}
		close(tidpipe[1]);
		close(gopipe[0]);
		pid_t tid;
		int ok = read(tidpipe[0], &tid, sizeof tid) == sizeof tid &&
			 ptrace(PTRACE_SEIZE, tid, 0, 0) == 0 &&
			 ptrace(PTRACE_INTERRUPT, tid, 0, 0) == 0 &&
			 waitpid(tid, NULL, __WALL) == tid;
		if (!ok) {
			note("seizing the helper thread: %s", strerror(errno));
			kill(c, SIGKILL);
			waitpid(c, NULL, 0);
			close(tidpipe[0]);
			close(gopipe[1]);
			break;
		}
		(void)!write(gopipe[1], "g", 1);
		int st, done = 0;
		for (int i = 0; !done; i++) {
			int w = i & 1;
			if (ptrace(PTRACE_POKEDATA, tid, buf, (void *)words[w][0]) == 0 &&
			    ptrace(PTRACE_POKEDATA, tid, buf + 8, (void *)words[w][1]) == 0)
				pokes++;
			/* reap whatever ended: the helper thread (killed by
			 * the exec, reported to its tracer) and the child */
			pid_t r;
			while ((r = waitpid(-1, &st, __WALL | WNOHANG)) > 0)
				if (r == c) {
					done = 1;
					if (WIFSIGNALED(st))
						killed++;
				}
			if (r < 0 && errno == ECHILD)
				done = 1;
		}
		while (waitpid(-1, NULL, __WALL | WNOHANG) > 0)
			;
		close(tidpipe[0]);
		close(gopipe[1]);
		tries++;
		if (access("forbidden-ran", F_OK) == 0)
			race_won();
	}
	race_done();
	note("%ld children, %ld killed by a signal, %ld flips", tries, killed, pokes);
	return 0;
}
