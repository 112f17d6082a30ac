/* write_tmpfile_linkat: create an anonymous O_TMPFILE in an allowed
 * directory, fill it, then give it a name inside the protected directory
 * with linkat(AT_EMPTY_PATH) and, failing that, linkat of
 * /proc/self/fd/N with AT_SYMLINK_FOLLOW. Control: the same link into
 * free/tmpctl must work. Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	char p[64];
	int fd = check(open("free", O_TMPFILE | O_WRONLY, 0644), "open free O_TMPFILE");
	if (fd < 0)
		return 1;
	scribble(fd, "tmpfile");
	/* control: linking it into an allowed directory must work (free/tmpctl) */
	check(linkat(fd, "", AT_FDCWD, "free/tmpctl", AT_EMPTY_PATH), "linkat AT_EMPTY_PATH free/tmpctl");
	if (check(linkat(fd, "", AT_FDCWD, "protected/tmp1", AT_EMPTY_PATH), "linkat AT_EMPTY_PATH protected/tmp1") < 0) {
		snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
		check(linkat(AT_FDCWD, p, AT_FDCWD, "protected/tmp2", AT_SYMLINK_FOLLOW),
		      "linkat /proc/self/fd/N protected/tmp2");
	}
	return 0;
}
