/* write_xattr: set a user.* extended attribute on protected/file by path
 * (setxattr, lsetxattr) and on a read-only fd (fsetxattr).
 * Judged by: protected/ changing (its xattrs). */
#include "common.h"
#include <sys/xattr.h>
int main(void)
{
	check(setxattr("protected/file", "user.pwned", "1", 1, 0), "setxattr protected/file");
	check(lsetxattr("protected/file", "user.pwned2", "1", 1, 0), "lsetxattr protected/file");
	int fd = check(open("protected/file", O_RDONLY), "open protected/file O_RDONLY");
	if (fd >= 0)
		check(fsetxattr(fd, "user.pwned3", "1", 1, 0), "fsetxattr");
	return 0;
}
