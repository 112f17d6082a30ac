/* write_unlink: unlink protected/file and rmdir protected/empty.
 * Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(unlink("protected/file"), "unlink protected/file");
	check(rmdir("protected/empty"), "rmdir protected/empty");
	return 0;
}
