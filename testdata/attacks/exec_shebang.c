/* exec_shebang: write free/s, a script whose #! interpreter is
 * <workspace>/forbidden/prog, and execute the script: the kernel then
 * loads forbidden/prog as the interpreter although the file executed by
 * name is allowed. Control: free/c with #!<workspace>/free/ok creates
 * ./ok-ran. Judged by: FORBIDDEN-MARKER on stdout or
 * ./forbidden-ran existing. */
#include "common.h"
static void exec_path(const char *path)
{
	char *argv[] = { "x", NULL };
	execve(path, argv, (char *[]){ NULL });
	note("execve %s: %s", path, strerror(errno));
}
int main(void)
{
	char cwd[4000], line[4096];
	char *argv[] = { "s", NULL };
	if (!getcwd(cwd, sizeof cwd))
		return 1;
	/* control: a script whose interpreter is the allowed free/ok */
	int n = snprintf(line, sizeof line, "#!%s/free/ok\n", cwd);
	int cf = open("free/c", O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (cf < 0 || write(cf, line, n) != n)
		return 1;
	close(cf);
	in_child(exec_path, "free/c");
	n = snprintf(line, sizeof line, "#!%s/forbidden/prog\n", cwd);
	int fd = check(open("free/s", O_WRONLY | O_CREAT | O_TRUNC, 0755), "create free/s");
	if (fd < 0 || write(fd, line, n) != n)
		return 1;
	close(fd);
	execve("free/s", argv, (char *[]){ NULL });
	note("execve free/s: %s", strerror(errno));
	return 0;
}
