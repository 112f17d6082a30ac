/* exec_execveat_opath: open forbidden/prog with O_PATH (no read, no exec)
 * and execveat(fd, "", AT_EMPTY_PATH): an exec with no path at all.
 * Judged by: FORBIDDEN-MARKER on stdout or ./forbidden-ran existing. */
#include "common.h"
int main(void)
{
	char *argv[] = { "prog", NULL };
	int fd = check(open("forbidden/prog", O_PATH | O_CLOEXEC), "open forbidden/prog O_PATH");
	if (fd < 0)
		return 1;
	syscall(SYS_execveat, fd, "", argv, (char *[]){ NULL }, AT_EMPTY_PATH);
	note("execveat AT_EMPTY_PATH: %s", strerror(errno));
	return 0;
}
