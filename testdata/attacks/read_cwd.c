/* read_cwd: chdir into the denied directory, then open a bare name
 * relative to the new working directory.
 * Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	if (check(chdir("secret"), "chdir secret") < 0)
		return 1;
	dump_path(AT_FDCWD, "key");
	return 0;
}
