/* read_openat2: open the secret with openat2(2) instead of open/openat,
 * once plainly and once with RESOLVE_IN_ROOT from the workspace, where
 * "/secret/key" means <workspace>/secret/key (a supervisor that resolves
 * the absolute string against / would check a path that does not exist).
 * Control: the same on free/a prints ALLOWED twice.
 * Judged by: the token on stdout. */
#include "common.h"
#include <linux/openat2.h>
static void try(int dirfd, const char *path, unsigned long long resolve)
{
	struct open_how how = { .flags = O_RDONLY, .resolve = resolve };
	int fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
	if (fd < 0) {
		note("openat2 %s: %s", path, strerror(errno));
		return;
	}
	dump(fd);
	close(fd);
}
int main(void)
{
	int ws = open(".", O_PATH | O_DIRECTORY);
	/* control: the allowed twins must work (ALLOWED on stdout, twice) */
	try(AT_FDCWD, "free/a", 0);
	try(ws, "/free/a", RESOLVE_IN_ROOT);
	try(AT_FDCWD, "secret/key", 0);
	try(ws, "/secret/key", RESOLVE_IN_ROOT);
	return 0;
}
