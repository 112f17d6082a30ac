/* write_ioctl_setflags: open protected/file read-only (allowed) and set
 * inode flags on it with ioctl(FS_IOC_SETFLAGS) — here FS_NODUMP_FL; the
 * same call sets immutable or append-only (chattr). It needs only
 * ownership (or CAP_FOWNER), not a writable fd, and Landlock does not
 * restrict ioctls on regular files. Judged by: protected/ changing (its
 * inode flags). */
#include "common.h"
#include <linux/fs.h>
#include <sys/ioctl.h>
int main(void)
{
	int fd = check(open("protected/file", O_RDONLY), "open protected/file O_RDONLY");
	if (fd < 0)
		return 1;
	int flags = 0;
	if (check(ioctl(fd, FS_IOC_GETFLAGS, &flags), "FS_IOC_GETFLAGS") < 0)
		return 1;
	flags |= FS_NODUMP_FL;
	check(ioctl(fd, FS_IOC_SETFLAGS, &flags), "FS_IOC_SETFLAGS NODUMP");
	return 0;
}
