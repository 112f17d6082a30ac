/* exec_direct: execve("forbidden/prog").
 * Judged by: FORBIDDEN-MARKER on stdout or ./forbidden-ran existing. */
#include "common.h"
int main(void)
{
	char *argv[] = { "prog", NULL };
	execve("forbidden/prog", argv, (char *[]){ NULL });
	note("execve forbidden/prog: %s", strerror(errno));
	return 0;
}
