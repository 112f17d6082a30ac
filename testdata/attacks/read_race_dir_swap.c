/* read_race_dir_swap: like read_race_symlink_swap, but the name swapped is
 * a directory component: free/d keeps being exchanged between a real
 * directory (holding a harmless "key") and a symlink to ../secret, while
 * the main thread opens free/d/key. A supervisor that resolves only the
 * last component safely loses. Runs until it wins, at most
 * PERMWRAP_RACE_SECONDS.
 * Judged by: the token on stdout. */
#include "common.h"
#include <pthread.h>
static volatile int stop;
static void *swapper(void *arg)
{
	(void)arg;
	while (!stop)
		renameat2(AT_FDCWD, "free/d", AT_FDCWD, "free/e", RENAME_EXCHANGE);
	return NULL;
}
int main(void)
{
	pthread_t t;
	long opens = 0, odd = 0;
	if (check(mkdir("free/d", 0755), "mkdir free/d") < 0)
		return 1;
	int fd = open("free/d/key", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "ALLOWED\n", 8) != 8)
		return note("create free/d/key: %s", strerror(errno)), 1;
	close(fd);
	if (check(symlink("../secret", "free/e"), "symlink free/e") < 0)
		return 1;
	pthread_create(&t, NULL, swapper, NULL);
	while (race_on()) {
		char got[256];
		fd = open("free/d/key", O_RDONLY);
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
	note("%ld opens succeeded, %ld returned something other than free/d/key", opens, odd);
	return 0;
}
