/* write_opath_reopen: an O_PATH fd on protected/file, reopened O_RDWR via
 * /proc/self/fd/N, then written. Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	char p[64];
	int fd = check(open("protected/file", O_PATH), "open protected/file O_PATH");
	if (fd < 0)
		return 1;
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	int w = check(open(p, O_RDWR | O_APPEND), "reopen O_RDWR");
	if (w >= 0)
		scribble(w, p);
	return 0;
}
