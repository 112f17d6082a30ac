/* read_race_symlink_swap: one thread opens free/x in a loop while a second
 * thread keeps exchanging free/x between a regular file and a symlink to
 * the secret (renameat2 RENAME_EXCHANGE, so the name never vanishes). A
 * supervisor that checks the name and lets the kernel resolve it again
 * loses. Runs until it wins, at most PERMWRAP_RACE_SECONDS. Anything read
 * that is not the regular file's content is printed.
 * Judged by: the token on stdout at least once (bare), never (permwrap). */
#include "common.h"
#include <pthread.h>
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
	long opens = 0, odd = 0;
	int fd = open("free/x", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "ALLOWED\n", 8) != 8)
		return note("create free/x: %s", strerror(errno)), 1;
	close(fd);
	if (check(symlink("../secret/key", "free/y"), "symlink free/y") < 0)
		return 1;
	pthread_create(&t, NULL, swapper, NULL);
	while (race_on()) {
		char got[256];
		fd = open("free/x", O_RDONLY);
		if (fd < 0)
			continue;
		opens++;
		ssize_t n = read(fd, got, sizeof got);
		close(fd);
		if (n > 0 && !(n == 8 && memcmp(got, "ALLOWED\n", 8) == 0)) {
			race_won();
			/* print the first few only: one is proof enough */
			if (++odd <= 20 && write(1, got, n) != n)
				break;
		}
	}
	stop = 1;
	pthread_join(t, NULL);
	race_done();
	note("%ld opens succeeded, %ld returned something other than the regular file", opens, odd);
	return 0;
}
