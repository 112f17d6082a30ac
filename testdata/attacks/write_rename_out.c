/* write_rename_out: move protected/file out to an allowed name (it
 * disappears from protected/, and is then writable as free/out).
 * Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	if (check(rename("protected/file", "free/out"), "rename protected/file free/out") == 0)
		write_path(AT_FDCWD, "free/out", O_APPEND);
	return 0;
}
