/* read_userns_bind: make a new user and mount namespace, map ourselves to
 * root in it, bind-mount the denied directory over an allowed one
 * (free/mnt) and read the secret through the allowed name. A policy on
 * names is only as good as the mount table behind the names.
 * Judged by: the token on stdout. */
#include "common.h"
#include <sched.h>
#include <sys/mount.h>
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
	check(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "mount --make-rprivate /");
	if (check(mount("secret", "free/mnt", NULL, MS_BIND, NULL), "mount --bind secret free/mnt") < 0)
		return 1;
	dump_path(AT_FDCWD, "free/mnt/key");
	return 0;
}
