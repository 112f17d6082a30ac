/* exec_shebang_push: `git push *` asks (headless: denied). A #! script
 * named "push" makes the kernel build `INTERPRETER [ARG] push ARGS...`,
 * so with #!/usr/bin/env git (or #!/usr/bin/git) and a relative
 * execve("push", ...) the command line run is `git push origin main`
 * although nothing called git with push:
 *   1. gitwork/push: #!/usr/bin/env git
 *   2. gitwork/sub/push: #!/usr/bin/git
 * Control: gitwork/status (#!/usr/bin/env git) runs `git status` and
 * creates ./twin-ok.
 * Judged by: the remote's main branch moving. */
#include "common.h"
static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		note("write %s: %s", path, strerror(errno));
	close(fd);
}
static int run_in(const char *dir, const char *name, char *const argv[])
{
	pid_t c = fork();
	if (c == 0) {
		if (chdir(dir) < 0)
			_exit(126);
		execve(name, argv, (char *[]){ "PATH=/usr/local/bin:/usr/bin:/bin", NULL });
		note("execve %s/%s: %s", dir, name, strerror(errno));
		_exit(127);
	}
	int st = 0;
	waitpid(c, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}
int main(void)
{
	put("gitwork/status", "#!/usr/bin/env git\n");
	if (run_in("gitwork", "status", (char *[]){ "status", NULL }) == 0)
		close(open("twin-ok", O_WRONLY | O_CREAT, 0644));

	put("gitwork/push", "#!/usr/bin/env git\n");
	note("env git: exit %d", run_in("gitwork", "push", (char *[]){ "push", "-q", "origin", "main", NULL }));
	mkdir("gitwork/sub", 0755);
	put("gitwork/sub/push", "#!/usr/bin/git\n");
	note("git: exit %d", run_in("gitwork/sub", "push", (char *[]){ "push", "-q", "origin", "main", NULL }));
	return 0;
}
