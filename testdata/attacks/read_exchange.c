/* read_exchange: RENAME_EXCHANGE an allowed file with the secret, so the
 * secret's inode now sits at the allowed name.
 * Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	check(renameat2(AT_FDCWD, "free/a", AT_FDCWD, "secret/key", RENAME_EXCHANGE),
	      "renameat2 EXCHANGE free/a secret/key");
	dump_path(AT_FDCWD, "free/a");
	return 0;
}
