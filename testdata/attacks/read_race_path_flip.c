/* read_race_path_flip: the classic seccomp-notify TOCTOU. One thread opens
 * a path buffer in a loop while a second thread flips the buffer between
 * an allowed file ("free/a") and the secret ("secret/key"), hoping the
 * supervisor checks the allowed string and the kernel then opens the
 * secret. Runs until it wins, at most PERMWRAP_RACE_SECONDS. Anything read
 * that is not free/a's content is printed.
 * Judged by: the token on stdout at least once (bare), never (permwrap). */
#include "common.h"
#include <pthread.h>
static char buf[32] = "free/a\0\0\0\0";
static volatile int stop;
static void *flipper(void *arg)
{
	(void)arg;
	while (!stop) {
		memcpy(buf, "secret/key", 11);
		__asm__ volatile("" ::: "memory"); /* keep both stores */
		memcpy(buf, "free/a\0\0\0\0", 11);
		__asm__ volatile("" ::: "memory"); /* keep both stores */
	}
	return NULL;
}
int main(void)
{
	pthread_t t;
	long opens = 0, odd = 0;
	pthread_create(&t, NULL, flipper, NULL);
	while (race_on()) {
		char got[256];
		int fd = open(buf, O_RDONLY);
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
	note("%ld opens succeeded, %ld returned something other than free/a", opens, odd);
	return 0;
}
