/* exec_symlink: free/p -> ../forbidden/prog, then execve("free/p"): the
 * name checked is allowed, the file loaded is forbidden.
 * Control: free/okl -> ok creates ./ok-ran.
 * Judged by: FORBIDDEN-MARKER on stdout or ./forbidden-ran existing. */
#include "common.h"
static void exec_path(const char *path)
{
	char *argv[] = { "x", NULL };
	execve(path, argv, (char *[]){ NULL });
	note("execve %s: %s", path, strerror(errno));
}
int main(void)
{
	char *argv[] = { "p", NULL };
	/* control: a symlink to the allowed free/ok must work (./ok-ran) */
	check(symlink("ok", "free/okl"), "symlink free/okl");
	in_child(exec_path, "free/okl");
	check(symlink("../forbidden/prog", "free/p"), "symlink free/p");
	execve("free/p", argv, (char *[]){ NULL });
	note("execve free/p: %s", strerror(errno));
	return 0;
}
