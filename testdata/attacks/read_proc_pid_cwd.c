/* read_proc_pid_cwd: a child process parks its working directory (in the
 * denied directory if it may chdir there, else in the workspace) and the
 * parent, after moving its own cwd to /, opens the secret through
 * /proc/CHILD/cwd/... — another process's cwd.
 * Judged by: the token on stdout. */
#include "common.h"
#include <signal.h>
#include <sys/wait.h>
int main(void)
{
	int p[2];
	char in;
	if (pipe(p) < 0)
		return 1;
	pid_t c = fork();
	if (c == 0) {
		char r = chdir("secret") == 0 ? 's' : 'w';
		(void)!write(p[1], &r, 1);
		pause();
		_exit(0);
	}
	if (read(p[0], &in, 1) != 1)
		return 1;
	if (chdir("/") < 0)
		return 1;
	char path[128];
	if (in == 's')
		snprintf(path, sizeof path, "/proc/%d/cwd/key", c);
	else
		snprintf(path, sizeof path, "/proc/%d/cwd/secret/key", c);
	note("child cwd is %s", in == 's' ? "secret/" : "the workspace");
	dump_path(AT_FDCWD, path);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	return 0;
}
