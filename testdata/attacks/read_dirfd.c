/* read_dirfd: open the workspace as a directory fd and openat() the secret
 * relative to it, so the path the kernel sees is not absolute.
 * Control: free/a by the same dirfd prints ALLOWED.
 * Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	int d = open(".", O_RDONLY | O_DIRECTORY);
	if (d < 0)
		return note("open .: %s", strerror(errno)), 1;
	dump_path(d, "free/a"); /* control: ALLOWED on stdout */
	dump_path(d, "secret/key");
	return 0;
}
