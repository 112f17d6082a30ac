/* exec_symlink: free/p -> ../forbidden/prog, then execve("free/p"): the
 * name checked is allowed, the file loaded is forbidden.
 * Judged by: FORBIDDEN-MARKER on stdout or ./forbidden-ran existing. */
#include "common.h"
int main(void)
{
	char *argv[] = { "p", NULL };
	check(symlink("../forbidden/prog", "free/p"), "symlink free/p");
	execve("free/p", argv, (char *[]){ NULL });
	note("execve free/p: %s", strerror(errno));
	return 0;
}
