/* write_chown: chown(2)/lchown(2) protected/file to another owner, and
 * fchown(2) on a read-only fd of it. Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(chown("protected/file", 4242, 4242), "chown protected/file");
	check(lchown("protected/file", 4343, 4343), "lchown protected/file");
	int fd = check(open("protected/file", O_RDONLY), "open protected/file O_RDONLY");
	if (fd >= 0)
		check(fchown(fd, 4444, 4444), "fchown");
	return 0;
}
