/* write_mknod: create a FIFO inside the protected directory with mknod(2)
 * and mkfifo. Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(mknod("protected/fifo", S_IFIFO | 0644, 0), "mknod protected/fifo");
	check(mknodat(AT_FDCWD, "protected/reg", S_IFREG | 0644, 0), "mknodat S_IFREG protected/reg");
	return 0;
}
