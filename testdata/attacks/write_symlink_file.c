/* write_symlink_file: free/pl -> ../protected/file, then write through the
 * allowed name. Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(symlink("../protected/file", "free/pl"), "symlink free/pl");
	write_path(AT_FDCWD, "free/pl", O_APPEND);
	return 0;
}
