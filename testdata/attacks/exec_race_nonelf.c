/* exec_race_nonelf: the exec race aimed at verification of an image
 * that is neither ELF nor #! (free/junk, a text file with no #! line,
 * which only binfmt_misc could run). Until it wins, children exec while
 * another thread flips the path between free/junk and forbidden/prog
 * (half of them), or renames free/x back and forth between a copy of
 * free/junk and free/y, a symlink to forbidden/prog the test made (the
 * other half). A checker that accepted "any image" for a non-ELF file
 * would let forbidden/prog run verified.
 * Judged by: ./forbidden-ran existing. */
#include "common.h"
#include <pthread.h>
#include <linux/fs.h>
static char buf[32] = "free/junk";
static volatile long flips;
static void *flipper(void *arg)
{
	(void)arg;
	for (;; flips++) {
		memcpy(buf, "forbidden/prog", 15);
		__asm__ volatile("" ::: "memory");
		memcpy(buf, "free/junk\0\0\0\0\0", 15);
		__asm__ volatile("" ::: "memory");
	}
	return NULL;
}
static void *swapper(void *arg)
{
	(void)arg;
	for (;; flips++)
		syscall(SYS_renameat2, AT_FDCWD, "free/x", AT_FDCWD, "free/y", RENAME_EXCHANGE);
	return NULL;
}
int main(void)
{
	int fd = open("free/junk", O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0 || write(fd, "echo not a binary\n", 18) != 18)
		return 1;
	close(fd);
	fd = open("free/x", O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0 || write(fd, "echo not a binary\n", 18) != 18)
		return 1;
	close(fd);
	long tries = 0, killed = 0;
	while (race_on()) {
		int swap = tries % 2;
		pid_t c = fork();
		if (c < 0)
			break;
		if (c == 0) {
			pthread_t t;
			char *argv[] = { "x", NULL };
			pthread_create(&t, NULL, swap ? swapper : flipper, NULL);
			while (flips < 100)
				;
			for (int i = 0; i < 50; i++)
				execve(swap ? "free/x" : buf, argv, (char *[]){ NULL });
			_exit(0);
		}
		int st;
		waitpid(c, &st, 0);
		tries++;
		if (WIFSIGNALED(st))
			killed++;
		if (access("forbidden-ran", F_OK) == 0)
			race_won();
	}
	race_done();
	note("%ld children, %ld killed by a signal", tries, killed);
	return 0;
}
