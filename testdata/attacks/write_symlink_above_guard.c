/* write_symlink_above_guard: area -> free/area, where area/ itself is not
 * guarded but area/conf.d/ is, then create free/area/conf.d/evil: a path
 * nothing guards. Anyone outside permwrap that reads area/conf.d/ later
 * (a login reading autostart entries, git running hooks) finds it there.
 * Every access through the link is judged at the target, so this is what
 * a symlink can do that a write could not: the link's own name is
 * allowed, and what it makes appear beneath it is the guarded part.
 * Judged by: area/conf.d/ changing.
 * Twin: free/twin -> t, then free/twin/ok, which lands in free/t/ok. */
#include "common.h"
#include <sys/stat.h>
int main(void)
{
	check(mkdir("free/t", 0755), "mkdir free/t");
	check(symlink("t", "free/twin"), "symlink free/twin");
	write_path(AT_FDCWD, "free/twin/ok", O_CREAT);

	check(mkdir("free/area", 0755), "mkdir free/area");
	check(mkdir("free/area/conf.d", 0755), "mkdir free/area/conf.d");
	if (symlink("free/area", "area") < 0)
		return note("symlink area: %s", strerror(errno)), 1;
	write_path(AT_FDCWD, "free/area/conf.d/evil", O_CREAT);
	return 0;
}
