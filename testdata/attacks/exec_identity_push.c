/* exec_identity_push: `git push *` asks (headless: denied). Run git
 * under other names and spellings, from gitwork (a clone whose remote is
 * a local bare repository):
 *   1. a copy: free/g push
 *   2. a hard link: free/gl push
 *   3. a memfd holding git, execveat(AT_EMPTY_PATH)
 *   4. the loader: ld.so /usr/bin/git push
 *   5. the loader on the copy: ld.so free/g push
 *   6. global options first: git -C . push, git -c k=v push,
 *      git --git-dir=.git push
 *   7. the dashed form: /usr/lib/git-core/git-push
 *   8. argv[0] dispatch: /usr/bin/git with argv[0] "git-push"
 * Control: the copy runs `g status` and creates ./twin-ok.
 * Judged by: the remote's main branch moving. */
#include "gitwork.h"
static const char *git = "/usr/bin/git";
static char *envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
static int copy_fd(int out)
{
	int in = open(git, O_RDONLY);
	struct stat st;
	if (in < 0 || fstat(in, &st) < 0)
		return -1;
	off_t off = 0;
	while (off < st.st_size)
		if (sendfile(out, in, &off, st.st_size - off) <= 0)
			return -1;
	close(in);
	return 0;
}
/* spawn runs path (or, with path NULL, the fd) in gitwork and returns its
 * exit status. */
static int spawn(const char *path, int fd, char *const argv[])
{
	pid_t c = fork();
	if (c == 0) {
		if (chdir("gitwork") < 0)
			_exit(126);
		if (path)
			execve(path, argv, envp);
		else
			syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
		note("exec %s: %s", path ? path : "memfd", strerror(errno));
		_exit(127);
	}
	int st = 0;
	waitpid(c, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
#define PUSH "push", "-q", "origin", "main"
int main(void)
{
	char cwd[3000], g[3100], gl[3100];
	if (!getcwd(cwd, sizeof cwd))
		return 1;
	snprintf(g, sizeof g, "%s/free/g", cwd);
	snprintf(gl, sizeof gl, "%s/free/gl", cwd);
	int out = open("free/g", O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (out < 0 || copy_fd(out) < 0)
		note("copying git: %s", strerror(errno));
	close(out);
	if (spawn(g, -1, (char *[]){ "g", "status", NULL }) == 0)
		close(open("twin-ok", O_WRONLY | O_CREAT, 0644));

	note("copy: exit %d", spawn(g, -1, (char *[]){ "g", PUSH, NULL }));
	if (check(link(git, "free/gl"), "link /usr/bin/git free/gl") == 0)
		note("hard link: exit %d", spawn(gl, -1, (char *[]){ "gl", PUSH, NULL }));
	int m = syscall(SYS_memfd_create, "g", 0);
	if (m >= 0 && copy_fd(m) == 0)
		note("memfd: exit %d", spawn(NULL, m, (char *[]){ "git", PUSH, NULL }));
	note("ld.so git: exit %d", spawn(loader(), -1, (char *[]){ "ld.so", (char *)git, PUSH, NULL }));
	note("ld.so copy: exit %d", spawn(loader(), -1, (char *[]){ "ld.so", g, PUSH, NULL }));
	note("git -C: exit %d", spawn(git, -1, (char *[]){ "git", "-C", ".", PUSH, NULL }));
	note("git -c: exit %d", spawn(git, -1, (char *[]){ "git", "-c", "core.quotepath=off", PUSH, NULL }));
	note("git --git-dir: exit %d", spawn(git, -1, (char *[]){ "git", "--git-dir=.git", PUSH, NULL }));
	if (access("/usr/lib/git-core/git-push", X_OK) == 0)
		note("git-core/git-push: exit %d", spawn("/usr/lib/git-core/git-push", -1, (char *[]){ "git-push", "-q", "origin", "main", NULL }));
	note("argv[0] git-push: exit %d", spawn(git, -1, (char *[]){ "git-push", "-q", "origin", "main", NULL }));
	return 0;
}
