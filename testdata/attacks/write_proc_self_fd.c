/* write_proc_self_fd: open the workspace as an O_PATH fd N and write
 * /proc/self/fd/N/protected/file (a path through a magic link).
 * Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	char p[64];
	int d = open(".", O_PATH | O_DIRECTORY);
	if (d < 0)
		return 1;
	snprintf(p, sizeof p, "/proc/self/fd/%d/protected/file", d);
	write_path(AT_FDCWD, p, O_APPEND);
	return 0;
}
