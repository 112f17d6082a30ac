/* read_rename_out: move the secret out of its directory to an allowed name
 * and read it there. Judged by: the token on stdout (and secret/ changing). */
#include "common.h"
int main(void)
{
	check(rename("secret/key", "free/stolen"), "rename secret/key free/stolen");
	dump_path(AT_FDCWD, "free/stolen");
	return 0;
}
