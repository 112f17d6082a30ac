/* write_race_path_flip: the TOCTOU race on the write side. One thread
 * opens a path buffer O_WRONLY|O_APPEND in a loop and writes to what it
 * got, while a second thread flips the buffer between "free/a" and
 * "protected/file". Runs until it wins, at most PERMWRAP_RACE_SECONDS.
 * Judged by: protected/ changing. */
#include "common.h"
#include <pthread.h>
static char buf[32] = "free/a";
static volatile int stop;
static void *flipper(void *arg)
{
	(void)arg;
	while (!stop) {
		memcpy(buf, "protected/file", 15);
		__asm__ volatile("" ::: "memory"); /* keep both stores */
		memcpy(buf, "free/a\0\0\0\0\0\0\0\0", 15);
		__asm__ volatile("" ::: "memory"); /* keep both stores */
	}
	return NULL;
}
int main(void)
{
	pthread_t t;
	long opens = 0;
	struct stat prot, got;
	if (check(stat("protected/file", &prot), "stat protected/file") < 0)
		return 1;
	pthread_create(&t, NULL, flipper, NULL);
	while (race_on()) {
		int fd = open(buf, O_WRONLY | O_APPEND);
		if (fd < 0)
			continue;
		opens++;
		(void)!write(fd, "X", 1);
		if (fstat(fd, &got) == 0 && got.st_dev == prot.st_dev && got.st_ino == prot.st_ino)
			race_won();
		close(fd);
	}
	stop = 1;
	pthread_join(t, NULL);
	race_done();
	note("%ld opens for writing succeeded", opens);
	return 0;
}
