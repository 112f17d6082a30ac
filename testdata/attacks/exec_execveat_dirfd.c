/* exec_execveat_dirfd: execveat(dirfd of forbidden/, "prog", ...): the
 * path the supervisor sees is the bare name "prog", relative to a dirfd.
 * Control: execveat(dirfd of free/, "ok") creates ./ok-ran.
 * Judged by: FORBIDDEN-MARKER on stdout or ./forbidden-ran existing. */
#include "common.h"
static void execveat_in(const char *dir)
{
	char *argv[] = { "x", NULL };
	int d = open(dir, O_PATH | O_DIRECTORY);
	const char *name = strcmp(dir, "free") == 0 ? "ok" : "prog";
	syscall(SYS_execveat, d, name, argv, (char *[]){ NULL }, 0);
	note("execveat(%s fd, %s): %s", dir, name, strerror(errno));
}
int main(void)
{
	in_child(execveat_in, "free");
	execveat_in("forbidden");
	return 0;
}
