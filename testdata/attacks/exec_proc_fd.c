/* exec_proc_fd: open forbidden/prog with O_PATH and execve
 * /proc/self/fd/N, a magic link the supervisor must not follow in its own
 * /proc. Control: the same on free/ok creates ./ok-ran. Judged by: FORBIDDEN-MARKER on stdout or ./forbidden-ran existing. */
#include "common.h"
static void exec_via_proc(const char *path)
{
	char p[64];
	char *argv[] = { "x", NULL };
	snprintf(p, sizeof p, "/proc/self/fd/%d", open(path, O_PATH));
	execve(p, argv, (char *[]){ NULL });
	note("execve %s (%s): %s", p, path, strerror(errno));
}
int main(void)
{
	char p[64];
	/* control: the same on the allowed free/ok must work (./ok-ran) */
	in_child(exec_via_proc, "free/ok");
	char *argv[] = { "prog", NULL };
	int fd = check(open("forbidden/prog", O_PATH), "open forbidden/prog O_PATH");
	if (fd < 0)
		return 1;
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	execve(p, argv, (char *[]){ NULL });
	note("execve %s: %s", p, strerror(errno));
	return 0;
}
