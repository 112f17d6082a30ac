/* write_via_symlink_file: free/pl -> ../protected/file, then the metadata
 * calls that follow symlinks: chmod, chown, truncate, utimensat, setxattr
 * on the allowed-looking name. Judged by: protected/ changing. */
#include "common.h"
#include <sys/xattr.h>
int main(void)
{
	struct timespec ts[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	check(symlink("../protected/file", "free/pl"), "symlink free/pl");
	check(chmod("free/pl", 0600), "chmod free/pl");
	check(chown("free/pl", 4242, 4242), "chown free/pl");
	check(utimensat(AT_FDCWD, "free/pl", ts, 0), "utimensat free/pl");
	check(setxattr("free/pl", "user.pwned", "1", 1, 0), "setxattr free/pl");
	check(truncate("free/pl", 0), "truncate free/pl");
	return 0;
}
