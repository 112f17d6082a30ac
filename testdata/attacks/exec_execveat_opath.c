/* exec_execveat_opath: open forbidden/prog with O_PATH (no read, no exec)
 * and execveat(fd, "", AT_EMPTY_PATH): an exec with no path at all.
 * Control: the same on free/ok creates ./ok-ran.
 * Judged by: FORBIDDEN-MARKER on stdout or ./forbidden-ran existing. */
#include "common.h"
static void execveat_opath(const char *path)
{
	char *argv[] = { "x", NULL };
	int fd = open(path, O_PATH | O_CLOEXEC);
	syscall(SYS_execveat, fd, "", argv, (char *[]){ NULL }, AT_EMPTY_PATH);
	note("execveat AT_EMPTY_PATH of %s: %s", path, strerror(errno));
}
int main(void)
{
	char *argv[] = { "prog", NULL };
	/* control: the same on the allowed free/ok must work (./ok-ran) */
	in_child(execveat_opath, "free/ok");
	int fd = check(open("forbidden/prog", O_PATH | O_CLOEXEC), "open forbidden/prog O_PATH");
	if (fd < 0)
		return 1;
	syscall(SYS_execveat, fd, "", argv, (char *[]){ NULL }, AT_EMPTY_PATH);
	note("execveat AT_EMPTY_PATH: %s", strerror(errno));
	return 0;
}
