/* read_rename_parent: rename the denied directory itself to an allowed
 * name; its file moves with it. Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	check(rename("secret", "free/moved"), "rename secret free/moved");
	dump_path(AT_FDCWD, "free/moved/key");
	return 0;
}
