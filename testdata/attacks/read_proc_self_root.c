/* read_proc_self_root: open /proc/self/root/<workspace>/secret/key and
 * /proc/thread-self/cwd/secret/key (magic links to the root and cwd).
 * Control: the same three spellings of free/a print ALLOWED.
 * Judged by: the token on stdout. */
#include "common.h"
int main(void)
{
	char cwd[4000], p[4096];
	if (!getcwd(cwd, sizeof cwd))
		return 1;
	/* control: the allowed twins must work (ALLOWED on stdout, 3 times) */
	snprintf(p, sizeof p, "/proc/self/root%s/free/a", cwd);
	dump_path(AT_FDCWD, p);
	dump_path(AT_FDCWD, "/proc/thread-self/cwd/free/a");
	dump_path(AT_FDCWD, "/proc/self/cwd/free/a");
	snprintf(p, sizeof p, "/proc/self/root%s/secret/key", cwd);
	dump_path(AT_FDCWD, p);
	dump_path(AT_FDCWD, "/proc/thread-self/cwd/secret/key");
	dump_path(AT_FDCWD, "/proc/self/cwd/secret/key");
	return 0;
}
