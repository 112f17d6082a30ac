/* read_opath_reopen: get an O_PATH fd on the secret (an O_PATH open reads
 * nothing, so a lax supervisor may allow it) and reopen it readable
 * through /proc/self/fd/N. Control: the same on free/a prints ALLOWED.
 * Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	char p[64];
	/* control: the allowed twin must work (ALLOWED on stdout) */
	int ok = open("free/a", O_PATH);
	snprintf(p, sizeof p, "/proc/self/fd/%d", ok);
	dump_path(AT_FDCWD, p);
	int fd = check(open("secret/key", O_PATH), "open secret/key O_PATH");
	if (fd < 0)
		return 1;
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	dump_path(AT_FDCWD, p);
	return 0;
}
