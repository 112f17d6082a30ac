/* write_symlink_dir: free/pd -> ../protected, then create free/pd/new and
 * append to free/pd/file. Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(symlink("../protected", "free/pd"), "symlink free/pd");
	write_path(AT_FDCWD, "free/pd/new", O_CREAT);
	write_path(AT_FDCWD, "free/pd/file", O_APPEND);
	return 0;
}
