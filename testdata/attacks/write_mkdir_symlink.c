/* write_mkdir_symlink: make a directory and a symlink inside the protected
 * directory. Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(mkdir("protected/dir", 0755), "mkdir protected/dir");
	check(symlink("/etc/hostname", "protected/link"), "symlink protected/link");
	return 0;
}
