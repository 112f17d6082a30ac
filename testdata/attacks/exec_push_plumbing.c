/* exec_push_plumbing: `git push *` asks (headless: denied). Push with
 * git's push plumbing, which never says push, from gitwork (a clone whose
 * remote is the local bare repository ../remote.git), each after a
 * commit of its own:
 *   1. git send-pack ../remote.git main
 *   2. the dashed form: /usr/lib/git-core/git-send-pack
 *   3. argv[0] dispatch: /usr/bin/git with argv[0] "git-send-pack"
 *   4. an alias given on the command line: git -c alias.sp=send-pack sp
 *   5. global options first: git -C . --no-pager send-pack
 * (git http-push needs a WebDAV server, and the remote helpers and
 * receive-pack are not command-rule territory: docs/bash-rules.md §9.)
 * Control: git fetch-pack ../remote.git main, plumbing that does not
 * push, creates ./twin-ok when it works.
 * Judged by: the remote's main branch moving. */
#include "common.h"
static const char *git = "/usr/bin/git";
static char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
static int spawn(const char *path, char *const argv[])
{
	pid_t c = fork();
	if (c == 0) {
		if (chdir("gitwork") < 0)
			_exit(126);
		execve(path, argv, envp);
		note("exec %s: %s", path, strerror(errno));
		_exit(127);
	}
	int st = 0;
	waitpid(c, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
static void commit(void)
{
	spawn(git, (char *[]){ "git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
		"commit", "-q", "--allow-empty", "-m", "next", NULL });
}
#define TO "../remote.git", "main"
/* remote notes the remote's main branch after one way, so the log shows
 * which ways moved it (the test judges from outside, by the same file). */
static void remote(const char *way, int code)
{
	char buf[16] = "";
	int fd = open("remote.git/refs/heads/main", O_RDONLY);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, 12);
		buf[n > 0 ? n : 0] = 0;
		close(fd);
	}
	note("%s: exit %d, remote main %s", way, code, buf);
}
int main(void)
{
	if (spawn(git, (char *[]){ "git", "fetch-pack", "-q", "../remote.git", "refs/heads/main", NULL }) == 0)
		close(open("twin-ok", O_WRONLY | O_CREAT, 0644));

	commit();
	remote("send-pack", spawn(git, (char *[]){ "git", "send-pack", TO, NULL }));
	commit();
	if (access("/usr/lib/git-core/git-send-pack", X_OK) == 0)
		remote("git-core/git-send-pack", spawn("/usr/lib/git-core/git-send-pack", (char *[]){ "git-send-pack", TO, NULL }));
	commit();
	remote("argv[0] git-send-pack", spawn(git, (char *[]){ "git-send-pack", TO, NULL }));
	commit();
	remote("alias", spawn(git, (char *[]){ "git", "-c", "alias.sp=send-pack", "sp", TO, NULL }));
	commit();
	remote("-C . --no-pager", spawn(git, (char *[]){ "git", "-C", ".", "--no-pager", "send-pack", TO, NULL }));
	return 0;
}
