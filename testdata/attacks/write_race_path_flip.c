/* write_race_path_flip: the TOCTOU race on the write side. One thread
 * opens a path buffer O_WRONLY|O_APPEND in a loop and writes to what it
 * got, while a second thread flips the buffer between "free/a" and
 * "protected/file". Runs 4 s. Judged by: protected/ changing. */
#include "common.h"
#include <pthread.h>
#include <time.h>
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
	time_t end = time(NULL) + 4;
	pthread_create(&t, NULL, flipper, NULL);
	while (time(NULL) < end) {
		int fd = open(buf, O_WRONLY | O_APPEND);
		if (fd < 0)
			continue;
		opens++;
		(void)!write(fd, "X", 1);
		close(fd);
	}
	stop = 1;
	pthread_join(t, NULL);
	note("%ld opens for writing succeeded", opens);
	return 0;
}
