/* write_whiteout: renameat2(RENAME_WHITEOUT) moves protected/file out and
 * leaves a whiteout device in its place (root has CAP_MKNOD).
 * Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(renameat2(AT_FDCWD, "protected/file", AT_FDCWD, "free/w", RENAME_WHITEOUT),
	      "renameat2 WHITEOUT protected/file free/w");
	return 0;
}
