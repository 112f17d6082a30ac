/* write_listing_meta: open the write-denied directory protected/ as a
 * listing (O_DIRECTORY, read-only: not judged when listings are free) and
 * change it through that fd: fchmod, futimens, fsetxattr, and chattr's
 * FS_IOC_SETFLAGS (here FS_NODUMP_FL). None needs an fd opened for
 * writing. Judged by: protected/ changing (mode, mtime, xattrs, flags). */
#include "common.h"
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/xattr.h>
int main(void)
{
	int d = check(open("protected", O_RDONLY | O_DIRECTORY), "open protected O_DIRECTORY");
	if (d < 0)
		return 1;
	check(fchmod(d, 0777), "fchmod protected-fd 0777");
	check(futimens(d, NULL), "futimens protected-fd");
	check(fsetxattr(d, "user.pwned", "1", 1, 0), "fsetxattr protected-fd user.pwned");
	int flags = 0;
	if (check(ioctl(d, FS_IOC_GETFLAGS, &flags), "FS_IOC_GETFLAGS protected-fd") == 0) {
		flags |= FS_NODUMP_FL;
		check(ioctl(d, FS_IOC_SETFLAGS, &flags), "FS_IOC_SETFLAGS protected-fd NODUMP");
	}
	return 0;
}
