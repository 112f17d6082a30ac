/* write_exchange: renameat2(RENAME_EXCHANGE) of free/evil and
 * protected/file. Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(renameat2(AT_FDCWD, "free/evil", AT_FDCWD, "protected/file", RENAME_EXCHANGE),
	      "renameat2 EXCHANGE free/evil protected/file");
	return 0;
}
