/* write_linkat_empty_path: open protected/file read-only (reading it is
 * allowed), give that fd an allowed name with linkat(AT_EMPTY_PATH) and
 * write through the name. Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	int fd = check(open("protected/file", O_RDONLY), "open protected/file O_RDONLY");
	if (fd < 0)
		return 1;
	check(linkat(fd, "", AT_FDCWD, "free/linked", AT_EMPTY_PATH), "linkat AT_EMPTY_PATH free/linked");
	write_path(AT_FDCWD, "free/linked", O_APPEND);
	return 0;
}
