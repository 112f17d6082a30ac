/* exec_race_symlink_swap: until it wins (at most PERMWRAP_RACE_SECONDS),
 * one thread keeps exchanging free/x between a copy of the allowed free/ok
 * and a symlink to ../forbidden/prog, while forked children
 * execve("free/x"). The name is checked, then resolved again by the
 * kernel's exec.
 * Judged by: ./forbidden-ran existing (forbidden/prog creates it right
 * after printing its marker; exec verification must kill first). */
#include "common.h"
#include <pthread.h>
#include <sys/wait.h>
static volatile int stop;
static void *swapper(void *arg)
{
	(void)arg;
	while (!stop)
		renameat2(AT_FDCWD, "free/x", AT_FDCWD, "free/y", RENAME_EXCHANGE);
	return NULL;
}
int main(void)
{
	pthread_t t;
	long tries = 0, killed = 0;
	char b[65536];
	int in = open("free/ok", O_RDONLY), out = open("free/x", O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ssize_t n;
	if (in < 0 || out < 0)
		return note("copy free/ok: %s", strerror(errno)), 1;
	while ((n = read(in, b, sizeof b)) > 0)
		if (write(out, b, n) != n)
			return 1;
	close(in);
	close(out);
	if (check(symlink("../forbidden/prog", "free/y"), "symlink free/y") < 0)
		return 1;
	pthread_create(&t, NULL, swapper, NULL);
	while (race_on()) {
		pid_t c = fork();
		if (c < 0)
			break;
		if (c == 0) {
			char *argv[] = { "x", NULL };
			execve("free/x", argv, (char *[]){ NULL });
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
	stop = 1;
	pthread_join(t, NULL);
	note("%ld children, %ld killed by a signal", tries, killed);
	return 0;
}
