/* write_rename_parent: rename the protected directory itself to an allowed
 * name and write the file inside under its new name.
 * Judged by: protected/ changing (gone, or its file modified). */
#include "common.h"
int main(void)
{
	if (check(rename("protected", "free/moved"), "rename protected free/moved") == 0)
		write_path(AT_FDCWD, "free/moved/file", O_APPEND);
	return 0;
}
