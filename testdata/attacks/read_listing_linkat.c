/* read_listing_linkat: with secret/ opened as a listing (O_DIRECTORY,
 * read-only), give its key a second name in an allowed place by
 * linkat(dirfd, "key", AT_FDCWD, "free/k") and read that.
 * Judged by: the token on stdout (and secret/key's link count). */
#include "common.h"
int main(void)
{
	int d = check(open("secret", O_RDONLY | O_DIRECTORY), "open secret O_DIRECTORY");
	if (d < 0)
		return 1;
	if (check(linkat(d, "key", AT_FDCWD, "free/k", 0), "linkat secret-fd/key free/k") == 0)
		dump_path(AT_FDCWD, "free/k");
	return 0;
}
