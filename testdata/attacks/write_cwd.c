/* write_cwd: chdir into the protected directory (chdir is not a write) and
 * write a bare relative name. Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	if (check(chdir("protected"), "chdir protected") < 0)
		return 1;
	write_path(AT_FDCWD, "file", O_APPEND);
	return 0;
}
