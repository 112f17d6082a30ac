/* write_race_symlink_meta: one thread keeps exchanging free/x between a
 * regular file and a symlink to ../protected/file while the main thread
 * calls chmod, utimensat and truncate on free/x. A supervisor that checks
 * the name and then performs the call by name (so the kernel follows the
 * symlink swapped in after the check) changes the protected file.
 * Runs 4 s. Judged by: protected/ changing. */
#include "common.h"
#include <pthread.h>
#include <time.h>
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
	int fd = open("free/x", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "ALLOWED\n", 8) != 8)
		return note("create free/x: %s", strerror(errno)), 1;
	close(fd);
	if (check(symlink("../protected/file", "free/y"), "symlink free/y") < 0)
		return 1;
	time_t end = time(NULL) + 4;
	pthread_create(&t, NULL, swapper, NULL);
	while (time(NULL) < end) {
		ok += chmod("free/x", 0600) == 0;
		ok += utimensat(AT_FDCWD, "free/x", ts, 0) == 0;
		ok += truncate("free/x", 3) == 0;
	}
	stop = 1;
	pthread_join(t, NULL);
	note("%ld calls succeeded", ok);
	return 0;
}
