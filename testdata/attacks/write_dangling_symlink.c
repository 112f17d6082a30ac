/* write_dangling_symlink: free/dl -> ../protected/new, a link to a name
 * that does not exist yet, then open("free/dl", O_CREAT|O_WRONLY): the
 * kernel follows the dangling link and creates protected/new.
 * Judged by: protected/ changing. */
#include "common.h"
int main(void)
{
	check(symlink("../protected/new", "free/dl"), "symlink free/dl");
	write_path(AT_FDCWD, "free/dl", O_CREAT);
	return 0;
}
