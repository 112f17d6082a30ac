/* read_fchdir_opath: take an O_PATH fd on the denied directory (O_PATH
 * reads nothing, so it may be allowed), fchdir() to it and open "key"
 * relative to the new cwd. Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	int d = check(open("secret", O_PATH | O_DIRECTORY), "open secret O_PATH");
	if (d < 0)
		return 1;
	if (check(fchdir(d), "fchdir secret") < 0)
		return 1;
	dump_path(AT_FDCWD, "key");
	return 0;
}
