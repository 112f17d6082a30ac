/* read_symlink_dir: create free/sd -> ../secret (a directory link in an
 * allowed directory) and read free/sd/key.
 * Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	check(symlink("../secret", "free/sd"), "symlink free/sd");
	dump_path(AT_FDCWD, "free/sd/key");
	return 0;
}
