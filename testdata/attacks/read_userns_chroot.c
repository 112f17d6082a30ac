/* read_userns_chroot: become root of a new user namespace, chroot() into
 * the workspace and open "/secret/key": an absolute path that only means
 * <workspace>/secret/key relative to the new root. A supervisor that
 * resolves absolute paths against its own root checks /secret/key, which
 * no rule mentions. Judged by: the token on stdout. */
#include "common.h"
#include <sched.h>
int main(void)
{
	if (check(unshare(CLONE_NEWUSER), "unshare(NEWUSER)") < 0)
		return 1;
	if (check(chroot("."), "chroot .") < 0)
		return 1;
	dump_path(AT_FDCWD, "/secret/key");
	return 0;
}
