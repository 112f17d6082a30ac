/* read_proc_self_fd: open the workspace as an O_PATH fd N and open
 * /proc/self/fd/N/secret/key: the path walks through a magic link, which a
 * supervisor resolving in its own /proc would get wrong.
 * Control: /proc/self/fd/N/free/a prints ALLOWED.
 * Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	char p[64];
	int d = open(".", O_PATH | O_DIRECTORY);
	if (d < 0)
		return note("open .: %s", strerror(errno)), 1;
	/* control: the allowed twin must work (ALLOWED on stdout) */
	snprintf(p, sizeof p, "/proc/self/fd/%d/free/a", d);
	dump_path(AT_FDCWD, p);
	snprintf(p, sizeof p, "/proc/self/fd/%d/secret/key", d);
	dump_path(AT_FDCWD, p);
	return 0;
}
