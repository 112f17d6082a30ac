/* read_listing_rename: with secret/ opened as a listing (O_DIRECTORY,
 * read-only), move its key out by renameat(dirfd, "key", AT_FDCWD,
 * "free/k") and read it there.
 * Judged by: the token on stdout (and secret/ changing). */
#include "common.h"
int main(void)
{
	int d = check(open("secret", O_RDONLY | O_DIRECTORY), "open secret O_DIRECTORY");
	if (d < 0)
		return 1;
	if (check(renameat(d, "key", AT_FDCWD, "free/k"), "renameat secret-fd/key free/k") == 0)
		dump_path(AT_FDCWD, "free/k");
	return 0;
}
