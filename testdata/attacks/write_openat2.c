/* write_openat2: openat2(2) protected/file with O_WRONLY|O_TRUNC, plainly
 * and with RESOLVE_IN_ROOT from the workspace ("/protected/file").
 * Judged by: protected/ changing. */
#include "common.h"
#include <linux/openat2.h>
static void try(int dirfd, const char *path, unsigned long long resolve)
{
	struct open_how how = { .flags = O_WRONLY | O_APPEND, .resolve = resolve };
	int fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
	if (fd < 0) {
		note("openat2 %s: %s", path, strerror(errno));
		return;
	}
	scribble(fd, path);
	close(fd);
}
int main(void)
{
	try(AT_FDCWD, "protected/file", 0);
	int ws = open(".", O_PATH | O_DIRECTORY);
	try(ws, "/protected/file", RESOLVE_IN_ROOT);
	return 0;
}
