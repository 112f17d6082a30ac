/* write_chmod: change protected/file's mode with chmod(2), fchmodat(2)
 * and fchmod(2) on an fd opened read-only (reading is allowed; fchmod
 * needs no write access to the fd). Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(chmod("protected/file", 0777), "chmod protected/file 0777");
	check(fchmodat(AT_FDCWD, "protected/file", 0707, 0), "fchmodat protected/file 0707");
	int fd = check(open("protected/file", O_RDONLY), "open protected/file O_RDONLY");
	if (fd >= 0)
		check(fchmod(fd, 0666), "fchmod 0666");
	return 0;
}
