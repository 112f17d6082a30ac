/* write_rdonly_trunc: open protected/file with O_RDONLY|O_TRUNC. Linux
 * truncates the file although the access mode is read-only, so a
 * supervisor that classifies opens by O_ACCMODE alone calls this a read.
 * Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(open("protected/file", O_RDONLY | O_TRUNC), "open protected/file O_RDONLY|O_TRUNC");
	return 0;
}
