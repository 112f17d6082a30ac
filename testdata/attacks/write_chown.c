/* write_chown: chown(2)/lchown(2) protected/file to another owner, and
 * fchown(2) on a read-only fd of it, and fchownat(AT_EMPTY_PATH) on an
 * O_PATH fd. Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(chown("protected/file", 4242, 4242), "chown protected/file");
	check(lchown("protected/file", 4343, 4343), "lchown protected/file");
	int fd = check(open("protected/file", O_RDONLY), "open protected/file O_RDONLY");
	if (fd >= 0)
		check(fchown(fd, 4444, 4444), "fchown");
	int p = check(open("protected/file", O_PATH), "open protected/file O_PATH");
	if (p >= 0)
		check(fchownat(p, "", 4545, 4545, AT_EMPTY_PATH), "fchownat O_PATH fd AT_EMPTY_PATH");
	return 0;
}
