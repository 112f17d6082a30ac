/* write_create: create new files inside the protected directory with
 * open(O_CREAT), O_CREAT|O_EXCL, creat(2), O_RDONLY|O_CREAT, and
 * openat(O_CREAT) relative to an O_PATH fd of the directory.
 * Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	write_path(AT_FDCWD, "protected/new1", O_CREAT);
	write_path(AT_FDCWD, "protected/new2", O_CREAT | O_EXCL);
	int fd = check(creat("protected/new3", 0644), "creat protected/new3");
	if (fd >= 0)
		scribble(fd, "protected/new3");
	/* O_CREAT with a read-only access mode still creates */
	check(open("protected/new4", O_RDONLY | O_CREAT, 0644), "open protected/new4 O_RDONLY|O_CREAT");
	/* relative to an O_PATH fd of the directory */
	int d = open("protected", O_PATH | O_DIRECTORY);
	write_path(d, "new5", O_CREAT);
	return 0;
}
