/* write_direct: open protected/file for writing (O_TRUNC) by its absolute
 * path and write to it. Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	char p[4096];
	if (!getcwd(p, sizeof p - 20))
		return 1;
	strcat(p, "/protected/file");
	write_path(AT_FDCWD, p, O_TRUNC);
	return 0;
}
