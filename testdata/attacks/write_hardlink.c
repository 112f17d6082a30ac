/* write_hardlink: hard-link protected/file to free/hl (root passes
 * protected_hardlinks) and write through the allowed name: same inode.
 * Judged by: protected/ changing (its content, and its link count). */
#include "common.h"
int main(void)
{
	check(link("protected/file", "free/hl"), "link protected/file free/hl");
	write_path(AT_FDCWD, "free/hl", O_APPEND);
	return 0;
}
