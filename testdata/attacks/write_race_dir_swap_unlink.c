/* write_race_dir_swap_unlink: one thread keeps exchanging free/d between a
 * real directory and a symlink to ../protected while the main thread
 * (re)creates free/d/file and unlinks it. A supervisor that checks the
 * parent and then unlinks by name (so the kernel resolves the swapped
 * parent again) deletes protected/file. Runs until it wins, at most
 * PERMWRAP_RACE_SECONDS.
 * Judged by: protected/ changing. */
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
	long unlinked = 0;
	if (check(mkdir("free/d", 0755), "mkdir free/d") < 0 ||
	    check(symlink("../protected", "free/e"), "symlink free/e") < 0)
		return 1;
	pthread_create(&t, NULL, swapper, NULL);
	while (race_on()) {
		int fd = open("free/d/file", O_WRONLY | O_CREAT, 0644);
		if (fd >= 0)
			close(fd);
		unlinked += unlink("free/d/file") == 0;
		if (access("protected/file", F_OK) < 0 && errno == ENOENT)
			race_won();
	}
	stop = 1;
	pthread_join(t, NULL);
	race_done();
	note("%ld unlinks succeeded", unlinked);
	return 0;
}
