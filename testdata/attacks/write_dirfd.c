/* write_dirfd: openat(workspace fd, "protected/file", O_WRONLY|O_APPEND).
 * Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	int d = open(".", O_RDONLY | O_DIRECTORY);
	write_path(d, "protected/file", O_APPEND);
	return 0;
}
