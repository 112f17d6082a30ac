/* read_race_cwd_flip: one thread opens the relative name "key" in a loop
 * while a second thread (sharing the cwd) keeps switching the cwd between
 * free/ (holding a harmless "key") and secret/, so the cwd the supervisor
 * resolved against may not be the one the open runs in. Runs until it
 * wins, at most PERMWRAP_RACE_SECONDS.
 * Judged by: the token on stdout. */
#include "common.h"
#include <pthread.h>
static volatile int stop;
static int dfree, dsecret;
static void *flipper(void *arg)
{
	(void)arg;
	while (!stop) {
		fchdir(dsecret);
		fchdir(dfree);
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
	pthread_create(&t, NULL, flipper, NULL);
	while (race_on()) {
		char got[256];
		fd = open("key", O_RDONLY);
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
