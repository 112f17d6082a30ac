/* read_listing_dirfd: a listing (a read-only open with O_DIRECTORY) is
 * not judged when listings are free, so the denied directory secret/ can
 * be opened that way: list it, then openat() "key" relative to that fd.
 * Control: free/ opened the same way, then openat "a", prints ALLOWED.
 * Judged by: the token on stdout. */
#include "common.h"
#include <dirent.h>
static void list(int d, const char *what)
{
	char buf[4096];
	long n = syscall(SYS_getdents64, d, buf, sizeof buf);
	for (long off = 0; off < n;) {
		struct dirent64 *e = (struct dirent64 *)(buf + off);
		note("%s holds %s", what, e->d_name);
		off += e->d_reclen;
	}
}
int main(void)
{
	int f = check(open("free", O_RDONLY | O_DIRECTORY), "open free O_DIRECTORY");
	if (f >= 0)
		dump_path(f, "a"); /* control: ALLOWED on stdout */
	int d = check(open("secret", O_RDONLY | O_DIRECTORY | O_CLOEXEC), "open secret O_DIRECTORY");
	if (d < 0)
		return 1;
	list(d, "secret/");
	dump_path(d, "key");
	return 0;
}
