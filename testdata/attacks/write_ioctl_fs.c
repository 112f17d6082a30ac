/* write_ioctl_fs: change protected/file through a read-only fd with
 * filesystem ioctls the kernel gates on ownership, not on the fd's mode:
 *   1. FS_IOC_SETVERSION (the inode generation)
 *   2. EXT4_IOC_SETVERSION (the same, ext4's number)
 *   3. FS_IOC_ENABLE_VERITY (the file read-only for good; where the file
 *      system supports it)
 *   4. FS_IOC_SET_ENCRYPTION_POLICY on protected/empty (where supported)
 *   5. FAT_IOCTL_SET_ATTRIBUTES (on FAT only)
 * Control: FS_IOC_SETVERSION on free/a works and creates ./twin-ok.
 * Judged by: protected/ changing (generation, flags, ...). */
#include "common.h"
#include <sys/ioctl.h>
#include <linux/fs.h>
#define EXT4_IOC_SETVERSION _IOW('f', 4, long)
#define FAT_IOCTL_SET_ATTRIBUTES _IOW('r', 0x11, unsigned int)
#ifndef FS_IOC_ENABLE_VERITY
#define FS_IOC_ENABLE_VERITY _IOW('f', 133, struct { unsigned int a[32]; })
#endif
int main(void)
{
	int gen = 4242;
	int c = open("free/a", O_RDONLY);
	if (check(ioctl(c, FS_IOC_SETVERSION, &gen), "FS_IOC_SETVERSION free/a") == 0)
		close(open("twin-ok", O_WRONLY | O_CREAT, 0644));
	close(c);

	int fd = check(open("protected/file", O_RDONLY), "open protected/file O_RDONLY");
	if (fd < 0)
		return 1;
	gen = 777;
	check(ioctl(fd, FS_IOC_SETVERSION, &gen), "FS_IOC_SETVERSION protected/file");
	gen = 778;
	check(ioctl(fd, EXT4_IOC_SETVERSION, &gen), "EXT4_IOC_SETVERSION protected/file");
	unsigned int verity[32] = { 1, 1, 4096 };
	check(ioctl(fd, FS_IOC_ENABLE_VERITY, verity), "FS_IOC_ENABLE_VERITY protected/file");
	unsigned int attrs = 0x1; /* ATTR_RO */
	check(ioctl(fd, FAT_IOCTL_SET_ATTRIBUTES, &attrs), "FAT_IOCTL_SET_ATTRIBUTES protected/file");
	int d = check(open("protected/empty", O_RDONLY | O_DIRECTORY), "open protected/empty");
	unsigned char pol[12] = { 0, 1, 4, 0 };
	check(ioctl(d, _IOR('f', 19, unsigned char[12]), pol), "FS_IOC_SET_ENCRYPTION_POLICY protected/empty");
	return 0;
}
