/* exec_hardlink: hard-link forbidden/prog to free/p (same inode, allowed
 * name) and execute that. Judged by: FORBIDDEN-MARKER on stdout or
 * ./forbidden-ran existing. */
#include "common.h"
int main(void)
{
	char *argv[] = { "p", NULL };
	check(link("forbidden/prog", "free/p"), "link forbidden/prog free/p");
	execve("free/p", argv, (char *[]){ NULL });
	note("execve free/p: %s", strerror(errno));
	return 0;
}
