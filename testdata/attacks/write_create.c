/* write_create: create new files inside the protected directory with
 * open(O_CREAT), O_CREAT|O_EXCL and creat(2).
 * Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	write_path(AT_FDCWD, "protected/new1", O_CREAT);
	write_path(AT_FDCWD, "protected/new2", O_CREAT | O_EXCL);
	int fd = check(creat("protected/new3", 0644), "creat protected/new3");
	if (fd >= 0)
		scribble(fd, "protected/new3");
	return 0;
}
