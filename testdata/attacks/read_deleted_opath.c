/* read_deleted_opath: keep an O_PATH handle on a read-denied .env, remove
 * its name, and reach the object again through the handle: an object
 * that had a name must be judged by the name it had, not let through as
 * "anonymous". Spellings, one .env each (dotenv/N/.env, set up by the
 * test, all holding the secret token):
 *   1. unlink, reopen /proc/self/fd/N
 *   2. rename another file over it, reopen /proc/thread-self/fd/N
 *   3. hard-link it to another .env first (so nlink stays 1), unlink,
 *      reopen /dev/fd/N
 *   4. as 3, then linkat(fd, "", free/stolen4, AT_EMPTY_PATH) and read
 *      the new name
 *   5. as 3, then linkat("/proc/self/fd/N", free/stolen5,
 *      AT_SYMLINK_FOLLOW) and read the new name
 *   6. unlink, reopen /proc/PID/fd/N (the numeric pid)
 * Control: the same on a file of free/ prints ALLOWED.
 * Judged by: the token on stdout. */
#include "common.h"
static int opath(const char *p)
{
	int fd = open(p, O_PATH);
	if (fd < 0)
		note("open %s O_PATH: %s", p, strerror(errno));
	return fd;
}
static void reopen(const char *fmt, int fd)
{
	char p[128];
	snprintf(p, sizeof p, fmt, fd);
	dump_path(AT_FDCWD, p);
}
int main(void)
{
	char p[128];
	/* control */
	int cf = open("free/tw", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (cf >= 0) {
		(void)!write(cf, "ALLOWED\n", 8);
		close(cf);
	}
	int c = opath("free/tw");
	check(unlink("free/tw"), "unlink free/tw");
	reopen("/proc/self/fd/%d", c);

	int fd = opath("dotenv/1/.env");
	check(unlink("dotenv/1/.env"), "unlink dotenv/1/.env");
	reopen("/proc/self/fd/%d", fd);

	cf = open("free/over", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (cf >= 0)
		close(cf);
	fd = opath("dotenv/2/.env");
	check(rename("free/over", "dotenv/2/.env"), "rename free/over over dotenv/2/.env");
	reopen("/proc/thread-self/fd/%d", fd);

	mkdir("dotenv/3b", 0755);
	check(link("dotenv/3/.env", "dotenv/3b/.env"), "link dotenv/3/.env dotenv/3b/.env");
	fd = opath("dotenv/3/.env");
	check(unlink("dotenv/3/.env"), "unlink dotenv/3/.env");
	reopen("/dev/fd/%d", fd);

	mkdir("dotenv/4b", 0755);
	check(link("dotenv/4/.env", "dotenv/4b/.env"), "link dotenv/4/.env dotenv/4b/.env");
	fd = opath("dotenv/4/.env");
	check(unlink("dotenv/4/.env"), "unlink dotenv/4/.env");
	if (check(linkat(fd, "", AT_FDCWD, "free/stolen4", AT_EMPTY_PATH), "linkat AT_EMPTY_PATH free/stolen4") == 0)
		dump_path(AT_FDCWD, "free/stolen4");

	mkdir("dotenv/5b", 0755);
	check(link("dotenv/5/.env", "dotenv/5b/.env"), "link dotenv/5/.env dotenv/5b/.env");
	fd = opath("dotenv/5/.env");
	check(unlink("dotenv/5/.env"), "unlink dotenv/5/.env");
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	if (check(linkat(AT_FDCWD, p, AT_FDCWD, "free/stolen5", AT_SYMLINK_FOLLOW), "linkat /proc/self/fd free/stolen5") == 0)
		dump_path(AT_FDCWD, "free/stolen5");

	fd = opath("dotenv/6/.env");
	check(unlink("dotenv/6/.env"), "unlink dotenv/6/.env");
	snprintf(p, sizeof p, "/proc/%d/fd/%d", (int)getpid(), fd);
	dump_path(AT_FDCWD, p);
	return 0;
}
