/* read_symlink_file: create free/sk -> ../secret/key (the link lives in an
 * allowed directory) and read through it.
 * Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	check(symlink("../secret/key", "free/sk"), "symlink free/sk");
	dump_path(AT_FDCWD, "free/sk");
	return 0;
}
