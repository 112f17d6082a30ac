/* read_userns_open_tree: read_userns_bind with the new mount API: in a new
 * user and mount namespace, open_tree(OPEN_TREE_CLONE) the denied
 * directory and move_mount() the detached copy onto free/mnt, then read
 * the secret through the allowed name. Judged by: the token on stdout. */
#include "common.h"
#include <sched.h>
#include <sys/mount.h>
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
static void put(const char *file, const char *s)
{
	int fd = open(file, O_WRONLY);
	if (fd < 0 || write(fd, s, strlen(s)) < 0)
		note("write %s: %s", file, strerror(errno));
	if (fd >= 0)
		close(fd);
}
int main(void)
{
	char m[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (mkdir("free/mnt", 0755) < 0 && errno != EEXIST)
		return note("mkdir free/mnt: %s", strerror(errno)), 1;
	if (check(unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare(NEWUSER|NEWNS)") < 0)
		return 1;
	put("/proc/self/setgroups", "deny");
	snprintf(m, sizeof m, "0 %d 1", uid);
	put("/proc/self/uid_map", m);
	snprintf(m, sizeof m, "0 %d 1", gid);
	put("/proc/self/gid_map", m);
	int t = check(syscall(SYS_open_tree, AT_FDCWD, "secret", OPEN_TREE_CLONE | O_CLOEXEC), "open_tree secret CLONE");
	if (t < 0)
		return 1;
	if (check(syscall(SYS_move_mount, t, "", AT_FDCWD, "free/mnt", MOVE_MOUNT_F_EMPTY_PATH), "move_mount onto free/mnt") < 0)
		return 1;
	dump_path(AT_FDCWD, "free/mnt/key");
	return 0;
}
