/* write_coredump: the kernel writes a core dump itself, in the crashing
 * process's working directory, past every check of the opens permwrap
 * sees. chdir into protected/, raise RLIMIT_CORE (setrlimit and prlimit),
 * and crash. (Needs a core_pattern that names a file, as "core".)
 * Judged by: protected/ changing (a core file appears). */
#include "common.h"
#include <signal.h>
#include <sys/resource.h>
static void crash(const char *how)
{
	struct rlimit r = { RLIM_INFINITY, RLIM_INFINITY };
	if (how[0] == 's')
		check(setrlimit(RLIMIT_CORE, &r), "setrlimit RLIMIT_CORE");
	else
		check(prlimit(0, RLIMIT_CORE, &r, NULL), "prlimit RLIMIT_CORE");
	if (chdir("protected") < 0)
		_exit(1);
	signal(SIGABRT, SIG_DFL);
	abort();
}
int main(void)
{
	in_child(crash, "setrlimit");
	in_child(crash, "prlimit");
	return 0;
}
