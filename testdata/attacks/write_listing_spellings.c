/* write_listing_spellings: opens that carry O_DIRECTORY but are more than
 * a listing, each aimed at the write-denied protected/: O_DIRECTORY|
 * O_CREAT of a new name (EINVAL on current kernels, a created file on
 * older ones), O_DIRECTORY|O_RDWR|O_TRUNC of protected/file, O_DIRECTORY|
 * O_RDWR of protected/ itself, and O_TMPFILE (__O_TMPFILE|O_DIRECTORY)
 * in protected/ given a name there by linkat. Judged by: protected/
 * changing. */
#include "common.h"
int main(void)
{
	char p[64];
	int fd = open("protected/new", O_RDONLY | O_DIRECTORY | O_CREAT, 0644);
	check(fd, "open protected/new O_DIRECTORY|O_CREAT");
	fd = open("protected/file", O_RDWR | O_DIRECTORY | O_TRUNC);
	if (check(fd, "open protected/file O_DIRECTORY|O_RDWR|O_TRUNC") >= 0)
		scribble(fd, "protected/file");
	check(open("protected", O_RDWR | O_DIRECTORY), "open protected O_DIRECTORY|O_RDWR");
	fd = open("protected", O_TMPFILE | O_WRONLY, 0644);
	if (check(fd, "open protected O_TMPFILE") >= 0) {
		scribble(fd, "tmpfile");
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		if (check(linkat(fd, "", AT_FDCWD, "protected/tmp1", AT_EMPTY_PATH), "linkat AT_EMPTY_PATH protected/tmp1") < 0)
			check(linkat(AT_FDCWD, p, AT_FDCWD, "protected/tmp2", AT_SYMLINK_FOLLOW), "linkat /proc/self/fd/N protected/tmp2");
	}
	return 0;
}
