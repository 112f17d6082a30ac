/* write_utimes: set protected/file's modification time with utimensat(2)
 * and futimens(2) on a read-only fd (root may set any time).
 * Judged by: protected/ changing (mtime). */
#include "common.h"
int main(void)
{
	struct timespec ts[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	check(utimensat(AT_FDCWD, "protected/file", ts, 0), "utimensat protected/file");
	int fd = check(open("protected/file", O_RDONLY), "open protected/file O_RDONLY");
	ts[1].tv_sec = 1100000000;
	if (fd >= 0)
		check(futimens(fd, ts), "futimens");
	return 0;
}
