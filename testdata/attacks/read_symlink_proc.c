/* read_symlink_proc: symlinks in an allowed directory whose targets go
 * through /proc/self: free/l1 -> /proc/self/cwd/secret/key and
 * free/l2 -> /proc/self/fd/N/secret/key (N = an O_PATH fd of the
 * workspace). "/proc/self" inside a link target means the process that
 * resolves it; a supervisor that follows the link in its own context
 * resolves the wrong process. Control: free/l0 -> /proc/self/cwd/free/a
 * and free/l3 -> /proc/self/fd/N/free/a print ALLOWED.
 * Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	char t[128];
	int d = open(".", O_PATH | O_DIRECTORY);
	/* move N away from the low numbers a supervisor is likely to hold */
	int n = fcntl(d, F_DUPFD, 77);
	check(symlink("/proc/self/cwd/free/a", "free/l0"), "symlink free/l0");
	check(symlink("/proc/self/cwd/secret/key", "free/l1"), "symlink free/l1");
	snprintf(t, sizeof t, "/proc/self/fd/%d/secret/key", n);
	check(symlink(t, "free/l2"), "symlink free/l2");
	snprintf(t, sizeof t, "/proc/self/fd/%d/free/a", n);
	check(symlink(t, "free/l3"), "symlink free/l3");
	dump_path(AT_FDCWD, "free/l0");
	dump_path(AT_FDCWD, "free/l3");
	dump_path(AT_FDCWD, "free/l1");
	dump_path(AT_FDCWD, "free/l2");
	return 0;
}
