/* exec_race_path_flip: the TOCTOU race on exec. Until it wins (at most
 * PERMWRAP_RACE_SECONDS), fork children in which one thread calls
 * execve(buf) while a second thread flips buf between "free/ok" (allowed,
 * exits at once) and "forbidden/prog". exec cannot be emulated, so
 * permwrap continues an allowed exec and verifies /proc/PID/exe
 * afterwards; a child that loaded forbidden/prog must be killed before its
 * first watched syscall, so ./forbidden-ran (created by forbidden/prog
 * right after printing its marker) must never appear.
 * Judged by: ./forbidden-ran existing. */
#include "common.h"
#include <pthread.h>
#include <sys/wait.h>
static char buf[32] = "free/ok";
static volatile long flips;
static void *flipper(void *arg)
{
	(void)arg;
	for (;; flips++) {
		memcpy(buf, "forbidden/prog", 15);
		__asm__ volatile("" ::: "memory"); /* keep both stores */
		memcpy(buf, "free/ok\0\0\0\0\0\0\0", 15);
		__asm__ volatile("" ::: "memory"); /* keep both stores */
	}
	return NULL;
}
int main(void)
{
	long tries = 0, killed = 0;
	while (race_on()) {
		pid_t c = fork();
		if (c < 0)
			break;
		if (c == 0) {
			pthread_t t;
			char *argv[] = { "x", NULL };
			pthread_create(&t, NULL, flipper, NULL);
			/* on a loaded machine the flipper may not have run yet */
			while (flips < 1000)
				;
			for (int i = 0; i < 50; i++)
				execve(buf, argv, (char *[]){ NULL });
			_exit(0);
		}
		int st;
		waitpid(c, &st, 0);
		tries++;
		if (WIFSIGNALED(st))
			killed++;
		if (access("forbidden-ran", F_OK) == 0)
			race_won();
	}
	race_done();
	note("%ld children, %ld killed by a signal", tries, killed);
	return 0;
}
