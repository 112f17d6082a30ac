/* read_hardlink: hard-link the secret to an allowed name (free/hl) and
 * read that name. Root is not stopped by protected_hardlinks.
 * Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	check(link("secret/key", "free/hl"), "link secret/key free/hl");
	dump_path(AT_FDCWD, "free/hl");
	return 0;
}
